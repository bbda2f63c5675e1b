// The CPU matmul on its fast engines against the exact f64 reference (setCpuExact): the system
// BLAS through koffi (CI installs libopenblas0) and the built-in kernel (ROCM_TENSOR_BLAS_LIB=none:
// WebAssembly SIMD for f32, loops for f64), for every float dtype, on operands BLAS takes as
// they are (row-major, transposed, at an offset, inside a wider matrix), ones it must copy
// (a step in both dims, stride 0 inside the matrix), batched and broadcast batch dims (one B
// for the whole batch, as linear's weight), matrix-vector shapes, empty dims, and linear.
// Also: a library path that does not load is an error naming the variable, and `none` runs the
// built-in kernel.
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { Tensor, LibraryNotFoundError, type DType } from '../../src/index.ts';
import { setCpuExact } from '../../src/backends/cpu/mode.ts';
import { _resetGemmEngine, _setHalfBlock, describeCpuMatmul, gemmEngine } from '../../src/backends/cpu/gemm.ts';
import { _resetBlas } from '../../src/ffi/openblas.ts';
import { _resetLibraryCache } from '../../src/ffi/loader.ts';
import { randT, relErr, TOL, nums, throwsLike } from '../helpers.ts';
import { REPO_ROOT, runtime, tsCommand } from '../runtime.ts';

const FLOATS: DType[] = ['f32', 'f64', 'f16', 'bf16'];

/** switches the engine: undefined searches for a BLAS, 'none' is the built-in kernel, a path is that library */
function useBlas(setting: string | undefined): void {
  if (setting === undefined) delete process.env.ROCM_TENSOR_BLAS_LIB;
  else process.env.ROCM_TENSOR_BLAS_LIB = setting;
  _resetLibraryCache();
  _resetBlas();
  _resetGemmEngine();
}

/** f() on the current engine and on the exact reference */
function fastAndExact(f: () => Tensor): { fast: Tensor; exact: Tensor } {
  setCpuExact(false);
  const fast = f();
  setCpuExact(true);
  try {
    return { fast, exact: f() };
  } finally {
    setCpuExact(null);
  }
}

/** plain f64 triple loop over numbers (independent of the library): the exact reference's sum order */
function naive(a: number[], b: number[], m: number, k: number, n: number): number[] {
  const out: number[] = [];
  for (let i = 0; i < m; i++)
    for (let j = 0; j < n; j++) {
      let s = 0;
      for (let q = 0; q < k; q++) s += a[i * k + q]! * b[q * n + j]!;
      out.push(s);
    }
  return out;
}

/** [rows, cols] with these values in another memory layout (the same logical values) */
type Layouter = (t: Tensor) => Tensor;
const LAYOUTS: Record<string, Layouter> = {
  contiguous: (t) => t,
  // stored as its transpose: BLAS's transposed operand
  transposed: (t) => t.T.contiguous().T,
  // a window of a wider matrix: leading dimension larger than the row
  narrowed: (t) => Tensor.cat([t, t, t], 1).narrow(1, t.dim(1), t.dim(1)),
  // every other column of a matrix twice as wide: a step in both dims, copied before BLAS
  stepped: (t) =>
    Tensor.cat([t.unsqueeze(2), t.unsqueeze(2)], 2)
      .reshape([t.dim(0), 2 * t.dim(1)])
      .slice(1, 0, undefined, 2),
  // the transpose of a stepped matrix
  steppedT: (t) => {
    const u = t.T.contiguous();
    return Tensor.cat([u.unsqueeze(2), u.unsqueeze(2)], 2)
      .reshape([u.dim(0), 2 * u.dim(1)])
      .slice(1, 0, undefined, 2).T;
  },
};

function checkClose(what: string, fast: Tensor, exact: Tensor, dtype: DType): void {
  assert.equal(fast.shape, exact.shape, `${what}: shape`);
  assert.is(fast.dtype, dtype, `${what}: dtype`);
  const e = relErr(nums(fast), nums(exact));
  assert.ok(e <= TOL[dtype], `${what}: relErr ${e} > ${TOL[dtype]}`);
}

