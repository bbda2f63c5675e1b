// Conformance 1: every function we declare through koffi exists in the ROCm 6.4 headers with the
// same parameter and return types after macro expansion, and koffi reads each of its types
// with the size and class C gives it. Aliases are checked for size, class and signedness.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { objectMacros, protoCheckSource } from '../../scripts/abi/cgen.ts';
import { rocmRoot, runInRoot, writeInRoot } from '../../scripts/abi/root.ts';
import { C_FLAGS, C_PRELUDE } from '../../scripts/abi/tables.ts';

test('declared prototypes match the ROCm 6.4 headers', () => {
  const root = rocmRoot();
  const gen = protoCheckSource();
  writeInRoot(root, '/tmp/rocm-tensor-abi/protos.c', gen.source);
  const r = runInRoot(root, ['clang-21', ...C_FLAGS, '-fsyntax-only', '/tmp/rocm-tensor-abi/protos.c']);
  assert.not.ok(r.timedOut, 'clang timed out');

  const failures = new Map<string, string[]>();
  const stray: string[] = [];
  for (const line of r.stderr.split('\n')) {
    const m = /protos\.c:(\d+):\d+: error: (.*)$/.exec(line);
    if (m) {
      const label = gen.lines[Number(m[1]) - 1];
      if (!label) {
        stray.push(line);
        continue;
      }
      const list = failures.get(label.label) ?? [];
      list.push(m[2]!);
      failures.set(label.label, list);
    } else if (/error:/.test(line)) stray.push(line);
  }
  const report = [...failures].map(([k, v]) => `  ${k}: ${v.join(' | ')}`).join('\n');
  const fnFail = [...failures.keys()].filter((k) => !k.includes(':') && !k.startsWith('alias ')).length;
  console.log(
    `prototypes: ${gen.counts.functions} functions, ${gen.counts.params} parameter/return types, ` +
      `${gen.counts.aliases} aliases checked against the ROCm 6.4 headers; ${failures.size} mismatches (${fnFail} functions)`,
  );
  assert.is(stray.length, 0, `errors outside the generated checks (header trouble?):\n${stray.join('\n')}`);
  assert.is(failures.size, 0, `mismatches:\n${report}`);
  assert.is(r.status, 0, r.stderr.slice(-2000));
  assert.ok(gen.counts.functions >= 60, `only ${gen.counts.functions} functions declared`);
});

test('no bound symbol is silently renamed by a header macro', () => {
  const root = rocmRoot();
  const gen = protoCheckSource();
  writeInRoot(root, '/tmp/rocm-tensor-abi/macros.c', C_PRELUDE);
  const r = runInRoot(root, ['clang-21', ...C_FLAGS, '-E', '-dM', '/tmp/rocm-tensor-abi/macros.c']);
  assert.is(r.status, 0, r.stderr.slice(-2000));
  const macros = objectMacros(r.stdout);
  assert.ok(macros.has('hipGetDeviceProperties'), 'expected ROCm 6 headers to #define hipGetDeviceProperties');
  const problems: string[] = [];
  for (const b of gen.bound) {
    const target = macros.get(b.symbol);
    // a plain name bound on purpose (checkAs) must really be remapped by the header, else the
    // note is stale; any other macro'd name means koffi would bind a different ABI than C code
    if (target !== undefined && !b.checkAs)
      problems.push(`${b.symbol} is #defined to ${target}: bind that symbol instead`);
    if (b.checkAs && target === undefined)
      problems.push(`${b.symbol} is marked checkAs ${b.checkAs} but the header does not remap it`);
  }
  console.log(
    `macro renames: ${gen.bound.length} bound symbols checked, ${gen.bound.filter((b) => b.checkAs).length} deliberate legacy binding(s)`,
  );
  assert.equal(problems, []);
});

test.run();
