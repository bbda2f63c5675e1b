// The environment variables: one table (src/core/config.ts) declares them, readEnv reads and
// checks them when asked, docs/configuration.md is generated from the table and kept current.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { readFileSync, readdirSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import {
  ENV_VARS,
  ConfigError,
  acceptedValues,
  envVar,
  parseEnv,
  readEnv,
  readLibraryOverride,
  type EnvName,
} from '../../src/core/config.ts';
import { renderConfigDoc, CONFIG_DOC_PATH } from '../../scripts/gen-config-doc.ts';
import { uploadChunkFromEnv, DEFAULT_UPLOAD_CHUNK } from '../../src/runtime/staged-upload.ts';
import { parseByteLimit } from '../../src/runtime/allocator.ts';
import { defaultTimeoutMs } from '../../src/distributed/watchdog.ts';

const root = fileURLToPath(new URL('../..', import.meta.url));
const srcFiles = (dir: string): string[] =>
  readdirSync(dir, { recursive: true, encoding: 'utf8' })
    .filter((f) => f.endsWith('.ts'))
    .map((f) => join(dir, f));
const CONFIG = join(root, 'src', 'core', 'config.ts');

/** runs fn with process.env[name] set to value (or deleted), restoring it after */
function withEnv<T>(name: string, value: string | undefined, fn: () => T): T {
  const old = process.env[name];
  if (value === undefined) delete process.env[name];
  else process.env[name] = value;
  try {
    return fn();
  } finally {
    if (old === undefined) delete process.env[name];
    else process.env[name] = old;
  }
}

const throwsNaming = (fn: () => unknown, name: string, accepted: string): void => {
  assert.throws(
    fn,
    (e: Error) =>
      e instanceof ConfigError && e.variable === name && e.message.includes(name) && e.message.includes(accepted),
    `${name}: a ConfigError naming it and "${accepted}"`,
  );
};

test('docs/configuration.md is what npm run docs:config writes from the table', () => {
  let onDisk = '';
  try {
    onDisk = readFileSync(CONFIG_DOC_PATH, 'utf8');
  } catch {
    /* missing: stale too */
  }
  assert.ok(onDisk === renderConfigDoc(), 'docs/configuration.md is stale: run `npm run docs:config`');
  for (const v of ENV_VARS) assert.ok(onDisk.includes('`' + v.name + '`'), `${v.name} documented`);
});

