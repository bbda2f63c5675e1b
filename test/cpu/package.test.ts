// The published package: `npm pack` gives a tarball that installs into a scratch folder, with
// types, and imports and runs there as a user of the runtime running this test would use it:
// Node: `npm install --offline` (the dependencies come from npm's cache), plain node (no tsx)
// imports it and requires it, `npx rocm-tensor --version`, `node dist/cli.js info`;
// Bun: `bun add`, `bun use.ts` imports it from TypeScript, `bun use.cjs` requires it,
// `bunx --bun rocm-tensor --version` and `info`.
// Under both: `npm pack --json` prints only JSON on stdout (prepack logs to stderr), no source
// maps ship, the CLI does not carry a copy of the library, and a strict TypeScript consumer
// without @types/node type-checks an ES module and a CommonJS module that import the package.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync, existsSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runtime } from '../runtime.ts';

const root = new URL('../..', import.meta.url).pathname;
const sh = (cmd: string, args: string[], cwd: string) =>
  execFileSync(cmd, args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], timeout: 240_000 });
const version = (JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { version: string }).version;

const USE_TS = `import { Tensor, type DType } from 'rocm-tensor';
const dtype: DType = 'f32';
const t = Tensor.from([[1, 2], [3, 4]], { dtype }).matmul(Tensor.eye(2));
console.log(JSON.stringify(await t.toNested()));
`;

const USE_CJS = `const { Tensor } = require('rocm-tensor');
Tensor.from([[1, 2], [3, 4]]).matmul(Tensor.eye(2)).toNested().then((v) => console.log(JSON.stringify(v)));
`;

// the strict consumer: lib ES2022 alone (no esnext.disposable, no DOM: no console either), no
// @types/node, library files checked too; Node16 resolution, the stricter of the two about
// what a CommonJS file may import
const TSCONFIG = {
  compilerOptions: {
    strict: true,
    target: 'ES2022',
    lib: ['ES2022'],
    module: 'Node16',
    moduleResolution: 'Node16',
    types: [],
    skipLibCheck: false,
    noEmit: true,
  },
  files: ['typed.ts', 'typed-cjs.cts'],
};
const TYPED_TS = `import { Tensor, Device, tidy, TensorError, type DType, type Graph } from 'rocm-tensor';
const dtype: DType = 'bf16';
const t: Tensor = tidy(() => Tensor.from([[1, 2], [3, 4]], { dtype, device: Device.cpu() }).matmul(Tensor.eye(2)));
export const rows: Promise<unknown> = t.toNested();
export const failed = (e: unknown): boolean => e instanceof TensorError;
export const release = (g: Graph<unknown>): void => g[Symbol.dispose]();
`;
const TYPED_CTS = `import rt = require('rocm-tensor');
export const shape: readonly number[] = rt.Tensor.from([[1, 2], [3, 4]]).shape;
`;

interface PackEntry {
  filename: string;
  files: { path: string; size: number }[];
}

