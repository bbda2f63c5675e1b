// Loads the precompiled kernels for one device and launches them with argument buffers packed
// from the kernels' own parameter layout: the AMDGPU metadata note on ROCm, the driver
// (cuFuncGetParamInfo) or the PTX .entry signature on CUDA. Modules load lazily, once per
// Kernels instance (one per device); each kernel keeps one reusable packed buffer.
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { brotliDecompressSync, gunzipSync } from 'node:zlib';
import { NoKernelForArchError, TensorError } from '../core/errors.ts';
import { readEnv } from '../core/config.ts';
import { parseAmdCodeObject, parsePtxEntries } from '../ffi/codeobject.ts';
import type { DevicePtr, GpuFunction, GpuModule, GpuRuntime, GpuStream, KernelParam } from './gpu.ts';
import { tuningFor } from './tuning.ts';

/** One kernel argument. Pointers are device addresses; 64-bit integers take a bigint or a safe
 *  integer; `bytes` is a by-value struct (e.g. the 368-byte Geom from kernel-sigs.ts). */
export type KernelArg =
  | { readonly kind: 'ptr'; readonly value: DevicePtr }
  | { readonly kind: 'u32' | 'i32' | 'f32' | 'f64'; readonly value: number }
  | { readonly kind: 'u64' | 'i64'; readonly value: bigint | number }
  | { readonly kind: 'bytes'; readonly value: Uint8Array };
export type KernelArgKind = KernelArg['kind'];

/** most blocks a launch puts along x where a kernel loops over the rest: HIP wants a grid's
 *  threads along x below 2^32, so 2^24 blocks of up to 256 */
export const GRID_X_BLOCKS_MAX = 2 ** 24;

export const arg = {
  ptr: (value: DevicePtr): KernelArg => ({ kind: 'ptr', value }),
  u32: (value: number): KernelArg => ({ kind: 'u32', value }),
  i32: (value: number): KernelArg => ({ kind: 'i32', value }),
  u64: (value: bigint | number): KernelArg => ({ kind: 'u64', value }),
  i64: (value: bigint | number): KernelArg => ({ kind: 'i64', value }),
  f32: (value: number): KernelArg => ({ kind: 'f32', value }),
  f64: (value: number): KernelArg => ({ kind: 'f64', value }),
  bytes: (value: Uint8Array): KernelArg => ({ kind: 'bytes', value }),
} as const;

export function argSize(a: KernelArg): number {
  switch (a.kind) {
    case 'u32':
    case 'i32':
    case 'f32':
      return 4;
    case 'ptr':
    case 'u64':
    case 'i64':
    case 'f64':
      return 8;
    case 'bytes':
      return a.value.length;
  }
}

/** A kernel's parameter layout and where it came from. `exactKinds` is false where the source
 *  cannot tell a pointer from an 8-byte integer (PTX without `.ptr`, cuFuncGetParamInfo). */
export interface KernelLayout {
  readonly name: string;
  readonly file: string;
  readonly params: readonly KernelParam[];
  readonly exactKinds: boolean;
  /** end of the last parameter: the packed buffer's size */
  readonly bytes: number;
  /** the wave size the kernel was compiled for (AMD code objects' .wavefront_size) */
  readonly wave?: number;
}

const describe = (p: KernelParam): string => `${p.size}-byte ${p.kind}`;
const describeArg = (a: KernelArg): string => `${a.kind} (${argSize(a)} bytes)`;

/** Throws, naming the kernel and the parameter, unless `args` fit `layout` one for one. */
export function checkArgs(layout: KernelLayout, args: readonly KernelArg[]): void {
  const where = `kernel ${layout.name} (${layout.file})`;
  if (args.length !== layout.params.length) {
    throw new TensorError(
      `${where} takes ${layout.params.length} arguments [${layout.params.map(describe).join(', ')}], got ${args.length} [${args.map(describeArg).join(', ')}]`,
    );
  }
  layout.params.forEach((p, i) => {
    const a = args[i]!;
    const size = argSize(a);
    const kindOk = a.kind === 'ptr' ? p.kind === 'pointer' || (!layout.exactKinds && p.size === 8) : p.kind === 'value';
    if (size !== p.size || !kindOk) {
      throw new TensorError(
        `${where}: parameter ${i} at offset ${p.offset} is a ${describe(p)}, got ${describeArg(a)}`,
      );
    }
  });
}

