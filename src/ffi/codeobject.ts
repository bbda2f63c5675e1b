// Reads what a compiled kernel image says about its kernels, so launches are packed from the
// image itself: AMD code objects (ELF, NT_AMDGPU_METADATA note, msgpack) and PTX text (.entry
// signatures). Pure parsing, no driver calls; the manifest builder and the ABI tests use it too.
import { decode } from '@msgpack/msgpack';
/** A kernel's explicit parameters as the code object (or driver) describes them. */
export interface KernelParam {
  readonly offset: number;
  readonly size: number;
  readonly kind: 'pointer' | 'value';
}

/** one argument as the AMDGPU metadata lists it (explicit and hidden) */
export interface AmdKernelArg {
  readonly offset: number;
  readonly size: number;
  readonly valueKind: string;
  readonly addressSpace?: string;
}

export interface AmdKernelInfo {
  readonly name: string;
  readonly symbol: string;
  readonly args: readonly AmdKernelArg[];
  /** the explicit parameters, in order: what a launch must supply */
  readonly params: readonly KernelParam[];
  readonly kernargSegmentSize: number;
  readonly kernargSegmentAlign: number;
  readonly wavefrontSize: number;
  readonly sgprCount: number;
  readonly vgprCount: number;
  readonly agprCount: number;
  readonly sgprSpillCount: number;
  readonly vgprSpillCount: number;
  /** scratch bytes per work-item (spills and private arrays) */
  readonly privateSegmentSize: number;
  /** static LDS bytes */
  readonly groupSegmentSize: number;
  readonly maxFlatWorkgroupSize: number;
}

export interface AmdCodeObject {
  /** e.g. 'amdgcn-amd-amdhsa--gfx942' */
  readonly target: string;
  /** 'gfx942' */
  readonly arch: string;
  readonly kernels: readonly AmdKernelInfo[];
}

export class CodeObjectError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'CodeObjectError';
  }
}

const ELF_MAGIC = 0x464c457f;
const EM_AMDGPU = 0xe0;
const SHT_NOTE = 7;
const NT_AMDGPU_METADATA = 32;
const align4 = (n: number): number => (n + 3) & ~3;

/** true when the bytes start like an ELF file */
export function isElf(image: Uint8Array): boolean {
  return image.length >= 4 && new DataView(image.buffer, image.byteOffset, 4).getUint32(0, true) === ELF_MAGIC;
}

/** the descriptor of the first ELF note with this owner and type, from the section table */
export function findElfNote(image: Uint8Array, owner: string, type: number): Uint8Array | null {
  const dv = new DataView(image.buffer, image.byteOffset, image.byteLength);
  if (!isElf(image)) throw new CodeObjectError('code object: not an ELF file (bad magic)');
  if (dv.getUint8(4) !== 2 || dv.getUint8(5) !== 1)
    throw new CodeObjectError('code object: not a 64-bit little-endian ELF');
  const shoff = Number(dv.getBigUint64(0x28, true));
  const shentsize = dv.getUint16(0x3a, true);
  const shnum = dv.getUint16(0x3c, true);
  if (shoff + shnum * shentsize > image.length)
    throw new CodeObjectError(
      `code object: section table (${shnum} x ${shentsize} at ${shoff}) runs past the end of the ${image.length}-byte file`,
    );
  for (let s = 0; s < shnum; s++) {
    const sh = shoff + s * shentsize;
    if (dv.getUint32(sh + 4, true) !== SHT_NOTE) continue;
    const off = Number(dv.getBigUint64(sh + 0x18, true));
    const size = Number(dv.getBigUint64(sh + 0x20, true));
    let p = off;
    while (p + 12 <= off + size) {
      const namesz = dv.getUint32(p, true),
        descsz = dv.getUint32(p + 4, true),
        ntype = dv.getUint32(p + 8, true);
      const name = new TextDecoder().decode(image.subarray(p + 12, p + 12 + namesz)).replace(/\0+$/, '');
      const desc = p + 12 + align4(namesz);
      if (name === owner && ntype === type) return image.subarray(desc, desc + descsz);
      p = desc + align4(descsz);
    }
  }
  return null;
}

const num = (m: Record<string, unknown>, key: string, def?: number): number => {
  const v = m[key];
  if (typeof v === 'number') return v;
  if (typeof v === 'bigint') return Number(v);
  if (def !== undefined) return def;
  throw new CodeObjectError(`code object metadata: missing numeric field ${key}`);
};
const str = (m: Record<string, unknown>, key: string): string => {
  const v = m[key];
  if (typeof v !== 'string') throw new CodeObjectError(`code object metadata: missing string field ${key}`);
  return v;
};

/** explicit parameter kind from an AMDGPU value_kind; null for the hidden ones HIP fills in */
function explicitKind(valueKind: string, kernel: string): KernelParam['kind'] | null {
  if (valueKind.startsWith('hidden_')) return null;
  if (valueKind === 'by_value') return 'value';
  if (valueKind === 'global_buffer' || valueKind === 'dynamic_shared_pointer') return 'pointer';
  throw new CodeObjectError(
    `code object: kernel ${kernel} has an argument of value_kind ${valueKind}, which the launcher cannot pack`,
  );
}