const SHAPES: [number, number, number][] = [
  [5, 7, 3],
  [1, 33, 17], // one row: a matrix-vector product
  [17, 33, 1], // one column
  [1, 9, 1], // a dot product
  [3, 1, 4], // k = 1
  [70, 300, 13], // past the built-in kernel's 64-row and 256-k blocks, n not a multiple of 8
];

/** every dtype, shape and pair of layouts on the current engine against the exact reference */
function layoutSweep(engine: string): void {
  for (const dtype of FLOATS)
    for (const [m, k, n] of SHAPES) {
      const a = randT([m, k], dtype),
        b = randT([k, n], dtype);
      for (const [la, fa] of Object.entries(LAYOUTS))
        for (const [lb, fb] of Object.entries(LAYOUTS)) {
          if (m * k * n > 5000 && la !== lb && la !== 'contiguous') continue; // the big shape: fewer pairs
          const A = fa(a),
            B = fb(b);
          const { fast, exact } = fastAndExact(() => A.matmul(B));
          checkClose(`${engine} ${dtype} [${m}, ${k}] ${la} x [${k}, ${n}] ${lb}`, fast, exact, dtype);
        }
    }
}

test('the exact reference is the in-order f64 sum, bit for bit (f64)', () => {
  const a = randT([6, 11], 'f64'),
    b = randT([11, 5], 'f64');
  setCpuExact(true);
  try {
    assert.equal(nums(a.matmul(b)), naive(nums(a), nums(b), 6, 11, 5));
    assert.equal(nums(a.T.contiguous().T.matmul(b)), naive(nums(a), nums(b), 6, 11, 5));
    assert.ok(describeCpuMatmul().startsWith('exact f64 reference'));
  } finally {
    setCpuExact(null);
  }
});

test('the system BLAS is found and used (libopenblas0 in CI)', () => {
  useBlas(undefined);
  const e = gemmEngine();
  if (e.kind !== 'blas') {
    // a machine without a BLAS: CI installs one, so there this is a failure
    assert.ok(!process.env.CI, `no BLAS found in CI: ${e.why}`);
    console.log(`blas.test: no BLAS on this machine (${e.why}); the BLAS sweeps run on the built-in kernel`);
    return;
  }
  assert.match(describeCpuMatmul(), e.blas.loaded.path);
  assert.ok(['OpenBLAS', 'BLIS', 'MKL', 'BLAS'].includes(e.blas.name));
});

test('BLAS: every dtype and layout against the exact reference', () => {
  useBlas(undefined);
  layoutSweep(gemmEngine().kind);
});

test('built-in kernel (ROCM_TENSOR_BLAS_LIB=none): every dtype and layout against the exact reference', () => {
  useBlas('none');
  try {
    assert.is(gemmEngine().kind, 'builtin');
    assert.match(describeCpuMatmul(), /built-in kernel/);
    assert.match(describeCpuMatmul(), /ROCM_TENSOR_BLAS_LIB=none/);
    layoutSweep('builtin');
    // f64 on the built-in loops is the exact reference's sum, bit for bit
    const a = randT([9, 21], 'f64'),
      b = randT([21, 4], 'f64');
    const { fast, exact } = fastAndExact(() => a.matmul(b));
    assert.equal(nums(fast), nums(exact));
  } finally {
    useBlas(undefined);
  }
});

