// Loads the precompiled kernels for one device and launches them with argument buffers packed
// from the kernels' own parameter layout: the AMDGPU metadata note on ROCm, the driver
// (cuFuncGetParamInfo) or the PTX .entry signature on CUDA. Modules load lazily, once per
// Kernels instance (one per device); each kernel keeps one reusable packed buffer.
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { brotliDecompressSync, gunzipSync } from 'node:zlib';
import { NoKernelForArchError, TensorError } from '../errors.ts';
import { parseAmdCodeObject, parsePtxEntries } from '../ffi/codeobject.ts';
import type { DevicePtr, GpuFunction, GpuModule, GpuRuntime, GpuStream, KernelParam } from './gpu.ts';

/** One kernel argument. Pointers are device addresses; 64-bit integers take a bigint or a safe
 *  integer; `bytes` is a by-value struct (e.g. the 368-byte Geom from kernel-sigs.ts). */
export type KernelArg =
  | { readonly kind: 'ptr'; readonly value: DevicePtr }
  | { readonly kind: 'u32' | 'i32' | 'f32' | 'f64'; readonly value: number }
  | { readonly kind: 'u64' | 'i64'; readonly value: bigint | number }
  | { readonly kind: 'bytes'; readonly value: Uint8Array };
export type KernelArgKind = KernelArg['kind'];

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
    case 'u32': case 'i32': case 'f32': return 4;
    case 'ptr': case 'u64': case 'i64': case 'f64': return 8;
    case 'bytes': return a.value.length;
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
}

const describe = (p: KernelParam): string => `${p.size}-byte ${p.kind}`;
const describeArg = (a: KernelArg): string => `${a.kind} (${argSize(a)} bytes)`;

/** Throws, naming the kernel and the parameter, unless `args` fit `layout` one for one. */
export function checkArgs(layout: KernelLayout, args: readonly KernelArg[]): void {
  const where = `kernel ${layout.name} (${layout.file})`;
  if (args.length !== layout.params.length) {
    throw new TensorError(`${where} takes ${layout.params.length} arguments [${layout.params.map(describe).join(', ')}], got ${args.length} [${args.map(describeArg).join(', ')}]`);
  }
  layout.params.forEach((p, i) => {
    const a = args[i]!;
    const size = argSize(a);
    const kindOk = a.kind === 'ptr'
      ? p.kind === 'pointer' || (!layout.exactKinds && p.size === 8)
      : p.kind === 'value';
    if (size !== p.size || !kindOk) {
      throw new TensorError(`${where}: parameter ${i} at offset ${p.offset} is a ${describe(p)}, got ${describeArg(a)}`);
    }
  });
}

function checkInt(layout: KernelLayout, i: number, a: KernelArg, lo: bigint, hi: bigint): bigint {
  const v = a.value as bigint | number;
  if (typeof v === 'number' && !Number.isSafeInteger(v)) {
    throw new TensorError(`kernel ${layout.name} (${layout.file}): parameter ${i} (${a.kind}) must be an integer, got ${v}`);
  }
  const b = BigInt(v);
  if (b < lo || b > hi) throw new TensorError(`kernel ${layout.name} (${layout.file}): parameter ${i} (${a.kind}) out of range: ${b}`);
  return b;
}

/** Checks `args` against `layout` and writes them at their offsets into `buf` (little-endian). */
export function packArgs(layout: KernelLayout, args: readonly KernelArg[], buf: Uint8Array): void {
  checkArgs(layout, args);
  if (buf.length < layout.bytes) throw new TensorError(`kernel ${layout.name}: argument buffer of ${buf.length} bytes, needs ${layout.bytes}`);
  const dv = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
  layout.params.forEach((p, i) => {
    const a = args[i]!;
    const o = p.offset;
    switch (a.kind) {
      case 'ptr': dv.setBigUint64(o, checkInt(layout, i, a, 0n, 2n ** 64n - 1n), true); break;
      case 'u64': dv.setBigUint64(o, checkInt(layout, i, a, 0n, 2n ** 64n - 1n), true); break;
      case 'i64': dv.setBigInt64(o, checkInt(layout, i, a, -(2n ** 63n), 2n ** 63n - 1n), true); break;
      case 'u32': dv.setUint32(o, Number(checkInt(layout, i, a, 0n, 2n ** 32n - 1n)), true); break;
      case 'i32': dv.setInt32(o, Number(checkInt(layout, i, a, -(2n ** 31n), 2n ** 31n - 1n)), true); break;
      case 'f32': dv.setFloat32(o, a.value, true); break;
      case 'f64': dv.setFloat64(o, a.value, true); break;
      case 'bytes': buf.set(a.value, o); break;
    }
  });
}

// ---- manifest and code objects on disk ---------------------------------------------------

/** The parts of kernels/manifest.json the loader reads (scripts/build-kernels.ts writes it). */
export interface KernelManifest {
  readonly archs: readonly string[];
  readonly files: Readonly<Record<string, {
    /** per AMD arch (and 'ptx'): the code object's path relative to the kernels folder */
    readonly objects: Readonly<Record<string, { readonly path: string }>>;
  }>>;
}