/** Parses a raw AMDGPU code object (not an offload bundle) and returns its kernels. */
export function parseAmdCodeObject(image: Uint8Array): AmdCodeObject {
  const dv = new DataView(image.buffer, image.byteOffset, image.byteLength);
  if (isElf(image) && dv.getUint16(0x12, true) !== EM_AMDGPU) {
    throw new CodeObjectError(`code object: ELF machine ${dv.getUint16(0x12, true)} is not AMDGPU (${EM_AMDGPU})`);
  }
  const note = findElfNote(image, 'AMDGPU', NT_AMDGPU_METADATA);
  if (!note) throw new CodeObjectError('code object: no NT_AMDGPU_METADATA note (owner "AMDGPU")');
  const meta = decode(note) as Record<string, unknown>;
  const target = str(meta, 'amdhsa.target');
  const list = meta['amdhsa.kernels'];
  if (!Array.isArray(list)) throw new CodeObjectError('code object metadata: amdhsa.kernels is not a list');
  const kernels = list.map((k: Record<string, unknown>): AmdKernelInfo => {
    const name = str(k, '.name');
    const rawArgs = (k['.args'] ?? []) as Record<string, unknown>[];
    const args = rawArgs.map(
      (a): AmdKernelArg => ({
        offset: num(a, '.offset'),
        size: num(a, '.size'),
        valueKind: str(a, '.value_kind'),
        ...(typeof a['.address_space'] === 'string' ? { addressSpace: a['.address_space'] } : {}),
      }),
    );
    const params: KernelParam[] = [];
    for (const a of args) {
      const kind = explicitKind(a.valueKind, name);
      if (kind) params.push({ offset: a.offset, size: a.size, kind });
    }
    return {
      name,
      symbol: str(k, '.symbol'),
      args,
      params,
      kernargSegmentSize: num(k, '.kernarg_segment_size'),
      kernargSegmentAlign: num(k, '.kernarg_segment_align', 8),
      wavefrontSize: num(k, '.wavefront_size'),
      sgprCount: num(k, '.sgpr_count'),
      vgprCount: num(k, '.vgpr_count'),
      agprCount: num(k, '.agpr_count', 0),
      sgprSpillCount: num(k, '.sgpr_spill_count', 0),
      vgprSpillCount: num(k, '.vgpr_spill_count', 0),
      privateSegmentSize: num(k, '.private_segment_fixed_size', 0),
      groupSegmentSize: num(k, '.group_segment_fixed_size', 0),
      maxFlatWorkgroupSize: num(k, '.max_flat_workgroup_size', 1024),
    };
  });
  return { target, arch: target.replace(/^.*--/, '').split(':')[0]!, kernels };
}

// ---- PTX ------------------------------------------------------------------------------------

export interface PtxKernel {
  readonly name: string;
  readonly params: readonly KernelParam[];
  /** bytes a packed buffer must hold: end of the last parameter, no tail padding (the CUDA
   *  driver rejects a padded CU_LAUNCH_PARAM_BUFFER_SIZE) */
  readonly paramBytes: number;
}

const PTX_SCALAR_BITS = /^\.[bsuf](8|16|32|64)$/;

/** one `.param` declaration -> size and alignment; pointer when the PTX says `.ptr` */
function ptxParam(decl: string, kernel: string): { size: number; align: number; kind: KernelParam['kind'] } {
  const toks = decl.trim().split(/\s+/);
  if (toks[0] !== '.param')
    throw new CodeObjectError(`PTX: kernel ${kernel}: unexpected parameter declaration "${decl.trim()}"`);
  let elemBits = 0,
    align = 0,
    kind: KernelParam['kind'] = 'value';
  for (let i = 1; i < toks.length; i++) {
    const t = toks[i]!;
    const m = PTX_SCALAR_BITS.exec(t);
    if (m) elemBits = Number(m[1]);
    else if (t === '.align') align = Number(toks[++i]);
    else if (t === '.ptr') kind = 'pointer';
  }
  if (!elemBits) throw new CodeObjectError(`PTX: kernel ${kernel}: no type in parameter "${decl.trim()}"`);
  const count = /\[(\d+)\]\s*$/.exec(decl);
  const elem = elemBits / 8;
  return { size: elem * (count ? Number(count[1]) : 1), align: align || elem, kind };
}

/** Every `.entry` in a PTX module with its parameters laid out the way the driver packs them. */
export function parsePtxEntries(ptx: string): PtxKernel[] {
  const out: PtxKernel[] = [];
  const re = /\.entry\s+([A-Za-z_$][\w$]*)\s*\(([^)]*)\)/g;
  for (let m = re.exec(ptx); m; m = re.exec(ptx)) {
    const name = m[1]!;
    const decls = m[2]!
      .split(',')
      .map((s) => s.trim())
      .filter((s) => s.length > 0);
    const params: KernelParam[] = [];
    let end = 0;
    for (const d of decls) {
      const p = ptxParam(d, name);
      const offset = Math.ceil(end / p.align) * p.align;
      params.push({ offset, size: p.size, kind: p.kind });
      end = offset + p.size;
    }
    out.push({ name, params, paramBytes: end });
  }
  return out;
}
