// One rank of the tensor-parallel model test (test/gpu/llama-tp.test.ts starts 2 or 4 under
// `rocm-tensor launch`): joins the job, loads the shard of each folder that splits over the job's
// ranks in each dtype, and writes its prefill logits and generated ids (eager, through the decode
// graph, sampled) to OUT/rank-R.json. A folder that does not split must be refused at load: the
// error is printed as `refused <folder>: <class>: <message>` for the test to check.
//   llama-tp-rank.ts OUT_DIR MODELS_ROOT
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { initProcessGroup } from '../../../src/index.ts';
import { PretrainedLlama } from '../../../src/models/pretrained.ts';
import { TP_DTYPES, TP_FOLDERS, splitsOver, tpRecord, type TpRun } from '../tp-data.ts';

const [outDir, root] = process.argv.slice(2) as [string, string];

async function main(): Promise<void> {
  const comm = await initProcessGroup({ timeoutMs: 120_000 });
  console.log(`joined: ${comm}`);
  const runs: TpRun[] = [];
  for (const spec of TP_FOLDERS) {
    if (!splitsOver(spec, comm.size)) {
      let loaded: PretrainedLlama;
      try {
        loaded = await PretrainedLlama.load(join(root, spec.name), { tp: comm, dtype: 'f32' });
      } catch (e) {
        console.log(`refused ${spec.name}: ${(e as Error).constructor.name}: ${(e as Error).message}`);
        continue;
      }
      loaded.dispose();
      throw new Error(`${spec.name} loaded over ${comm.size} ranks, but its heads do not split that way`);
    }
    for (const dtype of TP_DTYPES) {
      const m = await PretrainedLlama.load(join(root, spec.name), { tp: comm, dtype });
      // each rank seeds its draws differently: rank 0's must reach every rank
      runs.push(await tpRecord(m.model, spec.name, dtype, 7 + comm.rank));
      m.dispose();
    }
  }
  await comm.barrier({ timeoutMs: 60_000 });
  comm.destroy();
  writeFileSync(join(outDir, `rank-${comm.rank}.json`), JSON.stringify(runs));
  console.log(`rank ${comm.rank}: ${runs.length} runs written`);
}

main().catch((e: Error) => {
  console.error(e.stack ?? e.message);
  process.exit(1);
});