const TWO32 = 4294967296;
const U64_MAX = (1n << 64n) - 1n;
const I64_MIN = -(1n << 63n);
const I64_MAX = (1n << 63n) - 1n;

function notInteger(layout: KernelLayout, i: number, a: KernelArg): never {
  throw new TensorError(
    `kernel ${layout.name} (${layout.file}): parameter ${i} (${a.kind}) must be an integer, got ${String(a.value)}`,
  );
}
function outOfRange(layout: KernelLayout, i: number, a: KernelArg): never {
  throw new TensorError(
    `kernel ${layout.name} (${layout.file}): parameter ${i} (${a.kind}) out of range: ${String(a.value)}`,
  );
}

/** where writeArgs puts the bytes: `dv` and `buf` view them; `big` views them as 64-bit words
 *  when the buffer is 8-byte aligned on a little-endian host (typed-array stores of a bigint
 *  are much cheaper than DataView.setBigUint64), else null */
interface ArgSink {
  readonly buf: Uint8Array;
  readonly dv: DataView;
  readonly big: { readonly u: BigUint64Array; readonly s: BigInt64Array } | null;
}

const LITTLE_ENDIAN = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;

function sinkFor(buf: Uint8Array): ArgSink {
  const dv = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
  const words = buf.byteOffset % 8 === 0 && LITTLE_ENDIAN;
  const n = Math.floor(buf.byteLength / 8);
  return {
    buf,
    dv,
    big: words
      ? { u: new BigUint64Array(buf.buffer, buf.byteOffset, n), s: new BigInt64Array(buf.buffer, buf.byteOffset, n) }
      : null,
  };
}

// A safe integer goes in as two 32-bit halves (floor(v / 2^32) is the two's-complement high
// word for negative values too), so the common case never converts to BigInt.
function put64(layout: KernelLayout, i: number, a: KernelArg, out: ArgSink, o: number, signed: boolean): void {
  const v = a.value as bigint | number;
  if (typeof v === 'number') {
    if (!Number.isSafeInteger(v)) notInteger(layout, i, a);
    if (!signed && v < 0) outOfRange(layout, i, a);
    out.dv.setUint32(o, v >>> 0, true);
    out.dv.setUint32(o + 4, Math.floor(v / TWO32) >>> 0, true);
    return;
  }
  if (signed ? v < I64_MIN || v > I64_MAX : v < 0n || v > U64_MAX) outOfRange(layout, i, a);
  const big = out.big;
  if (big !== null && (o & 7) === 0) {
    if (signed) big.s[o >> 3] = v;
    else big.u[o >> 3] = v;
  } else if (signed) {
    out.dv.setBigInt64(o, v, true);
  } else {
    out.dv.setBigUint64(o, v, true);
  }
}

function put32(layout: KernelLayout, i: number, a: KernelArg, dv: DataView, o: number, signed: boolean): void {
  const v = a.value as number;
  if (!Number.isSafeInteger(v)) notInteger(layout, i, a);
  if (signed) {
    if (v < -2147483648 || v > 2147483647) outOfRange(layout, i, a);
    dv.setInt32(o, v, true);
  } else {
    if (v < 0 || v > 4294967295) outOfRange(layout, i, a);
    dv.setUint32(o, v, true);
  }
}

/** Writes `args` (already matched to `layout` by checkArgs) at their offsets, checking each
 *  value's range. */