test(`npm pack -> install in a scratch folder -> ${runtime} imports and requires it, types check strictly, the CLI runs`, () => {
  const dir = mkdtempSync(join(tmpdir(), 'rocm-tensor-pack-'));
  try {
    // npm pack --json: the lifecycle scripts (prepack builds dist/) must leave stdout to the JSON
    const packed = JSON.parse(sh('npm', ['pack', '--json', '--pack-destination', dir], root)) as PackEntry[];
    assert.is(packed.length, 1);
    const tgz = packed[0]!.filename;
    assert.ok(existsSync(join(dir, tgz)), 'the tarball');
    const files = new Map(packed[0]!.files.map((f) => [f.path, f.size]));
    for (const f of [
      'dist/index.js',
      'dist/index.cjs',
      'dist/index.d.ts',
      'dist/index.d.cts',
      'dist/cli.js',
      'package.json',
    ])
      assert.ok(files.has(f), `${f} packed`);
    assert.equal(
      [...files.keys()].filter((f) => f.endsWith('.map')),
      [],
      'no source maps',
    );
    assert.ok(
      files.get('dist/cli.js')! < 100_000,
      `dist/cli.js is ${files.get('dist/cli.js')} bytes: it should share the library's code, not carry it`,
    );

    writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: 'scratch', private: true, type: 'module' }));
    if (runtime === 'bun') sh(process.execPath, ['add', '--no-summary', `./${tgz}`], dir);
    else sh('npm', ['install', '--offline', '--no-audit', '--no-fund', `./${tgz}`], dir);
    const pkgDir = join(dir, 'node_modules', 'rocm-tensor');
    assert.ok(existsSync(join(pkgDir, 'dist', 'index.d.ts')), 'types shipped');
    assert.ok(
      existsSync(join(pkgDir, 'kernels', 'manifest.json')) || !existsSync(join(root, 'kernels', 'manifest.json')),
      'kernels shipped',
    );
    const meta = JSON.parse(readFileSync(join(pkgDir, 'package.json'), 'utf8')) as Record<string, unknown>;
    for (const k of ['repository', 'homepage', 'bugs', 'keywords']) assert.ok(meta[k], `package.json has ${k}`);
    assert.not.ok('p-limit' in (meta['dependencies'] as Record<string, string>), 'p-limit is a build dependency only');

    writeFileSync(join(dir, 'use.cjs'), USE_CJS);
    let out: string, required: string, info: string, versions: string[];
    if (runtime === 'bun') {
      writeFileSync(join(dir, 'use.ts'), USE_TS);
      out = sh(process.execPath, ['use.ts'], dir);
      required = sh(process.execPath, ['use.cjs'], dir);
      // --bun: the CLI's `#!/usr/bin/env node` would otherwise send bunx to node where present
      info = sh(process.execPath, ['x', '--bun', 'rocm-tensor', 'info'], dir);
      versions = ['--version', '-V'].map((f) => sh(process.execPath, ['x', '--bun', 'rocm-tensor', f], dir));
    } else {
      out = sh(
        process.execPath,
        [
          '--input-type=module',
          '-e',
          `import('rocm-tensor').then(async (m) => {
        const t = m.Tensor.from([[1, 2], [3, 4]]).matmul(m.Tensor.eye(2));
        console.log(JSON.stringify(await t.toNested()));
      })`,
        ],
        dir,
      );
      required = sh(process.execPath, ['use.cjs'], dir);
      info = sh(process.execPath, [join(pkgDir, 'dist', 'cli.js'), 'info'], dir);
      versions = ['--version', '-V'].map((f) => sh('npx', ['rocm-tensor', f], dir));
    }
    assert.is(out.trim(), '[[1,2],[3,4]]', 'ESM import');
    assert.is(required.trim(), '[[1,2],[3,4]]', 'CommonJS require');
    assert.match(info, /chosen device/);
    assert.match(
      info,
      runtime === 'bun' ? /runtime: Bun \d/ : /runtime: Node\.js v\d/,
      'the CLI ran under this runtime',
    );
    assert.equal(
      versions.map((v) => v.trim()),
      [version, version],
      'rocm-tensor --version and -V',
    );

    // the strict consumer; @types/node must not have come in with the dependencies
    assert.not.ok(
      existsSync(join(dir, 'node_modules', '@types', 'node')),
      '@types/node is not installed in the scratch folder',
    );
    writeFileSync(join(dir, 'tsconfig.json'), JSON.stringify(TSCONFIG));
    writeFileSync(join(dir, 'typed.ts'), TYPED_TS);
    writeFileSync(join(dir, 'typed-cjs.cts'), TYPED_CTS);
    try {
      sh(process.execPath, [join(root, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', dir], dir);
    } catch (e) {
      const { stdout, stderr } = e as { stdout?: string; stderr?: string };
      assert.unreachable(`a strict consumer without @types/node does not type-check:\n${stdout ?? ''}${stderr ?? ''}`);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test.run();
