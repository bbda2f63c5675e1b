// `npm run bench:serve -- --smoke`: the server, the load generator and the offline baseline each
// in a process of their own, on a tiny CPU model. The report has every field, its counts add up
// (every request sent ended one way; every completed one produced the max_tokens it asked for,
// as usage says), and the ratios are the figures divided. Also the bench's own arithmetic.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { mulberry32, parseList, parseRange, quantiles } from '../../bench/serve-stats.ts';
import { throwsWith } from '../helpers.ts';

const root = mkdtempSync(join(tmpdir(), 'rocm-tensor-bench-serve-'));
test.after(() => rmSync(root, { recursive: true, force: true }));

const BENCH = fileURLToPath(new URL('../../bench/serve.ts', import.meta.url));
const bun = typeof (process.versions as Record<string, string | undefined>).bun === 'string';

test('quantiles, ranges and lists', () => {
  const xs = Array.from({ length: 100 }, (_, i) => 100 - i);
  const q = quantiles(xs);
  assert.equal([q.n, q.p50, q.p99, q.mean], [100, 50, 99, 50.5]);
  assert.equal(quantiles([]), { n: 0, p50: null, p99: null, mean: null });
  assert.equal(quantiles([7]), { n: 1, p50: 7, p99: 7, mean: 7 });
  assert.equal(parseRange('--prompt-len', '128:2048'), [128, 2048]);
  assert.equal(parseRange('--prompt-len', '64'), [64, 64]);
  throwsWith(
    () => parseRange('--prompt-len', '9:3'),
    Error,
    "--prompt-len must be LO:HI (integers, 1 <= LO <= HI) or one integer, got '9:3'",
  );
  assert.equal(parseList('--rates', '0.5,4', false), [0.5, 4]);
  assert.equal(parseList('--rates', '', false), []);
  throwsWith(
    () => parseList('--concurrency', '1,2.5', true),
    Error,
    '--concurrency must be a comma-separated list of integers > 0',
  );
  const a = mulberry32(7),
    b = mulberry32(7);
  const draws = Array.from({ length: 1000 }, () => a());
  assert.equal(
    draws.slice(0, 5),
    Array.from({ length: 5 }, () => b()),
  );
  assert.ok(draws.every((x) => x >= 0 && x < 1));
  assert.ok(Math.abs(draws.reduce((s, x) => s + x, 0) / draws.length - 0.5) < 0.05);
});

test('--smoke: every field, and the counts add up', () => {
  const out = join(root, 'serve.json');
  const args = ['--smoke', '--json', out];
  const r = spawnSync(process.execPath, bun ? [BENCH, ...args] : ['--import', 'tsx', BENCH, ...args], {
    encoding: 'utf8',
    env: { ...process.env, ROCM_TENSOR_DEVICE: 'cpu' },
    timeout: 120_000,
  });
  assert.is(r.status, 0, `${r.stdout}\n${r.stderr}`);
  assert.ok(/concurrency 4/.test(r.stdout) && /ITL p50\/p99 ms/.test(r.stdout), r.stdout);
  const j = JSON.parse(readFileSync(out, 'utf8'));
  assert.is(j.bench, 'serve');
  assert.is(j.gpu, 'cpu');
  assert.is(j.dtype, 'f32');
  assert.equal(
    j.loads.map((l: { kind: string; value: number }) => `${l.kind} ${l.value}`),
    ['concurrency 1', 'concurrency 4', 'rate 40'],
  );
  assert.equal(j.settings.promptLen, [8, 24]);
  assert.equal(j.settings.outputLen, [4, 12]);
  assert.ok(j.server.maxBatch === 4 && j.server.kvBlocks > 0 && j.server.blockSize === 16, JSON.stringify(j.server));
  for (const l of j.loads) {
    const what = `${l.kind} ${l.value}: ${JSON.stringify(l)}`;
    assert.is(l.sent, 6, what);
    assert.is(l.completed + l.aborted + l.failed, l.sent, what);
    assert.is(l.completed, 6, what);
    assert.is(l.failed, 0, what);
    assert.is(l.lengthMismatches, 0, what);
    assert.is(l.outputTokens, l.outputTokensFromUsage + l.outputTokensFromChunks, what);
    assert.ok(l.outputTokens >= 6 * 4 && l.outputTokens <= 6 * 12, what);
    assert.ok(l.promptTokens >= 6 * 8 && l.promptTokens <= 6 * 24, what);
    assert.ok(l.seconds > 0, what);
    assert.ok(Math.abs(l.outputTokensPerS - l.outputTokens / l.seconds) < 1e-9 * l.outputTokensPerS + 1e-9, what);
    assert.ok(Math.abs(l.requestsPerS - l.completed / l.seconds) < 1e-9 * l.requestsPerS + 1e-9, what);
    // a first token for every request, and at most one gap per further token
    assert.is(l.ttftMs.n, l.completed, what);
    assert.ok(l.itlMs.n > 0 && l.itlMs.n <= l.outputTokens - l.completed, what);
    assert.ok(l.ttftMs.p50 > 0 && l.ttftMs.p99 >= l.ttftMs.p50, what);
    // chunks that reach the client in one read are 0 ms apart: on a loaded machine over half may
    assert.ok(l.itlMs.p50 >= 0 && l.itlMs.p99 >= l.itlMs.p50 && l.itlMs.p99 > 0, what);
    assert.ok(l.kv.peakUsed >= 1 && l.kv.peakUsed <= l.kv.blocks && l.kv.blocks === j.server.kvBlocks, what);
    assert.ok(Math.abs(l.vsOffline - l.outputTokensPerS / j.offline.decodeTokensPerS) < 1e-9, what);
    assert.ok(Math.abs(l.itlP99VsStep - l.itlMs.p99 / j.offline.stepMs) < 1e-9, what);
  }
  // concurrency 1 never holds more than one request's blocks (prompt and output fit in 3)
  assert.ok(j.loads[0].kv.peakUsed <= 3, JSON.stringify(j.loads[0].kv));
  const o = j.offline;
  assert.equal([o.batch, o.promptLen, o.newTokens], [4, 16, 8]);
  assert.ok(o.decodeTokensPerS > 0 && o.stepMs > 0 && o.tokensPerS > 0 && o.prefillSeconds > 0, JSON.stringify(o));
  assert.equal(Object.keys(j.ratios), ['c64OverOffline', 'c64ItlP99OverStep', 'c256OverOffline']);
  assert.ok(j.wallSeconds > 0);
});

test.run();
