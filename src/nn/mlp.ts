// The SwiGLU MLP of Llama-family models: down(silu(gate(x)) * up(x)), with gate and up fused
// into one projection [2 * ff, hidden] so the step runs one GEMM for both.
import type { Tensor } from '../tensor.ts';
import type { Linear } from './linear.ts';
import { tidy } from '../scope.ts';

export class GatedMLP {
  constructor(readonly gateUp: Linear, readonly down: Linear) {}
  get ff(): number { return this.gateUp.outFeatures / 2; }

  forward(x: Tensor): Tensor {
    return tidy(() => {
      const gu = this.gateUp.forward(x);
      const last = gu.rank - 1, ff = this.ff;
      const h = gu.narrow(last, 0, ff).silu().mul(gu.narrow(last, ff, ff));
      return this.down.forward(h);
    });
  }
  dispose(): void { this.gateUp.dispose(); this.down.dispose(); }
}
