// The soak bench's verdict: it passes only when live tensors and device bytes in use never move
// after the warm-up and the idle cache stays under its limit; too few samples never pass.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { soakVerdict, type SoakSample } from '../../bench/soak-verdict.ts';

const MiB = 2 ** 20;
function sample(seconds: number, over: Partial<SoakSample> = {}): SoakSample {
  return {
    seconds,
    round: seconds,
    tokens: seconds * 10,
    liveTensors: 101,
    inUse: 2000 * MiB,
    reserved: 3000 * MiB,
    cached: 1000 * MiB,
    idle: 800 * MiB,
    peakReserved: 3100 * MiB,
    deviceAllocations: 10,
    deviceFrees: 2,
    cacheReleases: 2,
    rss: 500 * MiB,
    heapUsed: 50 * MiB,
    arrayBuffers: 5 * MiB,
    hostCache: 0,
    ...over,
  };
}
const run = (edit: (i: number) => Partial<SoakSample> = () => ({})) =>
  Array.from({ length: 10 }, (_, i) => sample(i * 10, edit(i)));

test('flat samples under the limit pass; the warm-up is left out', () => {
  const v = soakVerdict(
    run((i) => (i < 2 ? { liveTensors: 90 + i, inUse: i * MiB } : {})),
    20,
    1024 * MiB,
  );
  assert.ok(v.pass, v.lines.join('\n'));
  assert.ok(v.lines.some((l) => l.startsWith('PASS live tensors flat: 101')));
});

test('one more live tensor, bytes in use that move, or idle past the limit fail', () => {
  const cases: [string, Partial<SoakSample>][] = [
    ['live tensors', { liveTensors: 102 }],
    ['device bytes held by tensors', { inUse: 2001 * MiB }],
    ['idle cache under the limit', { idle: 1025 * MiB }],
  ];
  for (const [what, over] of cases) {
    const v = soakVerdict(
      run((i) => (i === 9 ? over : {})),
      20,
      1024 * MiB,
    );
    assert.not.ok(v.pass, what);
    assert.ok(
      v.lines.some((l) => l.startsWith('FAIL') && l.includes(what)),
      v.lines.join('\n'),
    );
  }
});

test('the CPU (no device figures) is judged on live tensors; too few samples fail', () => {
  const cpu = run(() => ({ inUse: null, reserved: null, cached: null, idle: null, peakReserved: null }));
  assert.ok(soakVerdict(cpu, 20, null).pass);
  assert.not.ok(soakVerdict(cpu.slice(0, 4), 20, null).pass);
});

test.run();
