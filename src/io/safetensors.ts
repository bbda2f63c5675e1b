// Safetensors checkpoints: open one file or a sharded set, list tensors from the headers alone,
// and load each tensor on its own, to the CPU or straight to a GPU. Files stay open until
// close(); a CPU load reads into the tensor's own array, a GPU load streams the file through
// the device's bounded pinned double buffer (Device.uploadStreamed), so host memory never
// holds a whole tensor or model.
import { open, type FileHandle } from 'node:fs/promises';
import { dirname, isAbsolute, relative, resolve, sep } from 'node:path';
import { Tensor, toDevice, type DeviceLike } from '../tensor/tensor.ts';
import { DTYPE_INFO, isDType, type DType } from '../core/dtype.ts';
import { SafetensorsError } from '../core/errors.ts';
import { fileDType } from './st-dtypes.ts';
import { readHeader, type HeaderEntry } from './st-header.ts';
import { readIndex, resolveSource } from './st-index.ts';
import { tensorFill } from './st-read.ts';
import { closeNames } from './suggest.ts';

export { saveSafetensors, saveShardedSafetensors, type ShardOptions } from './st-save.ts';

export interface TensorInfo {
  readonly name: string;
  /** the file's dtype name, e.g. 'BF16' */
  readonly dtype: string;
  readonly shape: readonly number[];
  /** absolute path of the file holding it */
  readonly file: string;
  /** where its bytes start, absolute in the file */
  readonly byteOffset: number;
  readonly byteLength: number;
  /** what load() gives without a dtype option (BOOL -> u8, I32/I16/I8 -> i64, U16 -> u32);
   *  null for dtypes that cannot be loaded (float8, U64) */
  readonly loadsAs: DType | null;
}

export interface LoadOptions {
  /** default: the CPU */
  device?: DeviceLike;
  /** converted on the device after upload (default: the file's dtype, see TensorInfo.loadsAs) */
  dtype?: DType;
}

interface OpenFile {
  readonly path: string;
  readonly fh: FileHandle;
}
interface Entry {
  readonly info: TensorInfo;
  readonly src: OpenFile;
}

export class Checkpoint {
  readonly files: readonly string[];
  readonly totalBytes: number;
  private closed = false;
  private readonly sorted: readonly string[];

  private constructor(
    /** the path the checkpoint was opened from (files, index or folder), for messages */
    readonly label: string,
    private readonly handles: readonly OpenFile[],
    private readonly table: ReadonlyMap<string, Entry>,
    /** the file's __metadata__; for an index, its "metadata" (values as strings, total_size
     *  among them) overlaid by each shard's __metadata__ */
    readonly metadata: Readonly<Record<string, string>>,
  ) {
    this.files = handles.map((h) => h.path);
    this.sorted = [...table.keys()].sort();
    let total = 0;
    for (const e of table.values()) total += e.info.byteLength;
    this.totalBytes = total;
  }

  /** a .safetensors file, a model.safetensors.index.json, or a folder holding model.safetensors
   *  or model.safetensors.index.json; reads the headers only */
  static async open(path: string): Promise<Checkpoint> {
    const source = await resolveSource(path);
    const opened: OpenFile[] = [];
    try {
      if (source.kind === 'file') {
        const f = await openFile(source.path, opened);
        const header = await readHeader(f.fh, f.path);
        const table = new Map(header.entries.map((e) => [e.name, entryOf(f, header.dataStart, e)] as const));
        return new Checkpoint(resolve(path), opened, table, header.metadata);
      }
      const index = await readIndex(source.path);
      const byShard = new Map<string, string[]>();
      for (const [name, shard] of index.weightMap) {
        const list = byShard.get(shard);
        if (list) list.push(name);
        else byShard.set(shard, [name]);
      }
      const table = new Map<string, Entry>();
      let metadata: Record<string, string> = { ...index.metadata };
      const folder = dirname(source.path);
      for (const [shard, names] of [...byShard].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
        const shardPath = resolve(folder, shard);
        // an index names files beside it: one that leads out of its folder is refused (links
        // inside the folder, as the Hugging Face cache makes them, are followed as usual)
        const rel = relative(folder, shardPath);
        if (rel === '' || rel === '..' || rel.startsWith(`..${sep}`) || isAbsolute(rel) || isAbsolute(shard))
          throw new SafetensorsError(
            `${source.path}: shard '${shard}' (holding '${names[0]}'${names.length > 1 ? ` and ${names.length - 1} more` : ''}) is outside the index's folder ${folder}: shards must be files in that folder`,
          );
        const f = await openFile(
          shardPath,
          opened,
          () =>
            `${source.path}: shard '${shard}' (holding '${names[0]}'${names.length > 1 ? ` and ${names.length - 1} more` : ''}) is missing: ${shardPath} does not exist`,
        );
        const header = await readHeader(f.fh, f.path);
        metadata = { ...metadata, ...header.metadata };
        const inShard = new Map(header.entries.map((e) => [e.name, e] as const));
        for (const name of names) {
          const e = inShard.get(name);
          if (!e)
            throw new SafetensorsError(
              `${source.path}: the index puts tensor '${name}' in '${shard}', but ${shardPath} has no such tensor`,
            );
          table.set(name, entryOf(f, header.dataStart, e));
        }
      }
      return new Checkpoint(resolve(path), opened, table, metadata);
    } catch (e) {
      await Promise.allSettled(opened.map((f) => f.fh.close()));
      throw e;
    }
  }

