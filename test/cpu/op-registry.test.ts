// The op registry: every op is declared once and dispatches by device; the op reference page is
// what the registry says (regenerate with npm run docs:ops); nothing below the Tensor layer
// dispatches on the device by hand.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { registeredOps } from '../../src/ops/all.ts';
import { defineOp } from '../../src/ops/registry.ts';
import { Tensor, NotOnDeviceError } from '../../src/index.ts';
import type { RawTensor } from '../../src/device/raw-tensor.ts';
import { opsPage } from '../../scripts/gen-ops-doc.ts';

const root = new URL('../../', import.meta.url).pathname;

test('docs/ops.md is what the registry says (npm run docs:ops)', () => {
  assert.fixture(readFileSync(join(root, 'docs/ops.md'), 'utf8'), opsPage());
});

test('every op name is unique and has dtypes, a summary and at least one backend', () => {
  const ops = registeredOps();
  assert.ok(ops.length > 40, `${ops.length} ops`);
  assert.is(new Set(ops.map((o) => o.name)).size, ops.length);
  for (const o of ops) {
    assert.ok(o.dtypes.length > 0 && o.summary.length > 0 && o.backends.length > 0, o.name);
  }
});

test('a second declaration under the same name is refused', () => {
  const def = {
    name: 'matmul',
    family: 'x',
    summary: 'x',
    dtypes: ['f32'] as const,
    check: (x: RawTensor): [RawTensor] => [x],
    cpu: (x: RawTensor) => x,
    gpu: null,
    grad: 'none' as const,
  };
  assert.throws(() => defineOp(def), /declared twice/);
});

test('an op without a backend for the device says so by name', () => {
  const only = defineOp({
    name: 'test.gpuOnly',
    family: 'test',
    summary: 'a GPU-only op',
    dtypes: ['f32'],
    check: (x: RawTensor): [RawTensor] => [x],
    cpu: null,
    gpu: (x: RawTensor) => x,
    grad: 'none',
  });
  const x = Tensor.zeros([2]);
  try {
    assert.throws(
      () => only(x),
      (e: unknown) => e instanceof NotOnDeviceError && /test\.gpuOnly: not on cpu devices/.test((e as Error).message),
    );
  } finally {
    x.dispose();
  }
});

test('the op layer holds the only device dispatch: no backend choice by hand in src/ops or src/tensor', () => {
  const hits: string[] = [];
  for (const dir of ['src/ops', 'src/tensor']) {
    for (const f of readdirSync(join(root, dir))) {
      if (!f.endsWith('.ts') || f === 'registry.ts' || f === 'readback.ts') continue;
      const text = readFileSync(join(root, dir, f), 'utf8');
      text.split('\n').forEach((line, i) => {
        if (/isCpu\s*\?|\.isCpu\)/.test(line)) hits.push(`${dir}/${f}:${i + 1}: ${line.trim()}`);
      });
    }
  }
  assert.equal(hits, []);
});

test('backends never import the Tensor class', () => {
  const hits: string[] = [];
  const walk = (dir: string): void => {
    for (const e of readdirSync(join(root, dir), { withFileTypes: true })) {
      const p = join(dir, e.name);
      if (e.isDirectory()) walk(p);
      else if (p.endsWith('.ts') && /tensor\/tensor\.ts'/.test(readFileSync(join(root, p), 'utf8'))) hits.push(p);
    }
  };
  for (const d of ['src/backends', 'src/ops', 'src/device', 'src/runtime', 'src/ffi', 'src/core']) walk(d);
  assert.equal(hits, []);
});

test.run();
