// One rank of the tensor-parallel model test (test/gpu/llama-tp.test.ts starts two under
// `rocm-tensor launch`): joins the job, loads each folder's shard in each dtype, and writes its
// prefill logits and generated ids (eager, through the decode graph, sampled) to OUT/rank-R.json.
//   llama-tp-rank.ts OUT_DIR MODELS_ROOT
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { initProcessGroup, Tensor } from '../../../src/index.ts';
import { PretrainedLlama } from '../../../src/models/pretrained.ts';
import { generateIds, type GenerateOptions } from '../../../src/models/generate.ts';
import type { LlamaModel } from '../../../src/models/llama.ts';
import { TP_DTYPES, TP_FOLDERS, TP_NEW, TP_PROMPT, type TpRun } from '../tp-data.ts';

const [outDir, root] = process.argv.slice(2) as [string, string];

async function ids(m: LlamaModel, o: GenerateOptions): Promise<number[]> {
  const out: number[] = [];
  for await (const st of generateIds(m, [TP_PROMPT], { maxTokens: TP_NEW, stopIds: [], ...o })) out.push(st.ids[0]!);
  return out;
}

async function main(): Promise<void> {
  const comm = await initProcessGroup({ timeoutMs: 120_000 });
  console.log(`joined: ${comm}`);
  const runs: TpRun[] = [];
  for (const spec of TP_FOLDERS) {
    for (const dtype of TP_DTYPES) {
      const m = await PretrainedLlama.load(join(root, spec.name), { tp: comm, dtype });
      const c = m.model.newCache(1, TP_PROMPT.length);
      const l = m.model.forward(Tensor.from(TP_PROMPT, { dtype: 'u32', shape: [1, TP_PROMPT.length], device: comm.device }), c);
      const prefill = Array.from(await l.toArray(), Number);
      l.dispose(); c.dispose();
      runs.push({
        folder: spec.name, dtype, prefill,
        greedyEager: await ids(m.model, { graph: false }),
        greedyGraph: await ids(m.model, { graph: true }),
        sampledGraph: await ids(m.model, { graph: true, temperature: 0.8, topK: 50, seed: 7 + comm.rank }),
        weightBytes: m.model.weightBytes(),
      });
      m.dispose();
    }
  }
  await comm.barrier({ timeoutMs: 60_000 });
  comm.destroy();
  writeFileSync(join(outDir, `rank-${comm.rank}.json`), JSON.stringify(runs));
  console.log(`rank ${comm.rank}: ${runs.length} runs written`);
}

main().catch((e: Error) => { console.error(e.stack ?? e.message); process.exit(1); });