function writeArgs(layout: KernelLayout, args: readonly KernelArg[], out: ArgSink): void {
  const params = layout.params,
    dv = out.dv;
  for (let i = 0; i < params.length; i++) {
    const a = args[i]!,
      p = params[i]!,
      o = p.offset;
    switch (a.kind) {
      case 'ptr':
      case 'u64':
        put64(layout, i, a, out, o, false);
        break;
      case 'i64':
        put64(layout, i, a, out, o, true);
        break;
      case 'u32':
        put32(layout, i, a, dv, o, false);
        break;
      case 'i32':
        put32(layout, i, a, dv, o, true);
        break;
      case 'f32':
        dv.setFloat32(o, a.value, true);
        break;
      case 'f64':
        dv.setFloat64(o, a.value, true);
        break;
      case 'bytes':
        // the kinds may have been checked on an earlier launch; the length is this launch's
        if (a.value.length !== p.size) checkArgs(layout, args);
        out.buf.set(a.value, o);
        break;
    }
  }
}

/** Checks `args` against `layout` and writes them at their offsets into `buf` (little-endian). */
export function packArgs(layout: KernelLayout, args: readonly KernelArg[], buf: Uint8Array): void {
  checkArgs(layout, args);
  if (buf.length < layout.bytes)
    throw new TensorError(`kernel ${layout.name}: argument buffer of ${buf.length} bytes, needs ${layout.bytes}`);
  writeArgs(layout, args, sinkFor(buf));
}

/** true when `args` have exactly the kinds of an argument list checkArgs already accepted */
function sameKinds(kinds: readonly KernelArgKind[] | null, args: readonly KernelArg[]): boolean {
  if (kinds === null || kinds.length !== args.length) return false;
  for (let i = 0; i < kinds.length; i++) if (kinds[i] !== args[i]!.kind) return false;
  return true;
}

// ---- manifest and code objects on disk ---------------------------------------------------

/** The parts of kernels/manifest.json the loader reads (scripts/build-kernels.ts writes it). */
export interface KernelManifest {
  readonly archs: readonly string[];
  readonly files: Readonly<
    Record<
      string,
      {
        /** per AMD arch (and 'ptx'): the code object's path relative to the kernels folder */
        readonly objects: Readonly<Record<string, { readonly path: string }>>;
      }
    >
  >;
}

/** kernels/ next to the package root: ROCM_TENSOR_KERNELS, else the first ancestor of this
 *  module holding kernels/manifest.json (works from src/ under tsx and from dist/). */
export function findKernelsDir(): string {
  const env = readEnv('ROCM_TENSOR_KERNELS');
  if (env) return env;
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    if (existsSync(join(dir, 'kernels', 'manifest.json'))) return join(dir, 'kernels');
    const up = dirname(dir);
    if (up === dir)
      throw new TensorError(
        'kernels: no kernels/manifest.json found above ' +
          dirname(fileURLToPath(import.meta.url)) +
          ' (set ROCM_TENSOR_KERNELS)',
      );
    dir = up;
  }
}

export function readManifest(dir: string): KernelManifest {
  return JSON.parse(readFileSync(join(dir, 'manifest.json'), 'utf8')) as KernelManifest;
}