  /** tensor names, sorted */
  names(): string[] {
    return [...this.sorted];
  }
  has(name: string): boolean {
    return this.table.has(name);
  }
  info(name: string): TensorInfo {
    return this.entry(name, 'info').info;
  }

  /** reads one tensor into a new tensor on `opts.device` (the CPU by default) */
  async load(name: string, opts: LoadOptions = {}): Promise<Tensor> {
    const { info, src } = this.entry(name, 'load');
    if (this.closed) throw new SafetensorsError(`${this.label}: load('${name}') after close()`);
    if (opts.dtype !== undefined && !isDType(opts.dtype)) {
      throw new SafetensorsError(`${info.file}: load('${name}'): unknown dtype option '${String(opts.dtype)}'`);
    }
    const spec = fileDType(info.dtype)!;
    if (spec.target === null) {
      throw new SafetensorsError(
        `${info.file}: tensor '${name}' has dtype ${info.dtype}, which cannot be loaded: ${spec.why}`,
      );
    }
    const device = toDevice(opts.device);
    // the stream current at the call: the conversion after the upload's awaits must follow the
    // copies on it, wherever withStream scopes stand by then
    const stream = device.isCpu ? null : device.currentStream;
    const onStream = <T>(fn: () => T): T => (stream ? device.withStream(stream, fn) : fn());
    const raw = Tensor.empty(info.shape, spec.target, device);
    try {
      const fill = tensorFill({ fh: src.fh, file: info.file, tensor: name }, info.byteOffset, spec.widen);
      const size = DTYPE_INFO[spec.target].size,
        bytes = raw.numel * size;
      if (device.isCpu) {
        const host = raw.storage.host;
        await fill(new Uint8Array(host.buffer, host.byteOffset, bytes), 0);
      } else {
        await device.uploadStreamed((off) => raw.storage.ptrAt(off / size), bytes, fill);
      }
    } catch (e) {
      raw.dispose();
      throw e;
    }
    const dtype = opts.dtype;
    if (dtype === undefined || dtype === raw.dtype) return raw;
    return onStream(() => {
      const out = raw.toDtype(dtype);
      raw.dispose();
      return out;
    });
  }

  /** closes the files; load() fails afterwards (names and info still answer) */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await Promise.all(this.handles.map((f) => f.fh.close()));
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }

  private entry(name: string, op: string): Entry {
    const e = this.table.get(name);
    if (e) return e;
    const near = closeNames(name, this.sorted);
    const hint = near.length ? `; close names: ${near.map((n) => `'${n}'`).join(', ')}` : '';
    throw new SafetensorsError(
      `${this.label}: ${op}('${name}'): no tensor of that name (${this.sorted.length} tensors)${hint}`,
    );
  }
}

async function openFile(path: string, opened: OpenFile[], missing?: () => string): Promise<OpenFile> {
  const fh = await open(path, 'r').catch((e: NodeJS.ErrnoException) => {
    if (e.code === 'ENOENT' && missing) throw new SafetensorsError(missing());
    throw new SafetensorsError(`${path}: cannot open (${e.message})`);
  });
  const f = { path, fh };
  opened.push(f);
  return f;
}

function entryOf(f: OpenFile, dataStart: number, e: HeaderEntry): Entry {
  const info: TensorInfo = Object.freeze({
    name: e.name,
    dtype: e.dtype,
    shape: Object.freeze([...e.shape]),
    file: f.path,
    byteOffset: dataStart + e.begin,
    byteLength: e.end - e.begin,
    loadsAs: fileDType(e.dtype)!.target,
  });
  return { info, src: f };
}
