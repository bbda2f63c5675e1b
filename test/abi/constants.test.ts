// Conformance 2: every enum value and macro the TypeScript uses, and every struct offset and size
// it reads, equals what a C program compiled against the ROCm 6.4 headers prints.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { valueItems, valueProgram } from '../../scripts/abi/cgen.ts';
import { rocmRoot, runInRoot, writeInRoot } from '../../scripts/abi/root.ts';
import { C_FLAGS } from '../../scripts/abi/tables.ts';

test('enum values, constants, struct offsets and sizes match the headers', () => {
  const root = rocmRoot();
  const items = valueItems();
  writeInRoot(root, '/tmp/rocm-tensor-abi/values.c', valueProgram(items));
  const cc = runInRoot(root, [
    'clang-21',
    ...C_FLAGS,
    '/tmp/rocm-tensor-abi/values.c',
    '-o',
    '/tmp/rocm-tensor-abi/values',
  ]);
  // an unknown name is a compile error naming it: show the compiler's words
  assert.is(
    cc.status,
    0,
    `values.c did not compile:\n${cc.stderr
      .split('\n')
      .filter((l) => /error/.test(l))
      .join('\n')}`,
  );
  const run = runInRoot(root, ['/tmp/rocm-tensor-abi/values'], 30_000);
  assert.is(run.status, 0, run.stderr);
  const got = new Map(
    run.stdout
      .trim()
      .split('\n')
      .map((l) => {
        const [k, v] = l.split('\t');
        return [k!, Number(v)] as const;
      }),
  );
  const bad: string[] = [];
  for (const it of items) {
    const v = got.get(it.key);
    if (v !== it.expected) bad.push(`${it.key}: TypeScript ${it.expected}, header ${v}`);
  }
  const n = (p: string) => items.filter((i) => i.key.startsWith(p)).length;
  console.log(
    `values: ${n('const ')} enum values/constants, ${n('offsetof ')} struct offsets, ${n('sizeof ')} struct sizes; ${bad.length} mismatches`,
  );
  assert.equal(bad, []);
});

test.run();
