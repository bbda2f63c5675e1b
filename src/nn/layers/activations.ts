// Activations and shape helpers as modules, for Sequential. Each is one Tensor method.
import { TensorError } from '../../core/errors.ts';
import type { Tensor } from '../../tensor/tensor.ts';
import { UnaryModule } from '../module.ts';

export class ReLU extends UnaryModule {
  forward(x: Tensor): Tensor {
    return x.relu();
  }
}

export class LeakyReLU extends UnaryModule {
  constructor(readonly negativeSlope = 0.01) {
    super();
  }
  forward(x: Tensor): Tensor {
    return x.leakyRelu(this.negativeSlope);
  }
}

/** the exact (erf) form by default, as PyTorch; approximate: 'tanh' for the tanh form */
export class GELU extends UnaryModule {
  readonly approximate: 'none' | 'tanh';
  constructor(opts: { approximate?: 'none' | 'tanh' } = {}) {
    super();
    const a = opts.approximate ?? 'none';
    if (a !== 'none' && a !== 'tanh')
      throw new TensorError(`GELU: approximate must be 'none' or 'tanh', got '${String(a)}'`);
    this.approximate = a;
  }
  forward(x: Tensor): Tensor {
    return this.approximate === 'tanh' ? x.gelu() : x.geluErf();
  }
}

export class SiLU extends UnaryModule {
  forward(x: Tensor): Tensor {
    return x.silu();
  }
}

export class Tanh extends UnaryModule {
  forward(x: Tensor): Tensor {
    return x.tanh();
  }
}

export class Sigmoid extends UnaryModule {
  forward(x: Tensor): Tensor {
    return x.sigmoid();
  }
}

export class Softmax extends UnaryModule {
  constructor(readonly dim = -1) {
    super();
  }
  forward(x: Tensor): Tensor {
    return x.softmax(this.dim);
  }
}

export class LogSoftmax extends UnaryModule {
  constructor(readonly dim = -1) {
    super();
  }
  forward(x: Tensor): Tensor {
    return x.logSoftmax(this.dim);
  }
}

/** flattens dims startDim..endDim into one (default 1..-1: everything but the batch) */
export class Flatten extends UnaryModule {
  constructor(
    readonly startDim = 1,
    readonly endDim = -1,
  ) {
    super();
  }
  forward(x: Tensor): Tensor {
    return x.flatten(this.startDim, this.endDim);
  }
}

/** the identity (a view of the input) */
export class Identity extends UnaryModule {
  forward(x: Tensor): Tensor {
    return x.reshape(x.shape);
  }
}
