// The draws of one engine step: logits [rows, vocab], one row per sequence that samples. Rows
// of plain greedy requests (no penalties) are taken together, one argmax and one readback for
// all of them; every other request draws from its own row with its own sampler (its seed,
// temperature, top-k/top-p and token history). A row whose logits were not finite comes back as
// NONFINITE_ID.
import { Tensor } from '../tensor/tensor.ts';
import { Sampler, flagNonFinite, type VocabMask } from '../models/sampling.ts';
import type { Sequence } from './sequence.ts';

const GREEDY = new Sampler({ temperature: 0, seed: 0 });

export async function sampleRows(logits: Tensor, seqs: readonly Sequence[], mask: VocabMask | null): Promise<number[]> {
  const owned: Tensor[] = [];
  const own = (x: Tensor): Tensor => {
    owned.push(x);
    return x;
  };
  /** ids for `rows` of the logits drawn by `sampler`: their readback */
  const draw = (sampler: Sampler, rows: number[], seq: Sequence | null): Promise<ArrayLike<number | bigint>> => {
    const x =
      rows.length === logits.dim(0)
        ? logits
        : rows.length === 1
          ? own(logits.narrow(0, rows[0]!, 1))
          : own(logits.indexSelect(own(Tensor.from(Uint32Array.from(rows), { device: logits.device })), 0));
    const c = sampler.choose(x, undefined, { mask, history: seq?.history ?? null });
    seq?.history?.record(c.ids);
    own(c.ids);
    own(c.finite);
    return own(flagNonFinite(c)).toArray();
  };
  try {
    const out = new Array<number>(seqs.length);
    const plain: number[] = [];
    const reads: Promise<void>[] = [];
    seqs.forEach((s, i) => {
      if (s.sampler.greedy && !s.sampler.penalized) plain.push(i);
      else reads.push(draw(s.sampler, [i], s).then((h) => void (out[i] = Number(h[0]))));
    });
    if (plain.length > 0)
      reads.push(
        draw(GREEDY, plain, null).then((h) => {
          plain.forEach((row, j) => {
            out[row] = Number(h[j]);
          });
        }),
      );
    await Promise.all(reads);
    return out;
  } finally {
    for (const x of owned) x.dispose();
  }
}
