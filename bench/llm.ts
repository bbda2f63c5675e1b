// npm run bench:llm -- --model DIR [--new 256] [--prompt 128] [--torch] [--python CMD] [--json PATH]
//
// A Llama-family model from a Hugging Face folder at batch 1: load time (GB/s, peak RSS),
// prefill tokens/s for a prompt of random ids, greedy decode tokens/s, and decode against the
// HBM bound (weight and KV-cache bytes read per token over the device copy bandwidth measured in
// the same run). With --torch, scripts/llm/torch_bench.py runs the same prompt through
// transformers on the same GPU (eager with a static cache and SDPA; and the decode step
// replayed from a CUDA graph) and the table shows both. The JSON goes to
// bench/results/<date>-<gpu>-llm-<model folder>.json unless --json says where.
import { parseArgs } from 'node:util';
import { spawnSync } from 'node:child_process';
import { basename, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import Table from 'cli-table3';
import { Device } from '../src/index.ts';
import { PretrainedLlama } from '../src/models/pretrained.ts';
import { generateIds, type GenerateTimings } from '../src/models/generate.ts';
import { measureCopyGBs } from './ours.ts';
import { defaultResultsPath, writeResults } from './results-path.ts';
import { tableStyle } from '../src/cli/colour.ts';

const { values: opt } = parseArgs({
  options: {
    model: { type: 'string' },
    new: { type: 'string', default: '256' },
    prompt: { type: 'string', default: '128' },
    torch: { type: 'boolean', default: false },
    python: { type: 'string', default: 'python3' },
    json: { type: 'string' },
  },
});
if (!opt.model) {
  console.error(
    'usage: npm run bench:llm -- --model DIR [--new 256] [--prompt 128] [--torch] [--python CMD] [--json PATH]',
  );
  process.exit(2);
}
const dev = Device.bestGpu();
if (!dev) {
  console.log('bench:llm: no ROCm or CUDA device found; nothing to measure');
  process.exit(0);
}
const nNew = Number(opt.new),
  nPrompt = Number(opt.prompt);

// the copy ceiling, measured now
const copyGBs = measureCopyGBs(dev);
dev.emptyCache();

let peakRss = process.memoryUsage().rss;
const rssTimer = setInterval(() => {
  peakRss = Math.max(peakRss, process.memoryUsage().rss);
}, 20);
const t0 = performance.now();
const pretrained = await PretrainedLlama.load(opt.model, { device: dev, dtype: 'bf16' });
const model = pretrained.model;
dev.synchronize();
const loadSeconds = (performance.now() - t0) / 1e3;
clearInterval(rssTimer);
const c = model.config;
const weightBytes = model.weightBytes();
// a seeded prompt of ids in [0, vocab): the same one goes to PyTorch
let s = 12345;
const prompt = Array.from({ length: nPrompt }, () => {
  s = (Math.imul(s, 1103515245) + 12345) >>> 0;
  return s % c.vocabSize;
});

async function run(n: number, graph: boolean): Promise<{ t: GenerateTimings; ids: number[] }> {
  const t: GenerateTimings = { prefillTokens: 0, prefillSeconds: 0, decodeTokens: 0, decodeSeconds: 0 };
  const ids: number[] = [];
  for await (const st of generateIds(model, [prompt], { maxTokens: n, stopIds: [], graph }, t)) ids.push(st.ids[0]!);
  return { t, ids };
}
await run(8, false); // warm-up: BLAS handles and heuristics, kernel modules
await run(8, true);
const ours = await run(nNew, false);
const oursGraph = await run(nNew, true);
// bytes read per decoded token: every weight except the embedding table (one row is read), the
// head (read whole), and the KV cache up to the average position
const embedBytes = c.vocabSize * c.hiddenSize * 2;
const perTokenWeights = weightBytes - embedBytes + (c.tieEmbeddings ? embedBytes : 0);
const avgLen = nPrompt + nNew / 2;
const kvBytes = 2 * c.layers * c.kvHeads * c.headDim * avgLen * 2;
const boundTokS = (copyGBs * 1e9) / (perTokenWeights + kvBytes);
const oursDecode = ours.t.decodeTokens / ours.t.decodeSeconds;
const oursPrefill = ours.t.prefillTokens / ours.t.prefillSeconds;
const graphDecode = oursGraph.t.decodeTokens / oursGraph.t.decodeSeconds;
const graphPrefill = oursGraph.t.prefillTokens / oursGraph.t.prefillSeconds;
model.dispose();
dev.emptyCache();

interface TorchRun {
  prefillTokensPerS: number;
  decodeTokensPerS: number;
  ids: number[];
}
interface TorchOut {
  loadSeconds: number;
  torch: string;
  transformers: string;
  eager?: TorchRun;
  graph?: TorchRun;
  graphError?: string;
}
let torch: TorchOut | null = null,
  torchError: string | null = null;
if (opt.torch) {
  const script = fileURLToPath(new URL('../scripts/llm/torch_bench.py', import.meta.url));
  const r = spawnSync(opt.python!, [script, opt.model, '--ids', prompt.join(','), '--new', String(nNew)], {
    encoding: 'utf8',
    maxBuffer: 64 << 20,
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const text = (r.stdout ?? '').trim();
  try {
    torch = JSON.parse(text.slice(text.lastIndexOf('\n{') + 1)) as TorchOut;
  } catch {
    torchError = `torch_bench.py exited ${r.status}: ${r.error?.message ?? text.slice(0, 300)}`;
  }
}

const gb = weightBytes / 1e9;
console.log(
  `\nbench:llm ${opt.model} on ${dev} "${dev.runtime.info.name}": ${c.layers} layers, hidden ${c.hiddenSize}, ${(weightBytes / 2 / 1e9).toFixed(2)}B parameters (bf16), prompt ${nPrompt}, ${nNew} new tokens`,
);
console.log(
  `  copy ceiling ${copyGBs.toFixed(0)} GB/s; bytes per decoded token ${((perTokenWeights + kvBytes) / 1e9).toFixed(3)} GB; HBM bound ${boundTokS.toFixed(1)} tokens/s`,
);
console.log(
  `  load: ${loadSeconds.toFixed(2)} s (${(gb / loadSeconds).toFixed(2)} GB/s), peak RSS ${(peakRss / 2 ** 20).toFixed(0)} MiB${torch ? `; PyTorch load ${torch.loadSeconds.toFixed(2)} s` : ''}`,
);
const t = new Table({
  style: tableStyle(),
  head: [
    '',
    'prefill tok/s',
    'decode tok/s',
    'decode / HBM bound',
    'decode / PyTorch eager',
    'prefill / PyTorch eager',
  ],
});
const row = (name: string, pre: number, dec: number) =>
  t.push([
    name,
    pre.toFixed(0),
    dec.toFixed(1),
    `${((100 * dec) / boundTokS).toFixed(0)}%`,
    torch?.eager ? (dec / torch.eager.decodeTokensPerS).toFixed(2) : '-',
    torch?.eager ? (pre / torch.eager.prefillTokensPerS).toFixed(2) : '-',
  ]);
row('rocm-tensor (eager)', oursPrefill, oursDecode);
row('rocm-tensor (decode graph replay)', graphPrefill, graphDecode);
if (torch?.eager)
  row('PyTorch eager (static cache, SDPA)', torch.eager.prefillTokensPerS, torch.eager.decodeTokensPerS);
if (torch?.graph) row('PyTorch + CUDA graph (decode)', torch.graph.prefillTokensPerS, torch.graph.decodeTokensPerS);
console.log(t.toString());
if (torch?.graphError) console.log(`  PyTorch CUDA graph: ${torch.graphError}`);
if (torchError) console.log(`  PyTorch: ${torchError}`);
if (torch?.eager) {
  const same = torch.eager.ids.every((id, i) => id === ours.ids[i]);
  console.log(
    `  ours eager and graph ids ${oursGraph.ids.every((id, i) => id === ours.ids[i]) ? 'equal' : 'differ'} over ${nNew} tokens`,
  );
  console.log(
    `  first 16 greedy ids ${same ? 'equal' : 'differ'} (ours ${ours.ids.slice(0, 16).join(',')}; PyTorch ${torch.eager.ids.join(',')})`,
  );
}
const written = writeResults(
  opt.json ?? defaultResultsPath(dev.runtime.info.name, `llm-${basename(resolve(opt.model))}`),
  {
    date: new Date().toISOString(),
    model: opt.model,
    device: String(dev),
    gpu: dev.runtime.info.name,
    prompt: nPrompt,
    new: nNew,
    copyGBs,
    weightBytes,
    boundTokS,
    loadSeconds,
    peakRssBytes: peakRss,
    ours: { prefillTokensPerS: oursPrefill, decodeTokensPerS: oursDecode, ids: ours.ids.slice(0, 16) },
    oursGraph: { prefillTokensPerS: graphPrefill, decodeTokensPerS: graphDecode, ids: oursGraph.ids.slice(0, 16) },
    torch,
    torchError,
  },
);
console.log(`bench:llm: wrote ${written}`);
