// Seeded random tensors. The numbers are drawn on the host from a counter-based generator, so a
// seed gives the same values on every device, and then uploaded.
import { Layout, checkShape, numel, type Shape } from '../layout.ts';
import { DTypeError } from '../errors.ts';
import { isFloatDType, fromNumbers as hostFromNumbers, roundTo, type DType } from '../dtype.ts';
import type { Device } from '../device.ts';
import { Storage } from '../storage.ts';
import { Tensor } from '../tensor.ts';

let autoSeed = 0x2545f491;

/** splitmix64 on two 32-bit halves; element i depends only on (seed, i) */
function uniform(seed: number, n: number): Float64Array {
  const out = new Float64Array(n);
  const s = BigInt.asUintN(64, BigInt(Math.floor(seed)) * 0x9e3779b97f4a7c15n);
  for (let i = 0; i < n; i++) {
    let z = BigInt.asUintN(64, s + BigInt(i + 1) * 0x9e3779b97f4a7c15n);
    z = BigInt.asUintN(64, (z ^ (z >> 30n)) * 0xbf58476d1ce4e5b9n);
    z = BigInt.asUintN(64, (z ^ (z >> 27n)) * 0x94d049bb133111ebn);
    z = z ^ (z >> 31n);
    out[i] = Number(z >> 11n) / 2 ** 53; // 53 random bits -> [0, 1)
  }
  return out;
}

function make(op: string, shape: Shape, seed: number | undefined, dtype: DType, device: Device, values: (s: number, n: number) => Float64Array): Tensor {
  checkShape(op, shape);
  if (!isFloatDType(dtype)) throw new DTypeError(`${op}: dtype ${dtype} is not a float dtype (shape [${shape.join(', ')}])`);
  const s = seed ?? autoSeed++;
  const v = values(s, numel(shape));
  // values that round up to 1.0 in a narrow dtype would break the [0, 1) promise
  if (op === 'rand') {
    const below1 = 1 - 2 ** -({ f64: 53, f32: 24, f16: 11, bf16: 8 } as Record<string, number>)[dtype]!;
    for (let i = 0; i < v.length; i++) if (roundTo(dtype, v[i]!) >= 1) v[i] = below1;
  }
  return new Tensor(Storage.fromHost(device, dtype, hostFromNumbers(dtype, v)), Layout.contiguous(shape), dtype);
}

export function rand(shape: Shape, seed: number | undefined, dtype: DType, device: Device): Tensor {
  return make('rand', shape, seed, dtype, device, uniform);
}

/** Box-Muller over pairs of uniforms */
export function randn(shape: Shape, seed: number | undefined, dtype: DType, device: Device): Tensor {
  return make('randn', shape, seed, dtype, device, (s, n) => {
    const u = uniform(s, n + (n & 1));
    const out = new Float64Array(n);
    for (let i = 0; i < n; i += 2) {
      const r = Math.sqrt(-2 * Math.log(1 - u[i]!)), th = 2 * Math.PI * u[i + 1]!;
      out[i] = r * Math.cos(th);
      if (i + 1 < n) out[i + 1] = r * Math.sin(th);
    }
    return out;
  });
}
