// The training workloads of bench:train, defined the same way as their PyTorch twins in
// bench/train_torch.py: a small CNN (f32, SGD with momentum), a Llama-style decoder (RMSNorm,
// rotary embeddings, causal attention, SwiGLU; bf16 parameters, AdamW) and ResNet-18 for 32x32
// images (f32 parameters under bf16 autocast, SGD with momentum). Synthetic data, seeded.
import {
  Tensor,
  tidy,
  autocast,
  captureBackward,
  nn,
  optim,
  type CapturedBackward,
  type Device,
  type DType,
} from '../src/index.ts';
import { assign } from '../src/nn/assign.ts';

export interface Workload {
  readonly name: string;
  readonly what: string;
  /** one optimizer step: forward, loss, backward, update; returns the loss (not read back) */
  step(): Tensor;
  /** tokens (decoder) or images (CNN) one step consumes */
  readonly items: number;
  readonly itemName: string;
  /** device memory a captured step's graph holds beyond the bytes in use the device counts
   *  (its pool, less the gradients and loss it hands out, which are in use); 0 eagerly */
  graphBytes(): number;
  /** the eager step in its parts (bench:train --parts times each): the loss, recorded for
   *  backward; then the caller's backward; then the update */
  loss(): Tensor;
  update(): void;
  dispose(): void;
}

/** graph: the forward and backward replayed from a captureBackward graph (the update eager) */
export interface StepOptions {
  readonly graph?: boolean;
}

/** a training step around a loss: eager forward, backward and update, or with graph, the forward
 *  and backward recorded once (at the first step, outside any scope) and replayed */
function stepper(
  loss: () => Tensor,
  params: Tensor[],
  opt: { step(): void; zeroGrad(): void },
  o: StepOptions,
): { step(): Tensor; graphBytes(): number; loss(): Tensor; update(): void; dispose(): void } {
  const g: CapturedBackward | null = o.graph ? captureBackward(loss, params) : null;
  return {
    step() {
      let l: Tensor;
      if (g) l = g.run();
      else {
        l = loss();
        l.backward();
      }
      opt.step();
      opt.zeroGrad();
      return l;
    },
    graphBytes: () => (g ? g.poolBytes - g.poolInUse : 0),
    loss,
    update() {
      opt.step();
      opt.zeroGrad();
    },
    dispose() {
      g?.dispose();
    },
  };
}

export function cnnWorkload(device: Device, batch = 256, so: StepOptions = {}): Workload {
  nn.manualSeed(1);
  const o = { device };
  const model = new nn.Sequential(
    new nn.Conv2d(1, 32, 3, { padding: 1, ...o }),
    new nn.ReLU(),
    new nn.MaxPool2d(2),
    new nn.Conv2d(32, 64, 3, { padding: 1, ...o }),
    new nn.ReLU(),
    new nn.MaxPool2d(2),
    new nn.Flatten(),
    new nn.Linear(3136, 128, o),
    new nn.ReLU(),
    new nn.Linear(128, 10, o),
  );
  const opt = new optim.SGD(model.parameters(), { lr: 0.01, momentum: 0.9 });
  const x = Tensor.randn([batch, 1, 28, 28], { seed: 2, device });
  const y = Tensor.randint(0, 10, [batch], { seed: 3, device, dtype: 'i64' });
  const st = stepper(() => nn.crossEntropy(model.forward(x), y), model.parameters(), opt, so);
  return {
    name: 'cnn',
    what: `CNN conv 1->32, pool, conv 32->64, pool, linear 3136->128->10; 28x28, batch ${batch}, f32, SGD momentum`,
    items: batch,
    itemName: 'images',
    step: st.step,
    graphBytes: st.graphBytes,
    loss: st.loss,
    update: st.update,
    dispose() {
      st.dispose();
      model.dispose();
      opt.dispose();
      for (const t of [x, y]) t.dispose();
    },
  };
}

export interface DecoderShape {
  readonly layers: number;
  readonly dim: number;
  readonly heads: number;
  readonly ff: number;
  readonly vocab: number;
  readonly seq: number;
  readonly batch: number;
}
export const DECODER_134M: DecoderShape = {
  layers: 12,
  dim: 768,
  heads: 12,
  ff: 2048,
  vocab: 32000,
  seq: 1024,
  batch: 16,
};