for (const engine of ['blas', 'none'] as const) {
  test(`${engine}: batched, broadcast and strided batch dims`, () => {
    useBlas(engine === 'none' ? 'none' : undefined);
    try {
      for (const dtype of FLOATS) {
        const cases: [string, () => Tensor][] = [];
        const a4 = randT([4, 5, 6], dtype),
          b2 = randT([6, 3], dtype),
          b4 = randT([4, 6, 3], dtype),
          a21 = randT([2, 1, 5, 6], dtype),
          b3 = randT([3, 6, 3], dtype),
          a1 = randT([1, 5, 6], dtype),
          am = randT([5, 4, 6], dtype);
        cases.push(['[4, 5, 6] x [6, 3]: one B for the batch', () => a4.matmul(b2)]);
        cases.push(['[4, 5, 6] x [4, 6, 3]', () => a4.matmul(b4)]);
        cases.push(['[2, 1, 5, 6] x [3, 6, 3]: both batch dims broadcast', () => a21.matmul(b3)]);
        cases.push(['[1, 5, 6] expanded to 4 x [4, 6, 3]: stride-0 batch', () => a1.expand([4, 5, 6]).matmul(b4)]);
        cases.push([
          '[5, 4, 6] permuted to [4, 5, 6] x [6, 3]: batch and rows interleaved',
          () => am.transpose(0, 1).matmul(b2),
        ]);
        cases.push([
          '[4, 5, 6] x [4, 3, 6]^T: transposed batch',
          () => a4.matmul(b4.transpose(1, 2).contiguous().transpose(1, 2)),
        ]);
        cases.push(['every other batch', () => Tensor.cat([a4, a4], 0).slice(0, 0, undefined, 2).matmul(b4)]);
        cases.push([
          '[6] x [4, 6, 3]: a 1-d left operand',
          () => a4.narrow(1, 0, 1).reshape([4, 6]).narrow(0, 1, 1).reshape([6]).matmul(b4),
        ]);
        cases.push(['[4, 5, 6] x [6]: a 1-d right operand', () => a4.matmul(b2.narrow(1, 0, 1).reshape([6]))]);
        for (const [what, f] of cases) {
          const { fast, exact } = fastAndExact(f);
          checkClose(`${engine} ${dtype} ${what}`, fast, exact, dtype);
        }
      }
    } finally {
      useBlas(undefined);
    }
  });

  test(`${engine}: empty dims (k = 0 gives zeros; m, n or a batch of 0 gives an empty result)`, () => {
    useBlas(engine === 'none' ? 'none' : undefined);
    try {
      for (const dtype of FLOATS) {
        const z = Tensor.zeros([3, 0], { dtype }).matmul(Tensor.zeros([0, 4], { dtype }));
        assert.equal(z.shape, [3, 4]);
        assert.equal(nums(z), new Array(12).fill(0), `${dtype} k = 0`);
        // k = 0 into memory that held other values (a freed block of the same size, reused): zeros still
        Tensor.full([128, 256], 7, { dtype }).dispose();
        const z2 = Tensor.zeros([128, 0], { dtype }).matmul(Tensor.zeros([0, 256], { dtype }));
        assert.ok(
          nums(z2).every((v) => v === 0),
          `${dtype} k = 0 into reused memory`,
        );
        assert.equal(randT([0, 4], dtype).matmul(randT([4, 3], dtype)).shape, [0, 3]);
        assert.equal(randT([2, 4], dtype).matmul(randT([4, 0], dtype)).shape, [2, 0]);
        assert.equal(randT([0, 2, 4], dtype).matmul(randT([4, 3], dtype)).shape, [0, 2, 3]);
        assert.equal(
          nums(Tensor.zeros([2, 3, 0], { dtype }).matmul(Tensor.zeros([0, 2], { dtype }))),
          new Array(12).fill(0),
        );
      }
    } finally {
      useBlas(undefined);
    }
  });

  test(`${engine}: linear (rows, one row, bias, SwiGLU, residual) against the exact reference`, () => {
    useBlas(engine === 'none' ? 'none' : undefined);
    try {
      for (const dtype of FLOATS) {
        const w = randT([24, 40], dtype),
          bias = randT([24], dtype),
          res = randT([3, 12], dtype);
        for (const rows of [1, 3]) {
          const x = randT([rows, 40], dtype);
          const r1 = fastAndExact(() => x.linear(w, { bias }));
          checkClose(`${engine} ${dtype} linear ${rows} rows`, r1.fast, r1.exact, dtype);
          const residual = rows === 3 ? res : randT([1, 12], dtype);
          const r2 = fastAndExact(() => x.linear(w, { act: 'swiglu', residual }));
          assert.equal(r2.fast.shape, [rows, 12]);
          assert.ok(relErr(nums(r2.fast), nums(r2.exact)) <= 2 * TOL[dtype], `${engine} ${dtype} swiglu ${rows}`);
        }
      }
    } finally {
      useBlas(undefined);
    }
  });
}

test('f16 and bf16 go through f32 in blocks: several blocks give the one-block result', () => {
  for (const dtype of ['f16', 'bf16'] as const) {
    const a = randT([13, 40], dtype),
      b = randT([40, 11], dtype);
    setCpuExact(false);
    try {
      const whole = nums(a.matmul(b));
      _setHalfBlock(80); // 2 rows of A, 2 columns of B a block
      const blocked = nums(a.matmul(b.T.contiguous().T));
      assert.equal(blocked, whole, dtype);
    } finally {
      _setHalfBlock(null);
      setCpuExact(null);
    }
  }
});

