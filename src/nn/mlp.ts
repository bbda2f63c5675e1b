// The SwiGLU MLP of Llama-family models: down(silu(gate(x)) * up(x)), with gate and up fused
// into one projection [2 * ff, hidden] so the step runs one GEMM for both. The norm before it
// and the residual add after it can be folded in (one kernel each side at batch 1 on a GPU).
import type { Tensor } from '../tensor/tensor.ts';
import type { Projection } from './linear.ts';
import type { RmsNormSpec } from '../tensor/options.ts';
import { tidy } from '../core/scope.ts';

export interface BlockFusion {
  /** RMS-normalise the block's input first */
  readonly norm?: RmsNormSpec | null;
  /** added to the block's output (the residual stream) */
  readonly residual?: Tensor | null;
}

export class GatedMLP {
  constructor(
    readonly gateUp: Projection,
    readonly down: Projection,
  ) {}
  get ff(): number {
    return this.gateUp.outFeatures / 2;
  }

  forward(x: Tensor, fused: BlockFusion = {}): Tensor {
    return tidy(() => {
      const h = this.gateUp.forward(x, { norm: fused.norm ?? null, act: 'swiglu' });
      return this.down.forward(h, { residual: fused.residual ?? null });
    });
  }
  dispose(): void {
    this.gateUp.dispose();
    this.down.dispose();
  }
}
