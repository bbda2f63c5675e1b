// A training step's forward and backward recorded once into a GPU graph and replayed with one
// launch. A small network's step is hundreds of small launches whose host cost (dispatch,
// autograd bookkeeping, allocation) exceeds their GPU time; replaying the graph leaves only the
// GPU time. The optimizer then runs eagerly on the gradients each replay rewrote (its learning
// rate and step count change every step, which a recording would freeze).
import { GraphCaptureError, TensorError } from '../core/errors.ts';
import type { Graph } from '../device/graph.ts';
import type { Device } from '../device/device.ts';
import { keep, tidy } from '../core/scope.ts';
import { Tensor } from './tensor.ts';

export interface CaptureBackwardOptions {
  /** eager runs before the capture, which size the library workspaces and pick algorithms (default 1) */
  warmup?: number;
}

interface Outputs {
  loss: Tensor;
  grads: (Tensor | null)[];
}

/**
 * The forward and backward of `loss` as one replayable graph: run() returns this step's loss
 * and leaves each parameter's gradient in its `.grad` (rewritten, not accumulated, by each run;
 * an optimizer's zeroGrad between runs is harmless). Inputs are tensors made before the capture:
 * change their contents between runs (sliceSet, copies), never their storage.
 */
export class CapturedBackward {
  private readonly graph: Graph<Outputs>;
  private readonly views: (Tensor | null)[];

  constructor(
    private readonly loss: () => Tensor,
    readonly params: readonly Tensor[],
    opts: CaptureBackwardOptions = {},
  ) {
    const op = 'captureBackward';
    if (typeof loss !== 'function')
      throw new TypeError(`${op}: the first argument must be a function returning the loss`);
    if (!Array.isArray(params) || params.length === 0 || !params.every((p) => p instanceof Tensor))
      throw new TypeError(`${op}: params must be a non-empty array of tensors (model.parameters())`);
    const warmup = opts.warmup ?? 1;
    if (!Number.isInteger(warmup) || warmup < 0)
      throw new RangeError(`${op}: warmup must be an integer >= 0, got ${warmup}`);
    const dev = params[0]!.device;
    for (const p of params) {
      if (!p.requiresGrad || !p.isLeaf)
        throw new TensorError(`${op}: ${p.describe()} is not a leaf that requires a gradient`);
      if (p.device !== dev) throw new TensorError(`${op}: parameters on ${p.device} and ${dev}; use one device`);
    }
    if (dev.kind === 'cpu') throw new GraphCaptureError(`${op}: the cpu device has no graphs; train on a GPU device`);
    for (let i = 0; i < warmup; i++) this.eager();
    this.clearGrads();
    this.graph = this.capture(dev);
    // owned here, not by any tidy() scope the capture was made in
    this.views = this.graph.outputs.grads.map((g) => (g === null ? null : keep(g.detach())));
    this.attach();
  }

  /** one eager forward and backward (gradients added to .grad as usual); the forward's other
   *  tensors are freed with the scope */
  private eager(): void {
    tidy(() => {
      const l = this.loss();
      this.checkLoss(l);
      l.backward();
    });
  }

  private checkLoss(l: unknown): asserts l is Tensor {
    if (!(l instanceof Tensor)) throw new TypeError('captureBackward: the function must return the loss tensor');
    if (l.numel !== 1 || !l.requiresGrad)
      throw new TensorError(
        `captureBackward: the loss must be one element that requires a gradient, got ${l.describe()}`,
      );
  }

  private clearGrads(): void {
    for (const p of this.params) {
      p.grad?.dispose();
      p.grad = null;
    }
  }

  private capture(dev: Device): Graph<Outputs> {
    return dev.captureGraph(
      () => {
        const l = this.loss();
        this.checkLoss(l);
        l.backward();
        const grads = this.params.map((p) => {
          const g = p.grad;
          p.grad = null;
          return g;
        });
        // the outputs take no part in autograd: the loss's graph is freed by backward()
        const out = { loss: l.detach(), grads };
        l.dispose();
        return out;
      },
      { refuseDraws: true },
    );
  }

  /** points each parameter's .grad at the graph's gradient (a fresh view if zeroGrad dropped it) */
  private attach(): void {
    this.params.forEach((p, i) => {
      const v = this.views[i]!;
      if (v === null) {
        if (p.grad !== null) {
          p.grad.dispose();
          p.grad = null;
        }
        return;
      }
      if (p.grad !== null && p.grad.storage === v.storage) return;
      p.grad?.dispose();
      p.grad = keep(v.detach());
    });
  }

  /** device memory the graph holds (activations, gradients, temporaries) */
  get poolBytes(): number {
    return this.graph.poolBytes;
  }
  /** of poolBytes, the gradients and loss the graph hands out (counted in bytes in use too) */
  get poolInUse(): number {
    return this.graph.poolInUse;
  }

  /** queues the recorded forward and backward; returns the loss (a view: dispose it when done) */
  run(): Tensor {
    if (this.graph.isDisposed) throw new GraphCaptureError('captureBackward: run() after dispose()');
    this.attach();
    this.graph.replay();
    return this.graph.outputs.loss.detach();
  }

  /** frees the graph and its memory; the parameters' .grad views made by run() are dropped */
  dispose(): void {
    if (this.graph.isDisposed) return;
    this.params.forEach((p, i) => {
      const v = this.views[i];
      if (v && p.grad !== null && p.grad.storage === v.storage) {
        p.grad.dispose();
        p.grad = null;
      }
      v?.dispose();
    });
    this.graph.dispose();
  }
  [Symbol.dispose](): void {
    this.dispose();
  }
}

/** records loss() and its backward over `params` into a graph: see CapturedBackward */
export function captureBackward(
  loss: () => Tensor,
  params: readonly Tensor[],
  opts: CaptureBackwardOptions = {},
): CapturedBackward {
  return new CapturedBackward(loss, params, opts);
}
