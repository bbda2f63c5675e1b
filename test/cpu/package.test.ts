// The published package: `npm pack` gives a tarball that plain node (no tsx) imports from a
// scratch folder, with types, and whose CLI runs.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, writeFileSync, existsSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const root = new URL('../..', import.meta.url).pathname;
const sh = (cmd: string, args: string[], cwd: string) => execFileSync(cmd, args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], timeout: 240_000 });

test('npm pack -> install in a scratch folder -> node imports it and runs an op', () => {
  const dir = mkdtempSync(join(tmpdir(), 'rocm-tensor-pack-'));
  try {
    sh('npm', ['pack', '--pack-destination', dir, '--silent'], root);
    const tgz = readdirSync(dir).find((f) => f.endsWith('.tgz'));
    assert.ok(tgz, 'a tarball');
    writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: 'scratch', private: true, type: 'module' }));
    sh('npm', ['install', '--no-audit', '--no-fund', '--prefer-offline', `./${tgz}`], dir);
    const pkgDir = join(dir, 'node_modules', 'rocm-tensor');
    assert.ok(existsSync(join(pkgDir, 'dist', 'index.d.ts')), 'types shipped');
    assert.ok(existsSync(join(pkgDir, 'kernels', 'manifest.json')) || !existsSync(join(root, 'kernels', 'manifest.json')), 'kernels shipped');
    const out = sh(process.execPath, ['-e', `import('rocm-tensor').then(async (m) => {
      const t = m.Tensor.from([[1, 2], [3, 4]]).matmul(m.Tensor.eye(2));
      console.log(JSON.stringify(await t.toNested()));
    })`], dir);
    assert.is(out.trim(), '[[1,2],[3,4]]');
    const info = sh(process.execPath, [join(pkgDir, 'dist', 'cli.js'), 'info'], dir);
    assert.match(info, /chosen device/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test.run();