/** a committed code object, inflated when stored compressed (.br or .gz) */
export function readCodeObject(dir: string, path: string): Uint8Array {
  const raw = readFileSync(join(dir, path));
  const bytes = path.endsWith('.br') ? brotliDecompressSync(raw) : path.endsWith('.gz') ? gunzipSync(raw) : raw;
  return new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

/** the object key for a device: its gfx arch with feature suffixes stripped, or 'ptx' */
export function objectKeyFor(vendor: 'rocm' | 'cuda', arch: string): string | null {
  if (vendor === 'rocm') return arch.split(':')[0]!;
  const m = /^sm_(\d+)/.exec(arch);
  // the PTX targets compute_80: the driver JIT-compiles it for sm_80 and every newer GPU
  return m && Number(m[1]) >= 80 ? 'ptx' : null;
}

/** every kernel's layout in one code object ('ptx' or a gfx arch), as launches check it */
export function layoutsFromImage(key: string, file: string, image: Uint8Array): Map<string, KernelLayout> {
  const layouts = new Map<string, KernelLayout>();
  if (key === 'ptx') {
    for (const k of parsePtxEntries(new TextDecoder().decode(image))) {
      layouts.set(k.name, {
        name: k.name,
        file,
        params: k.params,
        exactKinds: k.params.some((p) => p.kind === 'pointer'),
        bytes: k.paramBytes,
      });
    }
  } else {
    for (const k of parseAmdCodeObject(image).kernels) {
      layouts.set(k.name, {
        name: k.name,
        file,
        params: k.params,
        exactKinds: true,
        bytes: endOf(k.params),
        wave: k.wavefrontSize,
      });
    }
  }
  return layouts;
}

// ---- the launcher ---------------------------------------------------------------------------

interface LoadedKernel {
  readonly layout: KernelLayout;
  readonly fn: GpuFunction;
  readonly sink: ArgSink;
  /** the first layout.bytes of the argument buffer: what the driver is handed */
  readonly packed: Uint8Array;
  /** the argument kinds of the last launch checkArgs accepted: a launch with the same kinds
   *  only has its values checked */
  kinds: KernelArgKind[] | null;
}
interface LoadedFile {
  readonly module: GpuModule;
  readonly layouts: ReadonlyMap<string, KernelLayout>;
  readonly kernels: Map<string, LoadedKernel>;
}

export interface KernelsOptions {
  /** folder holding manifest.json and the code objects (default: findKernelsDir()) */
  readonly dir?: string;
}

export type Dim3 = readonly [number, number, number];

export class Kernels {
  readonly dir: string;
  private manifestCache: KernelManifest | null = null;
  private readonly files = new Map<string, LoadedFile>();

  constructor(
    readonly rt: GpuRuntime,
    opts: KernelsOptions = {},
  ) {
    this.dir = opts.dir ?? findKernelsDir();
  }

  private get manifest(): KernelManifest {
    return (this.manifestCache ??= readManifest(this.dir));
  }

  /** Threads per block for 1-D elementwise launches: 256 (every kernel's launch bound,
   *  a multiple of both wave sizes), lowered to the device's limit rounded to its wave size. */
  get preferredBlockSize(): number {
    const { maxThreadsPerBlock, warpSize } = this.rt.info;
    const b = Math.min(256, maxThreadsPerBlock);
    return Math.max(warpSize, b - (b % warpSize));
  }

  /** grid and block for `work` independent items; every elementwise kernel loops grid-stride,
   *  so the grid is capped at what fills the device (about 32 blocks per multiprocessor). */
  grid1d(work: number, block = this.preferredBlockSize): { grid: Dim3; block: Dim3 } {
    const { multiprocessors, maxGridDim } = this.rt.info;
    const cap = Math.min(maxGridDim[0], Math.max(1, multiprocessors) * 32);
    const blocks = Math.max(1, Math.min(cap, Math.ceil(work / block)));
    return { grid: [blocks, 1, 1], block: [block, 1, 1] };
  }

  /** the key of this device's code objects ('gfx942', 'ptx'); throws NoKernelForArchError */
  get objectKey(): string {
    const { vendor, arch, archFull, index, name } = this.rt.info;
    const key = objectKeyFor(vendor, arch);
    const have = this.manifest.archs;
    if (!key || !have.includes(key)) {
      throw new NoKernelForArchError(
        `kernels: no code object for ${vendor}:${index} "${name}" (${archFull}); kernels/ has ${have.join(', ')}${vendor === 'cuda' ? ' (PTX for compute_80 runs on sm_80 and newer)' : ''}`,
      );
    }
    return key;
  }

  private load(file: string): LoadedFile {
    const have = this.files.get(file);
    if (have) return have;
    const entry = this.manifest.files[file];
    if (!entry)
      throw new TensorError(
        `kernels: no kernel source ${file} in ${join(this.dir, 'manifest.json')} (have ${Object.keys(this.manifest.files).join(', ')})`,
      );
    const key = this.objectKey;
    const obj = entry.objects[key];
    if (!obj)
      throw new NoKernelForArchError(
        `kernels: ${file} has no code object for ${key} (has ${Object.keys(entry.objects).join(', ')})`,
      );
    let image = readCodeObject(this.dir, obj.path);
    const layouts = layoutsFromImage(key, file, image);
    if (key === 'ptx' && image[image.length - 1] !== 0) {
      // cuModuleLoadData reads PTX as a NUL-terminated string
      const z = new Uint8Array(image.length + 1);
      z.set(image);
      image = z;
    }
    const loaded: LoadedFile = { module: this.rt.moduleLoad(image), layouts, kernels: new Map() };
    this.files.set(file, loaded);
    return loaded;
  }

  private kernel(file: string, name: string): LoadedKernel {
    const f = this.load(file);
    const have = f.kernels.get(name);
    if (have) return have;
    const layout = f.layouts.get(name);
    if (!layout) throw new TensorError(`kernels: ${file} has no kernel ${name}`);
    // the host sizes launches by the device's wave (tuning, block shapes) and kernels fix theirs
    // at compile time (flash.hip's key blocks): the two must agree
    const warp = this.rt.info.warpSize;
    if (layout.wave !== undefined && layout.wave !== warp) {
      throw new TensorError(
        `kernels: ${name} (${file}) was compiled for wave ${layout.wave}, but ${this.rt.info.archFull} runs wave ${warp}; rebuild kernels/ for this wave size`,
      );
    }
    const fn = this.rt.moduleGetFunction(f.module, name);
    const fromDriver = this.rt.functionParams(fn);
    if (fromDriver) {
      // the driver's view wins, but it must agree with the image's on offsets and sizes
      const same =
        fromDriver.length === layout.params.length &&
        fromDriver.every((p, i) => p.offset === layout.params[i]!.offset && p.size === layout.params[i]!.size);
      if (!same) {
        throw new TensorError(
          `kernels: ${name} (${file}): the driver's parameter layout [${fromDriver.map((p) => `${p.offset}:${p.size}`).join(', ')}] differs from the code object's [${layout.params.map((p) => `${p.offset}:${p.size}`).join(', ')}]`,
        );
      }
    }
    const buf = new Uint8Array(Math.max(8, layout.bytes));
    const k: LoadedKernel = { layout, fn, sink: sinkFor(buf), packed: buf.subarray(0, layout.bytes), kinds: null };
    f.kernels.set(name, k);
    return k;
  }

  /** whether launches of `file`/`name` may start before the kernel ahead of them ends (the
   *  runtime's startsEarly; loads the module) */
  startsEarly(file: string, name: string): boolean {
    return this.rt.startsEarly(this.kernel(file, name).fn);
  }

  /** the parameter layout a launch of `file`/`name` is checked against (loads the module) */
  params(file: string, name: string): KernelLayout {
    return this.kernel(file, name).layout;
  }

  launch(
    file: string,
    name: string,
    grid: Dim3,
    block: Dim3,
    sharedBytes: number,
    stream: GpuStream,
    args: readonly KernelArg[],
  ): void {
    const k = this.kernel(file, name);
    // the kinds are checked once per kernel (per kind list); values on every launch
    if (!sameKinds(k.kinds, args)) {
      checkArgs(k.layout, args);
      k.kinds = args.map((a) => a.kind);
    }
    writeArgs(k.layout, args, k.sink);
    const { maxGridDim, maxThreadsPerBlock } = this.rt.info;
    const threads = block[0] * block[1] * block[2];
    if (
      !(
        threads >= 1 &&
        threads <= maxThreadsPerBlock &&
        grid[0] >= 1 &&
        grid[0] <= maxGridDim[0] &&
        grid[1] >= 1 &&
        grid[1] <= maxGridDim[1] &&
        grid[2] >= 1 &&
        grid[2] <= maxGridDim[2]
      )
    ) {
      throw new TensorError(
        `kernel ${name} (${file}): launch grid [${grid.join(', ')}] block [${block.join(', ')}] is outside the device's limits (grid [${maxGridDim.join(', ')}], ${maxThreadsPerBlock} threads a block)`,
      );
    }
    // the driver copies the buffer during the call, so the same buffer serves the next launch
    this.rt.launch(k.fn, grid, block, sharedBytes, stream, k.packed);
  }

  /** a 1-D launch over `work` items with the preferred block and a capped grid (kernels must
   *  loop grid-stride, as all in hip-src/ do); nothing is launched for zero work */
  launch1d(file: string, name: string, work: number, stream: GpuStream, args: readonly KernelArg[]): void {
    if (work <= 0) return;
    const { grid, block } = this.grid1d(work);
    this.launch(file, name, grid, block, 0, stream, args);
  }

  /**
   * Threads per block of a contiguous elementwise launch: the vendor's (runtime/tuning.ts; on an
   * H200, exp f32 2^28 ran 2.6% faster at 64 than at 128). ROCM_TENSOR_CONTIG_BLOCK (64, 128 or
   * 256) overrides it, for tuning; capped at preferredBlockSize.
   */
  get contigBlockSize(): number {
    if (this.contigBlock === 0) {
      const want = readEnv('ROCM_TENSOR_CONTIG_BLOCK') ?? tuningFor(this.rt.vendor).contigBlock;
      this.contigBlock = Math.max(this.rt.info.warpSize, Math.min(want, this.preferredBlockSize));
    }
    return this.contigBlock;
  }
  private contigBlock = 0;

  /**
   * A launch of a contiguous elementwise kernel (the map*_contig loops of hip-src/elementwise.h)
   * over `n` elements, `perThread` of them a thread (vector width times vectors a thread): one
   * block per tile, so each thread issues all its loads at once and none loops. Blocks shrink
   * (to no less than a wave or 64 threads) while there would be fewer than two a multiprocessor,
   * so mid-sized tensors still spread over the whole device. The kernels loop grid-stride, so
   * the grid only sets the speed, never the result.
   */
  launchContig(
    file: string,
    name: string,
    n: number,
    perThread: number,
    stream: GpuStream,
    args: readonly KernelArg[],
  ): void {
    if (n <= 0) return;
    const { multiprocessors, maxGridDim, warpSize } = this.rt.info;
    const threads = Math.ceil(n / perThread);
    let block = this.contigBlockSize;
    const least = Math.max(64, warpSize);
    while (block >= 2 * least && Math.ceil(threads / block) < 2 * multiprocessors) block >>= 1;
    const blocks = Math.min(maxGridDim[0], Math.ceil(threads / block));
    this.launch(file, name, [blocks, 1, 1], this.blockDims(block), 0, stream, args);
  }

  private readonly blockCache = new Map<number, Dim3>();
  private blockDims(threads: number): Dim3 {
    let d = this.blockCache.get(threads);
    if (!d) {
      d = [threads, 1, 1];
      this.blockCache.set(threads, d);
    }
    return d;
  }

  /** unloads every module this instance loaded */
  dispose(): void {
    for (const f of this.files.values()) this.rt.moduleUnload(f.module);
    this.files.clear();
  }
}

function endOf(params: readonly KernelParam[]): number {
  return params.reduce((e, p) => Math.max(e, p.offset + p.size), 0);
}

const perRuntime = new WeakMap<GpuRuntime, Kernels>();
/** the one Kernels of a runtime, so each module loads once per device however many ops ask */
export function kernelsFor(rt: GpuRuntime): Kernels {
  let k = perRuntime.get(rt);
  if (!k) {
    k = new Kernels(rt);
    perRuntime.set(rt, k);
  }
  return k;
}