test('no file of src/ but src/core/config.ts reads a ROCM_TENSOR_ variable from process.env', () => {
  const direct = /process\.env(?:\.ROCM_TENSOR_|\[\s*['"`]ROCM_TENSOR_)/;
  const offenders = srcFiles(join(root, 'src')).filter((f) => f !== CONFIG && direct.test(readFileSync(f, 'utf8')));
  assert.equal(
    offenders.map((f) => relative(root, f)),
    [],
  );
});

test('every ROCM_TENSOR_ variable named in src/ and scripts/ is declared in the table', () => {
  const files = [...srcFiles(join(root, 'src')), ...srcFiles(join(root, 'scripts'))];
  const named = new Set(
    files.flatMap((f) => readFileSync(f, 'utf8').match(/\bROCM_TENSOR_[A-Z0-9_]*[A-Z0-9]\b/g) ?? []),
  );
  const undeclared = [...named].filter((n) => !envVar(n)).sort();
  assert.equal(undeclared, []);
});

test('the table: unique names, a description, a reader and a time for each; config.ts imports nothing', () => {
  const names = ENV_VARS.map((v) => v.name);
  assert.is(new Set(names).size, names.length, 'names are unique');
  for (const v of ENV_VARS) {
    assert.ok(v.description && v.readBy && v.when && v.default, `${v.name} is fully described`);
    if (v.type === 'enum') assert.ok((v.values ?? []).length > 0, `${v.name} lists its values`);
  }
  assert.not.match(readFileSync(CONFIG, 'utf8'), /^\s*import\s/m);
});

test('a bad value is a ConfigError that names the variable and what it accepts', () => {
  const garbage = 'not-a-value!';
  let checked = 0;
  for (const v of ENV_VARS) {
    if (v.type === 'path' || (v.type === 'string' && !('pattern' in v))) continue;
    throwsNaming(() => readEnv(v.name, { [v.name]: garbage }), v.name, acceptedValues(v));
    checked++;
  }
  assert.ok(checked >= 10, `${checked} variables checked`);
  throwsNaming(() => readEnv('ROCM_TENSOR_POISON', { ROCM_TENSOR_POISON: 'true' }), 'ROCM_TENSOR_POISON', '0 or 1');
  throwsNaming(
    () => readEnv('ROCM_TENSOR_CONTIG_BLOCK', { ROCM_TENSOR_CONTIG_BLOCK: '100' }),
    'ROCM_TENSOR_CONTIG_BLOCK',
    '64, 128 or 256',
  );
  throwsNaming(
    () => readEnv('ROCM_TENSOR_SORT_BITONIC_MAX', { ROCM_TENSOR_SORT_BITONIC_MAX: '5000' }),
    'ROCM_TENSOR_SORT_BITONIC_MAX',
    'from 0 to 4096',
  );
  throwsNaming(
    () => readEnv('ROCM_TENSOR_SORT_BITONIC_MAX', { ROCM_TENSOR_SORT_BITONIC_MAX: '1.5' }),
    'ROCM_TENSOR_SORT_BITONIC_MAX',
    'an integer',
  );
  throwsNaming(
    () => readEnv('ROCM_TENSOR_ROW_VECS', { ROCM_TENSOR_ROW_VECS: '3' }),
    'ROCM_TENSOR_ROW_VECS',
    '1, 2, 4, 8, 16 or split',
  );
  throwsNaming(
    () => readEnv('ROCM_TENSOR_UPLOAD_CHUNK', { ROCM_TENSOR_UPLOAD_CHUNK: '2g' }),
    'ROCM_TENSOR_UPLOAD_CHUNK',
    'from 8 to 1g',
  );
  throwsNaming(
    () => readEnv('ROCM_TENSOR_DEVICE', { ROCM_TENSOR_DEVICE: 'tpu:0' }),
    'ROCM_TENSOR_DEVICE',
    'cpu, gpu, rocm[:N] or cuda[:N]',
  );
  throwsNaming(
    () => readEnv('ROCM_TENSOR_DIST_TIMEOUT_MS', { ROCM_TENSOR_DIST_TIMEOUT_MS: '0' }),
    'ROCM_TENSOR_DIST_TIMEOUT_MS',
    'above 0',
  );
  assert.throws(() => parseEnv('ROCM_TENSOR_NOT_DECLARED' as EnvName, '1'), /not a declared variable/);
});

test('valid values read as before; empty or unset reads as undefined', () => {
  const r = <N extends EnvName>(name: N, raw: string) => readEnv(name, { [name]: raw });
  assert.is(r('ROCM_TENSOR_POISON', '1'), true);
  assert.is(r('ROCM_TENSOR_POISON', '0'), false);
  assert.is(r('ROCM_TENSOR_GRID_DEP', '0'), false);
  assert.is(r('ROCM_TENSOR_POISON', ''), undefined);
  assert.is(readEnv('ROCM_TENSOR_POISON', {}), undefined);
  assert.is(r('ROCM_TENSOR_CONTIG_BLOCK', '128'), 128);
  assert.is(r('ROCM_TENSOR_SORT_BITONIC_MAX', '0'), 0);
  assert.is(r('ROCM_TENSOR_SORT_BITONIC_MAX', '4096'), 4096);
  assert.is(r('ROCM_TENSOR_ROW_VECS', 'split'), 'split');
  assert.is(r('ROCM_TENSOR_ROW_VECS', '16'), '16');
  assert.is(r('ROCM_TENSOR_DEVICE', 'rocm:1'), 'rocm:1');
  assert.is(r('ROCM_TENSOR_DEVICE', 'cpu'), 'cpu');
  assert.is(r('ROCM_TENSOR_DIST_TIMEOUT_MS', '2500'), 2500);
  assert.is(r('ROCM_TENSOR_KERNELS', '/some/where'), '/some/where');
  for (const [text, bytes] of [
    ['1000', 1000],
    ['512m', 512 * 2 ** 20],
    ['8g', 8 * 2 ** 30],
    ['4K', 4096],
    ['1.5k', 1536],
    [' 8 GiB ', 8 * 2 ** 30],
    ['64kb', 65536],
  ] as const) {
    assert.is(r('ROCM_TENSOR_MEMORY_LIMIT', text), bytes, text);
  }
  assert.is(parseByteLimit('512m'), 512 * 2 ** 20);
  assert.is(parseByteLimit(undefined), null);
  assert.throws(() => parseByteLimit('lots'), /ROCM_TENSOR_MEMORY_LIMIT="lots": expected a byte count/);
});

test('variables are read when asked, not when the module loaded', () => {
  withEnv('ROCM_TENSOR_UPLOAD_CHUNK', undefined, () => assert.is(uploadChunkFromEnv(), DEFAULT_UPLOAD_CHUNK));
  withEnv('ROCM_TENSOR_UPLOAD_CHUNK', '4k', () => assert.is(uploadChunkFromEnv(), 4096));
  withEnv('ROCM_TENSOR_UPLOAD_CHUNK', '1001', () =>
    assert.is(uploadChunkFromEnv(), 1000, 'rounded down to a multiple of 8'),
  );
  withEnv('ROCM_TENSOR_UPLOAD_CHUNK', 'huge', () =>
    throwsNaming(() => uploadChunkFromEnv(), 'ROCM_TENSOR_UPLOAD_CHUNK', 'a byte count'),
  );
  withEnv('ROCM_TENSOR_DIST_TIMEOUT_MS', '1234', () => assert.is(defaultTimeoutMs(), 1234));
  withEnv('ROCM_TENSOR_DIST_TIMEOUT_MS', undefined, () => assert.is(defaultTimeoutMs(), 300_000));
  withEnv('ROCM_TENSOR_CUDA_LIB', '/x/libcuda.so.1', () =>
    assert.is(readLibraryOverride('ROCM_TENSOR_CUDA_LIB'), '/x/libcuda.so.1'),
  );
  withEnv('ROCM_TENSOR_CUDA_LIB', '', () => assert.is(readLibraryOverride('ROCM_TENSOR_CUDA_LIB'), undefined));
  assert.throws(() => readLibraryOverride('ROCM_TENSOR_POISON'), /not a library path/);
});

test.run();
