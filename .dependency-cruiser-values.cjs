// The second pass of npm run deps: the no-circular rule of .dependency-cruiser.cjs on the graph the
// modules load, that is after compilation, where type-only imports (and imports used only as types)
// are gone. The first pass sees type-only imports (the layer rules need them) and skips cycles that
// go through one, but its search stops at the first cycle it finds from an import: when that one
// goes through a type-only import, a cycle of value imports from the same import goes unreported.
// Here every cycle found is one of value imports.
const base = require('./.dependency-cruiser.cjs');

/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: base.forbidden.filter((rule) => rule.name === 'no-circular'),
  options: { ...base.options, tsPreCompilationDeps: false },
};