class Block extends nn.Module {
  constructor(
    private readonly s: DecoderShape,
    o: { device: Device; dtype: DType },
  ) {
    super();
    const lin = (i: number, out: number) => new nn.Linear(i, out, { bias: false, ...o });
    this.registerModule('attnNorm', new nn.RMSNorm(s.dim, { eps: 1e-5, ...o }));
    this.registerModule('qkv', lin(s.dim, 3 * s.dim));
    this.registerModule('proj', lin(s.dim, s.dim));
    this.registerModule('mlpNorm', new nn.RMSNorm(s.dim, { eps: 1e-5, ...o }));
    this.registerModule('gateUp', lin(s.dim, 2 * s.ff));
    this.registerModule('down', lin(s.ff, s.dim));
  }
  run(x: Tensor, cos: Tensor, sin: Tensor): Tensor {
    const { batch: b, seq: t, heads: h, dim } = this.s;
    const d = dim / h;
    const m = (n: string) => this.child(n) as nn.Linear | nn.RMSNorm;
    const qkv = m('qkv').forward(m('attnNorm').forward(x)).reshape([b, t, 3, h, d]);
    const [q, k, v] = [0, 1, 2].map((i) => qkv.narrow(2, i, 1).squeeze(2).transpose(1, 2)) as [Tensor, Tensor, Tensor];
    const a = Tensor.scaledDotProductAttention(q.rope(cos, sin), k.rope(cos, sin), v, { causal: true });
    const x1 = x.add(m('proj').forward(a.transpose(1, 2).reshape([b, t, dim])));
    // silu(gate) * up in one kernel each way (PyTorch's twin composes F.silu(gate) * up)
    const gu = m('gateUp').forward(m('mlpNorm').forward(x1));
    return x1.add(m('down').forward(gu.swiglu()));
  }
}

/** the whole decoder: embedding, blocks, final norm, head */
class Decoder extends nn.Module {
  readonly blocks: Block[];
  constructor(
    private readonly s: DecoderShape,
    o: { device: Device; dtype: DType },
  ) {
    super();
    this.registerModule('embed', new nn.Embedding(s.vocab, s.dim, o));
    this.blocks = Array.from({ length: s.layers }, (_, i) => {
      const b = new Block(s, o);
      this.registerModule(`layer${i}`, b);
      return b;
    });
    this.registerModule('norm', new nn.RMSNorm(s.dim, { eps: 1e-5, ...o }));
    this.registerModule('head', new nn.Linear(s.dim, s.vocab, { bias: false, ...o }));
  }
  /** logits [b t, vocab] */
  run(ids: Tensor, cos: Tensor, sin: Tensor): Tensor {
    let x = (this.child('embed') as nn.Embedding).forward(ids);
    for (const b of this.blocks) x = b.run(x, cos, sin);
    const h = (this.child('norm') as nn.RMSNorm).forward(x);
    return (this.child('head') as nn.Linear).forward(h).reshape([-1, this.s.vocab]);
  }
}

export function decoderWorkload(device: Device, s: DecoderShape = DECODER_134M, so: StepOptions = {}): Workload {
  nn.manualSeed(1);
  const model = new Decoder(s, { device, dtype: 'bf16' });
  const params = model.parameters();
  const nParams = params.reduce((n: number, p: Tensor) => n + p.numel, 0);
  const opt = new optim.AdamW(params, { lr: 3e-4, weightDecay: 0.1 });
  const ids = Tensor.randint(0, s.vocab, [s.batch, s.seq + 1], { seed: 4, device, dtype: 'i64' });
  // the inputs, targets and rotary tables [t, d/2] (the halves layout); the steps between are freed
  const [inp, tgt, cos, sin] = tidy(() => {
    const d = s.dim / s.heads;
    const inv = Tensor.arange(0, d / 2, 1, { dtype: 'f32', device }).affine(-2 / d, 0);
    const ang = Tensor.arange(0, s.seq, 1, { dtype: 'f32', device })
      .unsqueeze(1)
      .mul(inv.affine(Math.log(10000), 0).exp().recip().unsqueeze(0));
    return [
      ids.narrow(1, 0, s.seq).contiguous(),
      ids.narrow(1, 1, s.seq).contiguous().reshape([-1]),
      ang.cos().toDtype('bf16'),
      ang.sin().toDtype('bf16'),
    ];
  });
  const st = stepper(() => nn.crossEntropy(model.run(inp, cos, sin), tgt), params, opt, so);
  return {
    name: 'decoder',
    what:
      `Llama-style decoder, ${(nParams / 1e6).toFixed(0)}M parameters (${s.layers} layers, d ${s.dim}, ${s.heads} heads, ` +
      `ff ${s.ff} SwiGLU, vocab ${s.vocab}), sequence ${s.seq}, batch ${s.batch}, bf16, AdamW`,
    items: s.batch * s.seq,
    itemName: 'tokens',
    step: st.step,
    graphBytes: st.graphBytes,
    loss: st.loss,
    update: st.update,
    dispose() {
      st.dispose();
      model.dispose();
      opt.dispose();
      for (const t of [ids, inp, tgt, cos, sin]) t.dispose();
    },
  };
}

// ---- ResNet-18 --------------------------------------------------------------------------------

/** conv weights as torchvision initialises them: kaiming normal, fan out, for ReLU */
function kaimingFanOut(conv: nn.Conv2d, seed: number): void {
  const w = conv.parameters()[0]!;
  const [out, , kh, kw] = w.shape as [number, number, number, number];
  const init = nn.init.normal(w.shape, 0, Math.sqrt(2 / (out * kh * kw)), { seed, device: w.device });
  assign(w, init);
  init.dispose();
}

