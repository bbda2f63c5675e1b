// Builds dist/ for publishing: one ESM bundle for the library and one for the CLI (plain node
// runs them, no tsx), and .d.ts types emitted by tsc. Native deps stay external.
import { build } from 'esbuild';
import { execFileSync } from 'node:child_process';
import { readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';

const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8'));
const external = Object.keys(pkg.dependencies ?? {});
rmSync('dist', { recursive: true, force: true });
const common = { bundle: true, platform: 'node', format: 'esm', target: 'node20', external, sourcemap: true, logLevel: 'warning' };
await build({ ...common, entryPoints: ['src/index.ts'], outfile: 'dist/index.js' });
await build({ ...common, entryPoints: ['src/cli/main.ts'], outfile: 'dist/cli.js', banner: { js: '#!/usr/bin/env node' } });
// the source's own shebang is dropped by esbuild in favour of the banner
const cli = readFileSync('dist/cli.js', 'utf8').replace(/^#!.*\n(#!.*\n)/, '$1');
writeFileSync('dist/cli.js', cli);
execFileSync(process.execPath, ['node_modules/typescript/bin/tsc', '-p', 'tsconfig.dist.json'], { stdio: 'inherit' });
// tsc keeps the sources' .ts import specifiers in declarations; consumers resolve .js
for (const f of readdirSync('dist', { recursive: true })) {
  if (!String(f).endsWith('.d.ts')) continue;
  const p = `dist/${f}`;
  writeFileSync(p, readFileSync(p, 'utf8').replace(/((?:from |import\()['"]\.{1,2}\/[^'"]*?)\.ts(['"])/g, '$1.js$2'));
}
console.log('dist/ built');
