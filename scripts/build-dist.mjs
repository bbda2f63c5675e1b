// Builds dist/ for publishing (npm run build, and prepack before npm pack / npm publish). Plain
// node runs the output, no tsx. Everything here logs to stderr: stdout belongs to npm (npm pack
// --json prints its JSON there).
//   dist/index.js    the library, ESM
//   dist/cli.js      the command line, ESM; it shares the library's code with index.js through
//                    dist/chunks/ (one esbuild build with code splitting) instead of a copy
//   dist/index.cjs   the library, one CommonJS bundle, for require('rocm-tensor')
//   dist/**/*.d.ts   tsc's declarations of what index.d.ts reaches (import), and the same as
//   dist/**/*.d.cts  .d.cts (require); dist/disposable.d.ts declares Symbol.dispose and
//                    Symbol.asyncDispose, so a strict consumer needs neither @types/node nor
//                    lib esnext.disposable
// Runtime dependencies stay external. No source maps ship.
import { build } from 'esbuild';
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';

const root = new URL('..', import.meta.url).pathname;
process.chdir(root);
const pkg = JSON.parse(readFileSync('package.json', 'utf8'));
const external = Object.keys(pkg.dependencies ?? {});
rmSync('dist', { recursive: true, force: true });

const common = {
  bundle: true,
  platform: 'node',
  target: 'node20',
  external,
  logLevel: 'warning',
  legalComments: 'none',
};
// ESM: the library and the CLI as two entry points; what both use goes to a shared chunk.
// The CLI keeps its source's #!/usr/bin/env node line.
await build({
  ...common,
  format: 'esm',
  splitting: true,
  outdir: 'dist',
  chunkNames: 'chunks/[name]-[hash]',
  entryPoints: { index: 'src/index.ts', cli: 'src/cli/main.ts' },
});
// CommonJS: import.meta.url (kernels.ts finds kernels/ by walking up from its own file) becomes
// the bundle's own file URL
await build({
  ...common,
  format: 'cjs',
  entryPoints: ['src/index.ts'],
  outfile: 'dist/index.cjs',
  define: { 'import.meta.url': '__rocm_tensor_file_url' },
  banner: { js: "'use strict';\nconst __rocm_tensor_file_url = require('node:url').pathToFileURL(__filename).href;" },
});

// declarations: tsc writes them to a scratch folder; only what index.d.ts reaches ships
const scratch = mkdtempSync(join(tmpdir(), 'rocm-tensor-dts-'));
try {
  // tsc prints its diagnostics on stdout: send them to stderr
  execFileSync(process.execPath, ['node_modules/typescript/bin/tsc', '-p', 'tsconfig.dist.json', '--outDir', scratch], {
    stdio: ['ignore', 2, 2],
  });
  const specifiers = /((?:from |import\()\s*['"])(\.{1,2}\/[^'"]*?)(?:\.ts|\.js)?(['"])/g;
  // a .d.cts is a CommonJS module: a dependency whose types are ES modules only (koffi) can be
  // imported there, for types, with resolution-mode 'import' (TypeScript 5.3+)
  const esmTyped = (spec) => {
    if (spec.startsWith('node:')) return false;
    const name = spec
      .split('/')
      .slice(0, spec.startsWith('@') ? 2 : 1)
      .join('/');
    return JSON.parse(readFileSync(join('node_modules', name, 'package.json'), 'utf8')).type === 'module';
  };
  const requireTypes = (text, file) =>
    text
      .replace(/^import (type )?\{([^}]*)\} from '([^.'][^']*)';$/gm, (line, _t, names, spec) => {
        if (!esmTyped(spec)) return line;
        return `import type {${names.replace(/\btype /g, '')}} from '${spec}' with { 'resolution-mode': 'import' };`;
      })
      .replace(/\bimport\((['"])([^.'"][^'"]*)\1\)/g, (m, _q, spec) => {
        if (!esmTyped(spec)) return m;
        throw new Error(
          `build-dist: ${file} has an inline import('${spec}') type; the .d.cts needs it with resolution-mode 'import'`,
        );
      });
  const seen = new Set();
  const visit = (file) => {
    if (seen.has(file)) return;
    seen.add(file);
    const text = readFileSync(join(scratch, file), 'utf8');
    for (const m of text.matchAll(specifiers)) visit(join(dirname(file), `${m[2]}.d.ts`));
  };
  visit('index.d.ts');
  for (const file of seen) {
    const text = readFileSync(join(scratch, file), 'utf8');
    const out = join('dist', file);
    mkdirSync(dirname(out), { recursive: true });
    const header = file === 'index.d.ts' ? '/// <reference path="./disposable.d.ts" />\n' : '';
    // tsc keeps the sources' .ts specifiers; consumers resolve .js (import) and .cjs (require)
    writeFileSync(out, header + text.replace(specifiers, '$1$2.js$3'));
    writeFileSync(
      out.replace(/\.d\.ts$/, '.d.cts'),
      header + requireTypes(text.replace(specifiers, '$1$2.cjs$3'), file),
    );
  }
  writeFileSync(
    'dist/disposable.d.ts',
    [
      '// Symbol.dispose and Symbol.asyncDispose (Node 20 and Bun have both), for consumers whose lib lacks',
      "// esnext.disposable; the same declarations as TypeScript's lib and @types/node, with which they merge.",
      'interface SymbolConstructor {',
      '  readonly dispose: unique symbol;',
      '  readonly asyncDispose: unique symbol;',
      '}',
      '',
    ].join('\n'),
  );
  console.error(`dist/ built (${seen.size} declaration files)`);
} finally {
  rmSync(scratch, { recursive: true, force: true });
}
