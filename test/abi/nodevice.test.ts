// Conformance 4: the real libamdhip64 (ROCm 6.4, run inside the sid root because the host glibc
// is older) on this machine without an AMD GPU: hipGetDeviceCount fails with HIP's own
// "no device" error, and rocmDeviceCount() reports 0 with that reason, without crash or hang.
// The probe runs under the runtime running this test: under Bun it checks koffi's N-API module
// in Bun against the real HIP runtime.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { runNoDeviceProbe } from '../../scripts/abi/nodevice.ts';
import { rocmRoot } from '../../scripts/abi/root.ts';
import { runtime } from '../runtime.ts';

interface ProbeOut {
  runtime: string;
  path: string;
  init: number;
  initName: string;
  code: number;
  name: string;
  text: string;
  count: number;
  probe: { count: number; reason: string; code: number | null };
  deviceCount: number;
  openError: string;
}

test('real libamdhip64 reports no device, cleanly', () => {
  const root = rocmRoot();
  const r = runNoDeviceProbe(root, 60_000);
  assert.not.ok(r.timedOut, 'the probe hung (killed after 60 s)');
  assert.is(r.status, 0, `probe exited ${r.status}:\n${r.stderr.slice(-3000)}`);
  const line = r.stdout.trim().split('\n').pop() ?? '';
  const out = JSON.parse(line) as ProbeOut;
  // the probe ran under the runtime running this test (Bun: koffi's N-API module in Bun)
  assert.ok(out.runtime.startsWith(`${runtime} `), `probe ran under ${out.runtime}, this test under ${runtime}`);
  console.log(
    `no-device (${out.runtime}): ${out.path}: hipInit -> ${out.initName} (${out.init}); hipGetDeviceCount -> ${out.name} (${out.code}) "${out.text}"; ` +
      `rocmDeviceCount() = ${out.deviceCount}; reason: ${out.probe.reason}`,
  );
  assert.match(out.path, /libamdhip64\.so\.6$/);
  assert.is(out.code, 100, `expected hipErrorNoDevice (100), got ${out.name} (${out.code})`);
  assert.is(out.name, 'hipErrorNoDevice');
  assert.is(out.deviceCount, 0);
  assert.is(out.probe.count, 0);
  assert.match(out.probe.reason, /hipErrorNoDevice/);
  // opening a device is a GpuError that carries HIP's own words
  assert.match(out.openError, /^GpuError: openRocm\(0\): .*hipErrorNoDevice/);
});

test.run();
