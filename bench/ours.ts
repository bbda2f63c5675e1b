// Each benchmark case on rocm-tensor: inputs made on the device (a random host chunk uploaded
// once and doubled with device copies, so setting up 1 GiB tensors takes milliseconds), one
// input set per rotation slot, and a run(i) that queues one op on set i % sets.
import { Tensor, DTYPE_INFO, type Device, type DType } from '../src/index.ts';
import { fromNumbers } from '../src/core/dtype.ts';
import type { DevicePtr } from '../src/runtime/gpu.ts';
import { benchCases, timingRules, type BenchCase } from './cases.ts';
import { timeGpu } from './timing.ts';
import { prepareOp } from './ours-ops.ts';

export interface Prepared {
  run(i: number): void;
  dispose(): void;
}

let seed = 0x9e3779b9;
function randoms(n: number, lo: number, hi: number): Float64Array {
  const out = new Float64Array(n);
  for (let i = 0; i < n; i++) {
    seed ^= seed << 13;
    seed >>>= 0;
    seed ^= seed >>> 17;
    seed ^= seed << 5;
    seed >>>= 0;
    out[i] = lo + ((hi - lo) * seed) / 2 ** 32;
  }
  return out;
}

/** a contiguous device tensor of random values in [lo, hi) (u8: 0 or 1) */
export function deviceRandom(dev: Device, shape: readonly number[], dtype: DType, lo = -2, hi = 2): Tensor {
  const t = Tensor.empty(shape, dtype, dev);
  const n = t.numel;
  if (n === 0) return t;
  const chunk = Math.min(n, 1 << 18);
  const vals = dtype === 'u8' ? randoms(chunk, 0, 2).map(Math.floor) : randoms(chunk, lo, hi);
  const rt = dev.runtime;
  const at = (elem: number): DevicePtr => t.storage.ptrAt(t.layout.offset + elem);
  rt.streamSynchronize(dev.stream);
  rt.copyHtoD(at(0), fromNumbers(dtype, vals));
  const sz = DTYPE_INFO[dtype].size;
  for (let done = chunk; done < n; ) {
    const len = Math.min(done, n - done);
    rt.copyDtoDAsync(at(done), at(0), len * sz, dev.stream);
    done += len;
  }
  return t;
}

/** raw device memory for the ceilings (not tensors: nothing between us and the library) */
function rawRandom(dev: Device, bytes: number, dtype: DType): { ptr: DevicePtr; t: Tensor } {
  const t = deviceRandom(dev, [bytes / DTYPE_INFO[dtype].size], dtype, -1, 1);
  return { ptr: t.storage.ptrAt(t.layout.offset), t };
}

/** the device copy bandwidth (GB/s, read + written) of the bench's 1 GiB copy case, measured now */
export function measureCopyGBs(dev: Device): number {
  const copyCase = benchCases(false).find((c) => c.kind === 'ceiling-memory')!;
  const cp = prepare(dev, copyCase);
  try {
    return copyCase.bytes / (timeGpu(dev, timingRules(false), (i) => cp.run(i)).medianMs / 1e3) / 1e9;
  } finally {
    cp.dispose();
  }
}