/** kernels/ next to the package root: ROCM_TENSOR_KERNELS, else the first ancestor of this
 *  module holding kernels/manifest.json (works from src/ under tsx and from dist/). */
export function findKernelsDir(): string {
  const env = process.env['ROCM_TENSOR_KERNELS'];
  if (env) return env;
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    if (existsSync(join(dir, 'kernels', 'manifest.json'))) return join(dir, 'kernels');
    const up = dirname(dir);
    if (up === dir) throw new TensorError('kernels: no kernels/manifest.json found above ' + dirname(fileURLToPath(import.meta.url)) + ' (set ROCM_TENSOR_KERNELS)');
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
      layouts.set(k.name, { name: k.name, file, params: k.params, exactKinds: k.params.some((p) => p.kind === 'pointer'), bytes: k.paramBytes });
    }
  } else {
    for (const k of parseAmdCodeObject(image).kernels) {
      layouts.set(k.name, { name: k.name, file, params: k.params, exactKinds: true, bytes: endOf(k.params) });
    }
  }
  return layouts;
}

// ---- the launcher ---------------------------------------------------------------------------

interface LoadedKernel {
  readonly layout: KernelLayout;
  readonly fn: GpuFunction;
  readonly buf: Uint8Array;
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

  constructor(readonly rt: GpuRuntime, opts: KernelsOptions = {}) {
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
      throw new NoKernelForArchError(`kernels: no code object for ${vendor}:${index} "${name}" (${archFull}); kernels/ has ${have.join(', ')}${vendor === 'cuda' ? ' (PTX for compute_80 runs on sm_80 and newer)' : ''}`);
    }
    return key;
  }

  private load(file: string): LoadedFile {
    const have = this.files.get(file);
    if (have) return have;
    const entry = this.manifest.files[file];
    if (!entry) throw new TensorError(`kernels: no kernel source ${file} in ${join(this.dir, 'manifest.json')} (have ${Object.keys(this.manifest.files).join(', ')})`);
    const key = this.objectKey;
    const obj = entry.objects[key];
    if (!obj) throw new NoKernelForArchError(`kernels: ${file} has no code object for ${key} (has ${Object.keys(entry.objects).join(', ')})`);
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
    const fn = this.rt.moduleGetFunction(f.module, name);
    const fromDriver = this.rt.functionParams(fn);
    if (fromDriver) {
      // the driver's view wins, but it must agree with the image's on offsets and sizes
      const same = fromDriver.length === layout.params.length &&
        fromDriver.every((p, i) => p.offset === layout.params[i]!.offset && p.size === layout.params[i]!.size);
      if (!same) {
        throw new TensorError(`kernels: ${name} (${file}): the driver's parameter layout [${fromDriver.map((p) => `${p.offset}:${p.size}`).join(', ')}] differs from the code object's [${layout.params.map((p) => `${p.offset}:${p.size}`).join(', ')}]`);
      }
    }
    const k: LoadedKernel = { layout, fn, buf: new Uint8Array(Math.max(8, layout.bytes)) };
    f.kernels.set(name, k);
    return k;
  }

  /** the parameter layout a launch of `file`/`name` is checked against (loads the module) */
  params(file: string, name: string): KernelLayout {
    return this.kernel(file, name).layout;
  }

  launch(file: string, name: string, grid: Dim3, block: Dim3, sharedBytes: number, stream: GpuStream, args: readonly KernelArg[]): void {
    const k = this.kernel(file, name);
    packArgs(k.layout, args, k.buf);
    const { maxGridDim, maxThreadsPerBlock } = this.rt.info;
    const threads = block[0] * block[1] * block[2];
    if (threads < 1 || threads > maxThreadsPerBlock || grid.some((g, i) => g < 1 || g > maxGridDim[i]!)) {
      throw new TensorError(`kernel ${name} (${file}): launch grid [${grid.join(', ')}] block [${block.join(', ')}] is outside the device's limits (grid [${maxGridDim.join(', ')}], ${maxThreadsPerBlock} threads a block)`);
    }
    // the driver copies the buffer during the call, so the same buffer serves the next launch
    this.rt.launch(k.fn, grid, block, sharedBytes, stream, k.layout.bytes === k.buf.length ? k.buf : k.buf.subarray(0, k.layout.bytes));
  }

  /** a 1-D launch over `work` items with the preferred block and a capped grid (kernels must
   *  loop grid-stride, as all in hip-src/ do); nothing is launched for zero work */
  launch1d(file: string, name: string, work: number, stream: GpuStream, args: readonly KernelArg[]): void {
    if (work <= 0) return;
    const { grid, block } = this.grid1d(work);
    this.launch(file, name, grid, block, 0, stream, args);
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
  if (!k) { k = new Kernels(rt); perRuntime.set(rt, k); }
  return k;
}
