// bench/gpu-profile.ts on the null runtime (bench/null-runtime.ts: the GPU path's host code, no
// GPU): a profiled training step of bench:train's CNN names its kernels, GEMMs and DNN calls with
// their counts, brackets every call with two events, and puts the runtime back on dispose.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { tidy } from '../../src/index.ts';
import { nullDevice } from '../../bench/null-runtime.ts';
import { cnnWorkload } from '../../bench/train-models.ts';
import { profileDevice } from '../../bench/gpu-profile.ts';

test("a profiled step of the CNN: every call named once per launch, the runtime's methods restored", () => {
  const dev = nullDevice();
  const w = cnnWorkload(dev, 8);
  try {
    tidy(() => w.step().dispose());
    const rt = dev.runtime as unknown as Record<string, unknown>;
    const launch = rt.launch;
    let events = 0;
    const create = rt.eventCreate as (t?: boolean) => unknown;
    rt.eventCreate = (t?: boolean) => {
      events++;
      return create(t);
    };
    const prof = profileDevice(dev);
    assert.is.not(rt.launch, launch, 'launch is wrapped while profiling');
    prof.start();
    tidy(() => w.step().dispose());
    const rows = prof.stop();
    const calls = rows.reduce((a, r) => a + r.calls, 0);
    assert.ok(rows.length > 5, `${rows.length} names`);
    assert.ok(events >= 2 * calls - 2, `two events a call (${events} events, ${calls} calls)`);
    assert.ok(!rows.some((r) => r.name === 'kernel (unnamed)'), 'every kernel found by name');
    assert.ok(
      rows.some((r) => r.name.includes('convForward')),
      'the convolutions',
    );
    assert.ok(
      rows.some((r) => /gemm f32 m\d+ n\d+ k\d+/.test(r.name)),
      'the GEMMs with their shapes',
    );
    assert.ok(
      rows.every((r) => r.ms === 0 && r.calls > 0),
      'the null runtime times nothing',
    );
    // a second profile of the same step sees the same calls
    prof.start();
    tidy(() => w.step().dispose());
    const again = prof.stop();
    assert.is(
      again.reduce((a, r) => a + r.calls, 0),
      calls,
    );
    prof.dispose();
    assert.is(rt.launch, launch, 'launch restored');
    rt.eventCreate = create;
  } finally {
    w.dispose();
  }
});

test.run();
