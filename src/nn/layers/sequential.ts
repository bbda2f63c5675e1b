// Sequential: layers applied in order; children named "0", "1", ... as PyTorch names them.
import { TensorError } from '../../core/errors.ts';
import { tidy } from '../../core/scope.ts';
import type { Tensor } from '../../tensor/tensor.ts';
import { type Layer, Module, UnaryModule } from '../module.ts';

export class Sequential extends UnaryModule {
  readonly layers: readonly (Module & Layer)[];
  constructor(...layers: (Module & Layer)[]) {
    super();
    layers.forEach((m, i) => {
      if (!(m instanceof Module) || typeof (m as Partial<Layer>).forward !== 'function')
        throw new TensorError(`Sequential: layer ${i} must be a Module with a forward(x), got ${String(m)}`);
      this.registerModule(String(i), m);
    });
    this.layers = layers;
  }
  get length(): number {
    return this.layers.length;
  }
  at(i: number): Module & Layer {
    const m = this.layers[i < 0 ? this.layers.length + i : i];
    if (m === undefined) throw new TensorError(`Sequential: no layer ${i} (${this.layers.length} layers)`);
    return m;
  }
  /** the layers in order; the intermediate activations are disposed (the graph keeps what it needs) */
  forward(x: Tensor): Tensor {
    return tidy(() => {
      let y = x;
      for (const m of this.layers) y = m.forward(y);
      return y === x ? x.reshape(x.shape) : y;
    });
  }
}
