// The published package: `npm pack` gives a tarball that installs into a scratch folder, with
// types, and imports and runs there as a user of the runtime running this test would use it:
// Node: `npm install`, plain node (no tsx) imports it, `node dist/cli.js info`;
// Bun: `bun add`, `bun use.ts` imports it from TypeScript, `bunx --bun rocm-tensor info`.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, writeFileSync, existsSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runtime } from '../runtime.ts';

const root = new URL('../..', import.meta.url).pathname;
const sh = (cmd: string, args: string[], cwd: string) => execFileSync(cmd, args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], timeout: 240_000 });

const USE_TS = `import { Tensor, type DType } from 'rocm-tensor';
const dtype: DType = 'f32';
const t = Tensor.from([[1, 2], [3, 4]], { dtype }).matmul(Tensor.eye(2));
console.log(JSON.stringify(await t.toNested()));
`;

test(`npm pack -> install in a scratch folder -> ${runtime} imports it and runs an op, and the CLI`, () => {
  const dir = mkdtempSync(join(tmpdir(), 'rocm-tensor-pack-'));
  try {
    sh('npm', ['pack', '--pack-destination', dir, '--silent'], root);
    const tgz = readdirSync(dir).find((f) => f.endsWith('.tgz'));
    assert.ok(tgz, 'a tarball');
    writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: 'scratch', private: true, type: 'module' }));
    if (runtime === 'bun') sh(process.execPath, ['add', '--no-summary', `./${tgz}`], dir);
    else sh('npm', ['install', '--no-audit', '--no-fund', '--prefer-offline', `./${tgz}`], dir);
    const pkgDir = join(dir, 'node_modules', 'rocm-tensor');
    assert.ok(existsSync(join(pkgDir, 'dist', 'index.d.ts')), 'types shipped');
    assert.ok(existsSync(join(pkgDir, 'kernels', 'manifest.json')) || !existsSync(join(root, 'kernels', 'manifest.json')), 'kernels shipped');
    let out: string, info: string;
    if (runtime === 'bun') {
      writeFileSync(join(dir, 'use.ts'), USE_TS);
      out = sh(process.execPath, ['use.ts'], dir);
      // --bun: the CLI's `#!/usr/bin/env node` would otherwise send bunx to node where present
      info = sh(process.execPath, ['x', '--bun', 'rocm-tensor', 'info'], dir);
    } else {
      out = sh(process.execPath, ['-e', `import('rocm-tensor').then(async (m) => {
        const t = m.Tensor.from([[1, 2], [3, 4]]).matmul(m.Tensor.eye(2));
        console.log(JSON.stringify(await t.toNested()));
      })`], dir);
      info = sh(process.execPath, [join(pkgDir, 'dist', 'cli.js'), 'info'], dir);
    }
    assert.is(out.trim(), '[[1,2],[3,4]]');
    assert.match(info, /chosen device/);
    assert.match(info, runtime === 'bun' ? /runtime: Bun \d/ : /runtime: Node\.js v\d/, 'the CLI ran under this runtime');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test.run();