/** torchvision's BasicBlock: 3x3 conv (stride), BN, ReLU, 3x3 conv, BN, + shortcut, ReLU */
class BasicBlock extends nn.Module {
  readonly convs: nn.Conv2d[];
  constructor(cin: number, cout: number, stride: number, device: Device, seed: number) {
    super();
    const o = { bias: false, device };
    const c1 = new nn.Conv2d(cin, cout, 3, { stride, padding: 1, ...o });
    const c2 = new nn.Conv2d(cout, cout, 3, { padding: 1, ...o });
    this.registerModule('conv1', c1);
    this.registerModule('bn1', new nn.BatchNorm2d(cout, { device }));
    this.registerModule('conv2', c2);
    this.registerModule('bn2', new nn.BatchNorm2d(cout, { device }));
    this.convs = [c1, c2];
    // the shortcut projects where the shape changes: 1x1 conv with the stride, then BN
    if (stride !== 1 || cin !== cout) {
      const d = new nn.Conv2d(cin, cout, 1, { stride, ...o });
      this.registerModule('downsample', new nn.Sequential(d, new nn.BatchNorm2d(cout, { device })));
      this.convs.push(d);
    }
    this.convs.forEach((c, i) => kaimingFanOut(c, seed * 8 + i));
  }
  forward(x: Tensor): Tensor {
    const m = (n: string) => this.child(n) as nn.Conv2d | nn.BatchNorm2d;
    const h = m('bn1').forward(m('conv1').forward(x)).relu();
    const y = m('bn2').forward(m('conv2').forward(h));
    const short = this.namedChildren().some(([n]) => n === 'downsample')
      ? (this.child('downsample') as nn.Sequential).forward(x)
      : x;
    return y.add(short).relu();
  }
}

/** torchvision's resnet18(num_classes): 7x7/2 stem, 3x3/2 max pool, [2, 2, 2, 2] basic blocks,
 *  global average pool, fc */
export class ResNet18 extends nn.Module {
  /** layer1..layer4: two blocks each (torchvision's names: layer1.0.conv1.weight, ...) */
  readonly stages: nn.Sequential[] = [];
  constructor(classes: number, device: Device) {
    super();
    const stem = new nn.Conv2d(3, 64, 7, { stride: 2, padding: 3, bias: false, device });
    kaimingFanOut(stem, 1);
    this.registerModule('conv1', stem);
    this.registerModule('bn1', new nn.BatchNorm2d(64, { device }));
    let cin = 64;
    [64, 128, 256, 512].forEach((cout, li) => {
      const first = new BasicBlock(cin, cout, li > 0 ? 2 : 1, device, 10 + li * 2);
      const stage = new nn.Sequential(first, new BasicBlock(cout, cout, 1, device, 11 + li * 2));
      this.registerModule(`layer${li + 1}`, stage);
      this.stages.push(stage);
      cin = cout;
    });
    this.registerModule('fc', new nn.Linear(512, classes, { device }));
  }
  /** logits [n, classes] of images [n, 3, h, w] */
  forward(x: Tensor): Tensor {
    let h = (this.child('bn1') as nn.BatchNorm2d).forward((this.child('conv1') as nn.Conv2d).forward(x)).relu();
    h = h.maxPool2d({ kernel: 3, stride: 2, padding: 1 });
    for (const s of this.stages) h = s.forward(h);
    // adaptive average pool to 1x1, flattened
    return (this.child('fc') as nn.Linear).forward(h.mean([2, 3]));
  }
}

export function resnetWorkload(device: Device, batch = 256, so: StepOptions = {}): Workload {
  nn.manualSeed(1);
  const model = new ResNet18(10, device);
  const nParams = model.parameters().reduce((n: number, p: Tensor) => n + p.numel, 0);
  const opt = new optim.SGD(model.parameters(), { lr: 0.01, momentum: 0.9 });
  const x = Tensor.randn([batch, 3, 32, 32], { seed: 5, device });
  const y = Tensor.randint(0, 10, [batch], { seed: 6, device, dtype: 'i64' });
  // forward and loss under autocast, backward and the update outside, as torch.autocast is used
  const st = stepper(() => autocast('bf16', () => nn.crossEntropy(model.forward(x), y)), model.parameters(), opt, so);
  return {
    name: 'resnet',
    what:
      `ResNet-18 (torchvision's, ${(nParams / 1e6).toFixed(1)}M parameters, 10 classes); 32x32, batch ${batch}, ` +
      'f32 parameters, bf16 autocast, SGD momentum',
    items: batch,
    itemName: 'images',
    step: st.step,
    graphBytes: st.graphBytes,
    loss: st.loss,
    update: st.update,
    dispose() {
      st.dispose();
      model.dispose();
      opt.dispose();
      for (const t of [x, y]) t.dispose();
    },
  };
}