export function prepare(dev: Device, c: BenchCase): Prepared {
  const owned: Tensor[] = [];
  const rnd = (shape: readonly number[], d: DType = c.dtype, lo = -2, hi = 2) => {
    const t = deviceRandom(dev, shape, d, lo, hi);
    owned.push(t);
    return t;
  };
  const sets = <T>(make: () => T): T[] => Array.from({ length: c.sets }, make);
  const done = {
    dispose: () => {
      for (const t of owned) t.dispose();
      owned.length = 0;
    },
  };
  const once = (f: (i: number) => Tensor) => ({ ...done, run: (i: number) => f(i).dispose() });
  const keep = (t: Tensor) => {
    owned.push(t);
    return t;
  };
  const family = prepareOp(c, { rnd, sets, once, keep });
  if (family) return family;

  switch (c.op) {
    case 'copy': {
      const bytes = c.shape[0]!;
      const a = rawRandom(dev, bytes, 'u8'),
        b = rawRandom(dev, bytes, 'u8');
      owned.push(a.t, b.t);
      return { ...done, run: () => dev.runtime.copyDtoDAsync(b.ptr, a.ptr, bytes, dev.stream) };
    }
    case 'fill': {
      const bytes = c.shape[0]!;
      const a = rawRandom(dev, bytes, 'u8');
      owned.push(a.t);
      // not zero: a zero fill could meet a shortcut a random op's output never does
      return { ...done, run: () => dev.runtime.memsetAsync(a.ptr, 0x5a, bytes, dev.stream) };
    }
    case 'gemm': {
      const [m, n, k] = c.shape as [number, number, number];
      const sz = DTYPE_INFO[c.dtype].size;
      const a = rawRandom(dev, m * k * sz, c.dtype),
        b = rawRandom(dev, k * n * sz, c.dtype),
        out = rawRandom(dev, m * n * sz, c.dtype);
      owned.push(a.t, b.t, out.t);
      const blas = dev.runtime.blas();
      if (c.dtype !== 'f32' && c.dtype !== 'f64' && c.dtype !== 'f16' && c.dtype !== 'bf16')
        throw new Error(`gemm: no BLAS dtype ${c.dtype}`);
      const dtype = c.dtype;
      return {
        ...done,
        run: () =>
          blas.gemmStridedBatched(
            {
              dtype,
              transA: false,
              transB: false,
              m,
              n,
              k,
              alpha: 1,
              beta: 0,
              a: a.ptr,
              lda: m,
              strideA: m * k,
              b: b.ptr,
              ldb: k,
              strideB: k * n,
              c: out.ptr,
              ldc: m,
              strideC: m * n,
              batch: 1,
            },
            dev.stream,
          ),
      };
    }
    case 'add':
    case 'mul': {
      const ins = sets(() => [rnd(c.shape), rnd(c.shapeB ?? c.shape)] as const);
      return once((i) => {
        const [a, b] = ins[i % ins.length]!;
        return c.op === 'add' ? a.add(b) : a.mul(b);
      });
    }
    case 'exp':
    case 'gelu': {
      const ins = sets(() => rnd(c.shape));
      return once((i) => (c.op === 'exp' ? ins[i % ins.length]!.exp() : ins[i % ins.length]!.gelu()));
    }
    case 'rand':
    case 'randn': {
      const opts = { dtype: c.dtype, device: dev };
      return once((i) =>
        c.op === 'rand' ? Tensor.rand(c.shape, { ...opts, seed: i }) : Tensor.randn(c.shape, { ...opts, seed: i }),
      );
    }
    case 'cast': {
      const ins = sets(() => rnd(c.shape));
      const to = c.to!;
      return once((i) => ins[i % ins.length]!.toDtype(to));
    }
    case 'where': {
      const ins = sets(() => [rnd(c.shape, 'u8'), rnd(c.shape), rnd(c.shape)] as const);
      return once((i) => {
        const [cond, a, b] = ins[i % ins.length]!;
        return Tensor.where(cond, a, b);
      });
    }
    case 'sum':
    case 'mean':
    case 'max':
    case 'softmax':
    case 'logSoftmax': {
      const ins = sets(() => rnd(c.shape));
      const dim = c.params?.dim ?? -1;
      const op = c.op;
      return once((i) => {
        const x = ins[i % ins.length]!;
        return op === 'sum'
          ? x.sum(dim)
          : op === 'mean'
            ? x.mean(dim)
            : op === 'max'
              ? x.max(dim)
              : op === 'softmax'
                ? x.softmax(dim)
                : x.logSoftmax(dim);
      });
    }
    case 'layerNorm':
    case 'rmsNorm': {
      const h = c.shape[c.shape.length - 1]!;
      const w = rnd([h], c.dtype, 0.5, 1.5),
        b = rnd([h]);
      const ins = sets(() => rnd(c.shape));
      return once((i) => {
        const x = ins[i % ins.length]!;
        return c.op === 'layerNorm' ? x.layerNorm(w, b, 1e-5) : x.rmsNorm(w, 1e-6);
      });
    }
    case 'matmul': {
      // a transposed operand is stored the other way round and passed as a view (.T)
      const tA = c.params?.transA ?? false,
        tB = c.params?.transB ?? false;
      const rev = (s: readonly number[], t: boolean) => (t ? [...s].reverse() : s);
      const ins = sets(() => [rnd(rev(c.shape, tA), c.dtype, -1, 1), rnd(rev(c.shapeB!, tB), c.dtype, -1, 1)] as const);
      return once((i) => {
        const [a, b] = ins[i % ins.length]!;
        return (tA ? a.T : a).matmul(tB ? b.T : b);
      });
    }
    case 'linear': {
      const ins = sets(() => [rnd(c.shape, c.dtype, -1, 1), rnd(c.shapeB!, c.dtype, -1, 1)] as const);
      return once((i) => {
        const [x, w] = ins[i % ins.length]!;
        return x.matmul(w.T);
      });
    }
    case 'tinyAdd': {
      const a = Tensor.from([1, 2, 3, 4], { device: dev }),
        b = Tensor.from([5, 6, 7, 8], { device: dev });
      owned.push(a, b);
      return once(() => a.add(b));
    }
  }
  throw new Error(`bench: no preparation for op ${c.op}`);
}
