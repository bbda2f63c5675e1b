// The sanitizer scripts' check (flash-sanitize.ts, attention-sanitize.ts): one attention call on
// the GPU against the CPU reference, element by element; NaN never passes.
import { Tensor, type Device } from '../../src/index.ts';
import { randT } from '../helpers.ts';

type Causal = boolean | 'top-left' | 'bottom-right';

/** a mask of the kind named for [b, 1, tq, tk]: additive random, or u8 with every 7th key hidden */
export function sanitizeMask(
  kind: 'u8' | 'add' | undefined,
  b: number,
  tq: number,
  tk: number,
  dt: 'f32' | 'f16' | 'bf16',
): Tensor | undefined {
  if (kind === 'add') return randT([b, 1, tq, tk], dt, -2, 1);
  if (kind === 'u8')
    return Tensor.from(
      Array.from({ length: b * tq * tk }, (_, i) => (i % 7 === 3 ? 0 : 1)),
      { dtype: 'u8', shape: [b, 1, tq, tk] },
    );
  return undefined;
}

/** the largest absolute error of the GPU result; throws naming `what` past `tol` */
export async function sdpaVsCpu(
  dev: Device,
  q: Tensor,
  k: Tensor,
  v: Tensor,
  causal: Causal,
  window: number | undefined,
  mask: Tensor | undefined,
  what: string,
  tol = 3e-2,
): Promise<number> {
  const sdpa = Tensor.scaledDotProductAttention;
  const opts = { causal, ...(window ? { window } : {}), ...(mask ? { mask } : {}) };
  const want = await sdpa(q, k, v, opts).toArray();
  const got = await sdpa(q.to(dev), k.to(dev), v.to(dev), {
    ...opts,
    ...(mask ? { mask: mask.to(dev) } : {}),
  }).toArray();
  let worst = 0;
  for (let i = 0; i < want.length; i++) {
    const e = Math.abs(Number(got[i]) - Number(want[i]));
    if (!(e <= tol)) throw new Error(`${what}: element ${i} got ${got[i]}, want ${want[i]}`);
    worst = Math.max(worst, e);
  }
  return worst;
}
