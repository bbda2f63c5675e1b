// The import rules of src/ (npm run deps): no import cycles, and each layer imports only itself
// and the layers below it. The layers, bottom first:
//
//   core -> ffi -> runtime -> device -> backends -> ops -> tensor -> io | text | distributed -> nn -> optim -> models -> serve -> cli
//
// io, text and distributed sit side by side and do not import each other; src/index.ts (the
// package's entry) may import every layer but cli, and nothing in src/ imports it.
//
// Type-only imports count as imports for the layers (a type from above ties a layer to the code
// above it just as well), except for the few named in TYPE_EXCEPTIONS. They do not count for
// cycles: a cycle that goes through a type-only import has no effect when the modules load.

/** @typedef {{ from: string, to: string, why: string }} TypeException */

const LAYERS = [
  ['core'],
  ['ffi'],
  ['runtime'],
  ['device'],
  ['backends'],
  ['ops'],
  ['tensor'],
  ['io', 'text', 'distributed'],
  ['nn'],
  ['optim'],
  ['models'],
  ['serve'],
  ['cli'],
];

/**
 * Upward imports that are allowed, type-only, file to file.
 * @type {TypeException[]}
 */
const TYPE_EXCEPTIONS = [
  {
    from: '^src/runtime/device-errors[.]ts$',
    to: '^src/device/device[.]ts$',
    why: 'the record of errors found by kernels is kept per Device (a WeakMap keyed by it) and reached through its runtime and stream',
  },
];

const TYPE_ONLY = ['type-only', 'type-import'];
const folders = (names) => `^src/(${names.join('|')})/`;
const above = (i) => LAYERS.slice(i + 1).flat();
const anyOf = (patterns) => patterns.map((p) => `(${p})`).join('|');

/** @type {import('dependency-cruiser').IForbiddenRuleType[]} */
const forbidden = [
  {
    name: 'no-circular',
    severity: 'error',
    comment: 'an import cycle in src/ (cycles through a type-only import aside)',
    from: { path: '^src/' },
    to: { circular: true, viaOnly: { dependencyTypesNot: TYPE_ONLY } },
  },
  {
    name: 'index-not-imported',
    severity: 'error',
    comment: 'src/index.ts is the public entry: modules inside src/ import the module they need',
    from: { path: '^src/', pathNot: '^src/index[.]ts$' },
    to: { path: '^src/index[.]ts$' },
  },
  {
    name: 'index-not-to-cli',
    severity: 'error',
    comment: 'src/index.ts exports the library; the CLI sits above it',
    from: { path: '^src/index[.]ts$' },
    to: { path: folders(['cli']) },
  },
  {
    name: 'peers-independent',
    severity: 'error',
    comment: 'io, text and distributed do not import each other',
    from: { path: '^src/(io|text|distributed)/' },
    to: { path: '^src/(io|text|distributed)/', pathNot: '^src/$1/' },
  },
];

LAYERS.forEach((layer, i) => {
  const up = above(i);
  if (up.length === 0) return;
  const name = layer.join('-');
  const exceptions = TYPE_EXCEPTIONS.filter((e) => layer.some((f) => e.from.startsWith(`^src/${f}/`)));
  forbidden.push({
    name: `${name}-imports-upward`,
    severity: 'error',
    comment: `${layer.join(', ')} may import only ${layer.length > 1 ? 'themselves' : 'itself'} and the layers below (value imports)`,
    from: { path: folders(layer) },
    to: { path: folders(up), dependencyTypesNot: TYPE_ONLY },
  });
  forbidden.push({
    name: `${name}-imports-upward-types`,
    severity: 'error',
    comment: `${layer.join(', ')} may not import types from the layers above either, but for TYPE_EXCEPTIONS`,
    from: { path: folders(layer), ...(exceptions.length ? { pathNot: anyOf(exceptions.map((e) => e.from)) } : {}) },
    to: { path: folders(up), dependencyTypes: TYPE_ONLY },
  });
  for (const e of exceptions) {
    forbidden.push({
      name: `${name}-imports-upward-types`,
      severity: 'error',
      comment: `named exception (${e.why}): only ${e.to} may be imported upward, and only its types`,
      from: { path: e.from },
      to: { path: folders(up), pathNot: e.to, dependencyTypes: TYPE_ONLY },
    });
  }
});

/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden,
  options: {
    includeOnly: '^src/',
    doNotFollow: { path: 'node_modules' },
    // see `import type` and `import { type X }` as the source writes them (a type-only import is
    // kept in the graph, marked type-only, instead of vanishing as it does after compilation)
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: {
      exportsFields: ['exports'],
      conditionNames: ['import', 'require', 'node', 'default', 'types'],
      extensions: ['.ts', '.js', '.mjs', '.cjs', '.json'],
    },
    reporterOptions: { text: { highlightFocused: true } },
  },
};
