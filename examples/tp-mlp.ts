// Tensor parallelism: a Llama-style SwiGLU MLP split over 2 ranks gives the one-device result.
// gate and up are column-parallel (each rank holds half of the ff features, no communication),
// down is row-parallel (each rank multiplies its half, then one all-reduce sums the halves).
//
//   npx tsx examples/tp-mlp.ts                                   2 GPUs in one process (DeviceGroup)
//   npx rocm-tensor launch --nproc 2 -- npx tsx examples/tp-mlp.ts   one process per GPU
//
// With fewer than 2 GPUs (or no RCCL / NCCL) the same layers run over 2 ranks simulated on the CPU,
// where the all-reduce is a plain sum: the arithmetic is the same, no collective library runs.
import {
  Device,
  DeviceGroup,
  GatedMLP,
  Linear,
  ParallelGatedMLP,
  Tensor,
  initProcessGroup,
  rankSet,
  simulatedRanks,
  type DType,
  type RankSet,
} from '../src/index.ts';
import { loadNccl } from '../src/ffi/nccl.ts';

const HIDDEN = 512,
  FF = 1376,
  TOKENS = 8;
/** max |tp - reference| / max |reference| that counts as the same result */
const TOLERANCE: Partial<Record<DType, number>> = { f32: 1e-5, bf16: 2e-2 };

/** the same weights and input in every process: seeded, made on the CPU */
function weights(dtype: DType) {
  const gateUp = Tensor.randn([2 * FF, HIDDEN], { seed: 11 }).mul(1 / Math.sqrt(HIDDEN));
  const down = Tensor.randn([HIDDEN, FF], { seed: 12 }).mul(1 / Math.sqrt(FF));
  const x = Tensor.randn([TOKENS, HIDDEN], { seed: 13 });
  return { gateUp: gateUp.toDtype(dtype), down: down.toDtype(dtype), x: x.toDtype(dtype) };
}

async function relDiff(got: Tensor, want: Tensor): Promise<number> {
  const a = await got.toDtype('f32').to('cpu').toArray(),
    b = await want.toDtype('f32').to('cpu').toArray();
  let diff = 0,
    scale = 0;
  for (let i = 0; i < b.length; i++) {
    diff = Math.max(diff, Math.abs(Number(a[i]) - Number(b[i])));
    scale = Math.max(scale, Math.abs(Number(b[i])));
  }
  return diff / scale;
}

/** runs the split MLP on the ranks this process holds; `refDevice` computes the one-device result */
async function compare(what: string, ranks: RankSet, refDevice: Device, report: boolean): Promise<boolean> {
  let ok = true;
  for (const dtype of ['f32', 'bf16'] as const) {
    const w = weights(dtype);
    const tp = ParallelGatedMLP.fromFull(w.gateUp, w.down, ranks);
    const ys = tp.forward(ranks.devices.map((d) => w.x.to(d)));
    const ref = new GatedMLP(new Linear(w.gateUp.to(refDevice)), new Linear(w.down.to(refDevice))).forward(
      w.x.to(refDevice),
    );
    let worst = 0;
    for (const y of ys) worst = Math.max(worst, await relDiff(y, ref));
    const tol = TOLERANCE[dtype]!;
    ok &&= worst <= tol;
    if (report) {
      console.log(
        `${what}, ${dtype}, [${TOKENS}, ${HIDDEN}] -> ff ${FF} -> [${TOKENS}, ${HIDDEN}]: ` +
          `max |tp - one device| / max |one device| = ${worst.toExponential(2)} (tolerance ${tol}): ${worst <= tol ? 'match' : 'MISMATCH'}`,
      );
    }
  }
  return ok;
}

/** why two GPUs with a collectives library are not here, or null when they are */
function noTwoGpus(): string | null {
  const g = Device.bestGpu();
  if (!g) return 'no GPU';
  const n = g.kind === 'rocm' ? Device.rocmCount() : Device.cudaCount();
  if (n < 2) return `${n} GPU`;
  try {
    loadNccl(g.kind as 'rocm' | 'cuda');
  } catch (e) {
    return (e as Error).message.split('\n')[0]!;
  }
  return null;
}

let ok: boolean;
if (process.env.RANK !== undefined && process.env.WORLD_SIZE !== undefined) {
  const comm = await initProcessGroup();
  const label = `tensor parallel over ${comm.size} processes (${comm.library}, this rank on ${comm.device})`;
  ok = await compare(label, rankSet(comm), comm.device, comm.rank === 0);
  await comm.barrier();
  comm.destroy();
} else {
  const why = noTwoGpus();
  if (why === null) {
    const g0 = Device.bestGpu()!;
    const devs = [0, 1].map((i) => (g0.kind === 'rocm' ? Device.rocm(i) : Device.cuda(i)));
    const group = DeviceGroup.create(devs);
    ok = await compare(
      `tensor parallel over 2 GPUs (one process, ${group.library}: ${devs.join(' + ')})`,
      rankSet(group),
      devs[0]!,
      true,
    );
    group.destroy();
  } else {
    ok = await compare(
      `tensor parallel over 2 simulated ranks on the cpu (no 2 GPUs here: ${why})`,
      simulatedRanks(2),
      Device.cpu(),
      true,
    );
  }
}
if (!ok) process.exit(1);
