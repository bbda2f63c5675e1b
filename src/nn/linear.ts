// y = x W^T (+ b) with W [out, in] as Hugging Face stores it: the transposed view goes to BLAS
// as a transpose flag, never copied. Leading dims of x are flattened into one GEMM.
import type { Tensor } from '../tensor.ts';

export class Linear {
  constructor(readonly weight: Tensor, readonly bias: Tensor | null = null) {}
  get inFeatures(): number { return this.weight.dim(1); }
  get outFeatures(): number { return this.weight.dim(0); }

  forward(x: Tensor): Tensor {
    const lead = x.shape.slice(0, -1);
    const x2 = x.rank === 2 ? x : x.reshape([-1, this.inFeatures]);
    const wt = this.weight.T;
    const y = x2.matmul(wt);
    wt.dispose();
    if (x2 !== x) x2.dispose();
    let out = y;
    if (this.bias) { out = y.add(this.bias); y.dispose(); }
    if (x.rank === 2) return out;
    const r = out.reshape([...lead, this.outFeatures]);
    out.dispose();
    return r;
  }
  dispose(): void { this.weight.dispose(); this.bias?.dispose(); }
}
