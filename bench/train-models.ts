// The training workloads of bench:train, defined the same way as their PyTorch twins in
// bench/train_torch.py: a small CNN (f32, SGD with momentum) and a Llama-style decoder (RMSNorm,
// rotary embeddings, causal attention, SwiGLU; bf16 parameters, AdamW). Synthetic data, seeded.
import { Tensor, nn, optim, type Device, type DType } from '../src/index.ts';

export interface Workload {
  readonly name: string;
  readonly what: string;
  /** one optimizer step: forward, loss, backward, update; returns the loss (not read back) */
  step(): Tensor;
  /** tokens (decoder) or images (CNN) one step consumes */
  readonly items: number;
  readonly itemName: string;
  dispose(): void;
}

export function cnnWorkload(device: Device, batch = 256): Workload {
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
  return {
    name: 'cnn',
    what: `CNN conv 1->32, pool, conv 32->64, pool, linear 3136->128->10; 28x28, batch ${batch}, f32, SGD momentum`,
    items: batch,
    itemName: 'images',
    step() {
      const loss = nn.crossEntropy(model.forward(x), y);
      loss.backward();
      opt.step();
      opt.zeroGrad();
      return loss;
    },
    dispose() {
      model.dispose();
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
    const gu = m('gateUp').forward(m('mlpNorm').forward(x1));
    const [g, u] = gu.chunk(2, -1) as [Tensor, Tensor];
    return x1.add(m('down').forward(g.silu().mul(u)));
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

export function decoderWorkload(device: Device, s: DecoderShape = DECODER_134M): Workload {
  nn.manualSeed(1);
  const model = new Decoder(s, { device, dtype: 'bf16' });
  const params = model.parameters();
  const nParams = params.reduce((n: number, p: Tensor) => n + p.numel, 0);
  const opt = new optim.AdamW(params, { lr: 3e-4, weightDecay: 0.1 });
  const ids = Tensor.randint(0, s.vocab, [s.batch, s.seq + 1], { seed: 4, device, dtype: 'i64' });
  const inp = ids.narrow(1, 0, s.seq).contiguous(),
    tgt = ids.narrow(1, 1, s.seq).contiguous().reshape([-1]);
  // rotary tables [t, d/2] (the halves layout), from the positions
  const d = s.dim / s.heads;
  const inv = Tensor.arange(0, d / 2, 1, { dtype: 'f32', device }).affine(-2 / d, 0);
  const ang = Tensor.arange(0, s.seq, 1, { dtype: 'f32', device })
    .unsqueeze(1)
    .mul(inv.affine(Math.log(10000), 0).exp().recip().unsqueeze(0));
  const cos = ang.cos().toDtype('bf16'),
    sin = ang.sin().toDtype('bf16');
  return {
    name: 'decoder',
    what:
      `Llama-style decoder, ${(nParams / 1e6).toFixed(0)}M parameters (${s.layers} layers, d ${s.dim}, ${s.heads} heads, ` +
      `ff ${s.ff} SwiGLU, vocab ${s.vocab}), sequence ${s.seq}, batch ${s.batch}, bf16, AdamW`,
    items: s.batch * s.seq,
    itemName: 'tokens',
    step() {
      const loss = nn.crossEntropy(model.run(inp, cos, sin), tgt);
      loss.backward();
      opt.step();
      opt.zeroGrad();
      return loss;
    },
    dispose() {
      model.dispose();
      for (const t of [ids, inp, tgt, inv, ang, cos, sin]) t.dispose();
    },
  };
}
