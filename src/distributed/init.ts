// Several processes, one GPU each (torchrun's convention): RANK, WORLD_SIZE, LOCAL_RANK,
// MASTER_ADDR and MASTER_PORT say who is who; rank 0 makes the library's unique id and hands its
// bytes to the others through the TCP rendezvous (which also refuses ranks whose vendor or library
// version differ from rank 0's), then every rank joins with ncclCommInitRank on device LOCAL_RANK.
import { Device } from '../device/device.ts';
import { TensorError } from '../core/errors.ts';
import { loadNccl, NCCL_UNIQUE_ID_BYTES, type Nccl, type NcclUniqueId } from '../ffi/nccl.ts';
import { Communicator, type CommunicatorOptions } from './communicator.ts';
import { distEnvFrom, rendezvous, type DistEnv } from './rendezvous.ts';
import { ncclVersionText } from './nccl-types.ts';
import { CollectiveError } from './errors.ts';
import { setNativeEnvDefault } from '../ffi/libc-env.ts';

export interface InitOptions extends CommunicatorOptions {
  /** the ranks' variables; read from process.env when left out */
  readonly env?: DistEnv;
  /** this rank's GPU; default `rocm:LOCAL_RANK` where ROCm devices are present, else `cuda:LOCAL_RANK` */
  readonly device?: Device;
  /** how long the rendezvous waits for every rank; default 60 s */
  readonly rendezvousTimeoutMs?: number;
  /** internal, for tests: the collectives library to use instead of loading RCCL / NCCL */
  readonly nccl?: Nccl;
}

/** this process's rank of the job: resolves once every rank has joined */
export async function initProcessGroup(o: InitOptions = {}): Promise<Communicator> {
  const env = o.env ?? distEnvFrom();
  const device = o.device ?? deviceForLocalRank(env.localRank);
  if (device.kind === 'cpu')
    throw new TensorError('initProcessGroup: the cpu device has no collectives library; give a GPU device');
  // Connect every peer while the communicator is made (when all ranks are known to be alive),
  // not at the first collective: there, a peer that is alive but never calls in would block the
  // call itself, where no deadline can reach it. An explicit setting is left alone.
  setNativeEnvDefault('NCCL_RUNTIME_CONNECT', '0');
  const nccl = o.nccl ?? loadNccl(device.kind);
  const meta = `${device.kind} ${device.kind === 'rocm' ? 'RCCL' : 'NCCL'} ${ncclVersionText(nccl.version)}`;
  let payload: Uint8Array | undefined;
  if (env.rank === 0) {
    const id: [NcclUniqueId | null] = [null];
    nccl.check(nccl.fn.ncclGetUniqueId(id), 'ncclGetUniqueId', []);
    payload = Uint8Array.from(id[0]!.internal);
  }
  const bytes = await rendezvous({ ...env, payload, meta, timeoutMs: o.rendezvousTimeoutMs });
  if (bytes.length !== NCCL_UNIQUE_ID_BYTES) {
    throw new CollectiveError(
      `initProcessGroup on rank ${env.rank}: rank 0 sent ${bytes.length} bytes, not a ${NCCL_UNIQUE_ID_BYTES}-byte unique id`,
    );
  }
  const out: [bigint | null] = [null];
  device.runtime.callForeign(() =>
    nccl.check(
      nccl.fn.ncclCommInitRank(out, env.worldSize, { internal: Array.from(bytes) }, env.rank),
      'ncclCommInitRank',
      [env.worldSize, `<${NCCL_UNIQUE_ID_BYTES}-byte id>`, env.rank, `${device}`],
    ),
  );
  const handle = out[0];
  if (handle === null || handle === 0n)
    throw new CollectiveError(`initProcessGroup on rank ${env.rank}: ncclCommInitRank gave no communicator`);
  return new Communicator(nccl, handle, env.rank, env.worldSize, device, o);
}

/** the GPU of LOCAL_RANK, of the vendor present (ROCm first), with an error that says how many there are */
export function deviceForLocalRank(localRank: number): Device {
  const rocm = Device.rocmCount(),
    cuda = rocm > 0 ? 0 : Device.cudaCount();
  const [kind, n] = rocm > 0 ? (['rocm', rocm] as const) : (['cuda', cuda] as const);
  if (n === 0) throw new TensorError('initProcessGroup: no ROCm or CUDA device found; each rank needs a GPU');
  if (localRank >= n) {
    throw new TensorError(
      `initProcessGroup: LOCAL_RANK ${localRank} needs ${kind}:${localRank}, but this host has ${n} ${kind} device${n === 1 ? '' : 's'} ` +
        '(start at most one rank per GPU: rocm-tensor launch --nproc N)',
    );
  }
  return kind === 'rocm' ? Device.rocm(localRank) : Device.cuda(localRank);
}
