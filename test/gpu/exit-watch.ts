// Preloaded by test/gpu/exit-watch.sh (node --import tsx --import ./test/gpu/exit-watch.ts FILE):
// says when the JavaScript side of a test process is done, to tell a process held alive by the
// event loop (an 'active resources' line keeps coming, naming what holds it) from one stuck after
// JavaScript ended (the 'exit' line was printed: native teardown, e.g. the GPU driver waiting for
// a kernel) or one still running its tests. Lines go to stderr, prefixed [exit-watch].
const t0 = performance.now();
const at = (): string => `${((performance.now() - t0) / 1000).toFixed(1)} s`;
const say = (what: string): void => {
  process.stderr.write(`[exit-watch] ${at()}: ${what}\n`);
};

process.on('beforeExit', () => say('event loop empty (beforeExit)'));
process.on('exit', (code) =>
  say(`exit event, code ${code}: JavaScript is done; still alive after this means native teardown`),
);
// unref'd: it never holds the loop itself, and runs only while something else does
setInterval(() => say(`active resources: ${process.getActiveResourcesInfo().join(', ') || 'none'}`), 10_000).unref();
