// Puts the binary of the runtime running this (node or bun), koffi and a bundle of
// scripts/abi/nodevice-probe.ts into the ROCm root and runs it there with a time limit: the host
// glibc is too old for sid's libamdhip64. Under Bun this checks koffi's N-API module in Bun
// against the real HIP runtime.
import { cpSync, existsSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { buildSync } from 'esbuild';
import { runInRoot, writeInRoot, type RootRun } from './root.ts';

const repo = new URL('../..', import.meta.url).pathname;
const inner = '/tmp/rocm-tensor-abi/probe';

export function runNoDeviceProbe(root: string, timeoutMs = 60_000): RootRun {
  const dir = join(root, inner);
  const name = process.versions.bun ? 'bun' : 'node';
  const exe = join(dir, name);
  if (!existsSync(exe) || statSync(exe).size !== statSync(process.execPath).size) cpSync(process.execPath, exe);
  for (const pkg of ['koffi', '@koromix/koffi-linux-x64']) {
    cpSync(join(repo, 'node_modules', pkg), join(dir, 'node_modules', pkg), { recursive: true, dereference: true });
  }
  const bundle = buildSync({
    entryPoints: [join(repo, 'scripts/abi/nodevice-probe.ts')],
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    external: ['koffi'],
    write: false,
    logLevel: 'silent',
  });
  writeInRoot(root, `${inner}/probe.mjs`, bundle.outputFiles[0]!.contents);
  return runInRoot(root, [`${inner}/${name}`, `${inner}/probe.mjs`], timeoutMs, { proc: name === 'bun' });
}
