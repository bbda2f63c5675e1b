// Where a decode step's time goes, on an NVIDIA GPU: loads a model folder (bf16), prefills a
// seeded prompt, captures the decode step as a graph (as generate does) and then
//   - times `--steps` replays (the step time, kernels and the gaps between them);
//   - brackets one more replay with cuProfilerStart/Stop, so that
//       ncu --profile-from-start off --clock-control none --metrics gpu__time_duration.sum --csv \
//         node --import tsx scripts/llm/profile-decode.ts --model DIR
//     lists that replay's kernels at the clocks a run has (ncu's default locks them to base).
// Usage: node --import tsx scripts/llm/profile-decode.ts --model DIR [--prompt 200] [--steps 64]
import { parseArgs } from 'node:util';
import koffi from 'koffi';
import { Device, Tensor } from '../../src/index.ts';
import { PretrainedLlama } from '../../src/models/pretrained.ts';
import { DecodeGraph } from '../../src/models/decode-graph.ts';
import { Sampler } from '../../src/models/sampling.ts';

const { values: opt } = parseArgs({
  options: {
    model: { type: 'string' },
    prompt: { type: 'string', default: '200' },
    steps: { type: 'string', default: '64' },
  },
});
if (!opt.model) throw new Error('usage: profile-decode.ts --model DIR [--prompt N] [--steps N]');
const dev = Device.bestGpu();
if (!dev || dev.kind !== 'cuda') throw new Error('profile-decode: needs a CUDA device (cuProfilerStart)');
const cuda = koffi.load('libcuda.so.1');
const profilerStart = cuda.func('int cuProfilerStart()'),
  profilerStop = cuda.func('int cuProfilerStop()');

const model = (await PretrainedLlama.load(opt.model, { device: dev, dtype: 'bf16' })).model;
const nPrompt = Number(opt.prompt),
  steps = Number(opt.steps);
let s = 12345;
const prompt = Array.from({ length: nPrompt }, () => {
  s = (Math.imul(s, 1103515245) + 12345) >>> 0;
  return s % model.config.vocabSize;
});
const cache = model.newCache(1, nPrompt + steps + 8);
const ids = Tensor.from(new Uint32Array(prompt), { shape: [1, nPrompt], device: dev });
const logits = model.forward(ids, cache, { lastOnly: true });
const sampler = new Sampler({ temperature: 0 });
const first = sampler.sample(logits.reshape([1, logits.dim(2)]));
const dg = new DecodeGraph(model, cache, sampler, first, steps + 4);
for (let i = 0; i < 3; i++) dg.replay();
dev.synchronize();
const t0 = performance.now();
for (let i = 0; i < steps; i++) dg.replay();
dev.synchronize();
const us = ((performance.now() - t0) * 1e3) / steps;
console.log(
  `profile-decode: ${steps} replays after ${nPrompt} prompt tokens: ${us.toFixed(1)} us a step (${(1e6 / us).toFixed(1)} tok/s)`,
);
profilerStart();
dg.replay();
dev.synchronize();
profilerStop();
dg.dispose();