test('ROCM_TENSOR_BLAS_LIB naming a missing file is an error that names it (no quiet fallback)', () => {
  useBlas('/nowhere/libopenblas.so.0');
  try {
    const a = randT([2, 3]),
      b = randT([3, 2]);
    throwsLike(() => a.matmul(b), LibraryNotFoundError, [
      'ROCM_TENSOR_BLAS_LIB=/nowhere/libopenblas.so.0',
      'libopenblas0',
    ]);
    // and again on the next call: the failure is not cached as a fallback
    throwsLike(() => a.matmul(b), LibraryNotFoundError, ['ROCM_TENSOR_BLAS_LIB']);
    assert.match(
      (() => {
        try {
          return describeCpuMatmul();
        } catch (e) {
          return (e as Error).message;
        }
      })(),
      'ROCM_TENSOR_BLAS_LIB',
    );
  } finally {
    useBlas(undefined);
  }
  // a library without the CBLAS symbols: named too
  useBlas('libm.so.6');
  try {
    throwsLike(() => randT([2, 2]).matmul(randT([2, 2])), Error, ['cblas_sgemm', 'libm.so.6']);
  } finally {
    useBlas(undefined);
  }
});

test('OpenBLAS on an AVX-512 CPU: its SkylakeX kernels unless OPENBLAS_CORETYPE chooses; the environment is left as it was', () => {
  const run = (coretype: string | undefined) => {
    const env = { ...process.env };
    if (coretype === undefined) delete env.OPENBLAS_CORETYPE;
    else env.OPENBLAS_CORETYPE = coretype;
    const { cmd, args } = tsCommand(runtime, join(REPO_ROOT, 'test/cpu/workers/blas-core.ts'));
    const r = spawnSync(cmd, args, { cwd: REPO_ROOT, encoding: 'utf8', env });
    return JSON.parse(r.stdout.trim().split('\n').pop() ?? 'null') as {
      name: string;
      version: string;
      env: string | null;
      libcEnv: string | null;
    } | null;
  };
  const chosen = run(undefined);
  if (chosen?.name !== 'OpenBLAS') {
    console.log(`blas.test: the CPU BLAS is not OpenBLAS here (${chosen?.name ?? 'none'}): core choice not checked`);
    return;
  }
  const avx512 = /^flags\s*:.*\bavx512f\b.*$/m.test(readFileSync('/proc/cpuinfo', 'utf8'));
  const dynamic = chosen.version.includes('DYNAMIC_ARCH');
  if (avx512 && dynamic) assert.match(chosen.version, /SkylakeX/);
  assert.is(chosen.env, null, 'OPENBLAS_CORETYPE unset again (process.env)');
  assert.is(chosen.libcEnv, null, 'OPENBLAS_CORETYPE unset again (libc)');
  const haswell = run('Haswell');
  if (dynamic) assert.match(haswell!.version, /Haswell/);
  assert.is(haswell!.env, 'Haswell', "the user's choice stays");
});

test('rocm-tensor info says which code computes the CPU matmul', () => {
  const run = (env: Record<string, string>) => {
    const { cmd, args } = tsCommand(runtime, join(REPO_ROOT, 'src/cli/main.ts'), ['info']);
    const r = spawnSync(cmd, args, { cwd: REPO_ROOT, encoding: 'utf8', env: { ...process.env, ...env } });
    return (r.stdout.split('\n').find((l) => l.includes('CPU matmul')) ?? r.stdout + r.stderr).trim();
  };
  assert.match(run({ ROCM_TENSOR_BLAS_LIB: 'none' }), /CPU matmul: built-in kernel .*ROCM_TENSOR_BLAS_LIB=none/);
  assert.match(run({ ROCM_TENSOR_CPU_EXACT: '1' }), /CPU matmul: exact f64 reference/);
  assert.match(run({ ROCM_TENSOR_BLAS_LIB: '/nowhere/libblas.so' }), /CPU matmul: error: .*ROCM_TENSOR_BLAS_LIB/);
});

test.run();
