// Writing safetensors: one file, or shards of a bounded size plus the index that maps each
// tensor to its shard (the layout Hugging Face uses: <prefix>-00001-of-00003.safetensors and
// <prefix>.safetensors.index.json). Tensors are written in sorted name order, one tensor's
// bytes in host memory at a time, to a temporary name renamed into place once complete, so a
// failed save never leaves a truncated file under the real name.
import { mkdir, open, rename, unlink, type FileHandle } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { Tensor } from '../tensor/tensor.ts';
import { DTYPE_INFO } from '../core/dtype.ts';
import { SafetensorsError } from '../core/errors.ts';
import { FILE_NAME_OF } from './st-dtypes.ts';
import { buildHeader, type HeaderEntry } from './st-header.ts';

export interface ShardOptions {
  /** a shard closes before the tensor that would take it past this many data bytes (a larger
   *  tensor gets a shard of its own) */
  maxShardBytes: number;
  /** file names start with this (default 'model') */
  prefix?: string;
  /** written into every shard's __metadata__ and the index's metadata */
  metadata?: Record<string, string>;
}

/** one .safetensors file holding `tensors` (sorted by name) and string metadata */
export async function saveSafetensors(
  path: string,
  tensors: Readonly<Record<string, Tensor>>,
  metadata?: Record<string, string>,
): Promise<void> {
  const file = resolve(path);
  const names = checkTensors(file, tensors);
  checkMetadata(file, metadata);
  await writeOne(file, names, tensors, metadata);
}

/**
 * Shards by data size into `dir` (created if missing): <prefix>-0000i-of-0000n.safetensors and
 * <prefix>.safetensors.index.json. Returns the file names written, shards in order, the index last.
 */
export async function saveShardedSafetensors(
  dir: string,
  tensors: Readonly<Record<string, Tensor>>,
  opts: ShardOptions,
): Promise<string[]> {
  const folder = resolve(dir);
  const prefix = opts.prefix ?? 'model';
  if (prefix === '' || /[/\\]/.test(prefix))
    throw new SafetensorsError(`${folder}: shard prefix '${prefix}' must be a non-empty file name`);
  if (!Number.isSafeInteger(opts.maxShardBytes) || opts.maxShardBytes < 1) {
    throw new SafetensorsError(`${folder}: maxShardBytes must be a positive integer, got ${opts.maxShardBytes}`);
  }
  const names = checkTensors(folder, tensors);
  checkMetadata(folder, opts.metadata);

  const shards: string[][] = [];
  let current: string[] = [],
    bytes = 0;
  for (const name of names) {
    const size = byteSize(tensors[name]!);
    if (current.length > 0 && bytes + size > opts.maxShardBytes) {
      shards.push(current);
      current = [];
      bytes = 0;
    }
    current.push(name);
    bytes += size;
  }
  if (current.length > 0 || shards.length === 0) shards.push(current);

  await mkdir(folder, { recursive: true });
  const pad = (i: number) => String(i).padStart(5, '0');
  const files = shards.map((_, i) => `${prefix}-${pad(i + 1)}-of-${pad(shards.length)}.safetensors`);
  for (let i = 0; i < shards.length; i++) await writeOne(join(folder, files[i]!), shards[i]!, tensors, opts.metadata);
  const weightMap = Object.fromEntries(shards.flatMap((s, i) => s.map((name) => [name, files[i]!] as const)));
  const totalSize = names.reduce((a, n) => a + byteSize(tensors[n]!), 0);
  const indexName = `${prefix}.safetensors.index.json`;
  const index = { metadata: { ...opts.metadata, total_size: totalSize }, weight_map: weightMap };
  await writeAtomically(join(folder, indexName), (fh) => fh.writeFile(JSON.stringify(index, null, 2) + '\n'));
  return [...files, indexName];
}

async function writeOne(
  file: string,
  names: readonly string[],
  tensors: Readonly<Record<string, Tensor>>,
  metadata: Record<string, string> | undefined,
): Promise<void> {
  const entries: HeaderEntry[] = [];
  let offset = 0;
  for (const name of names) {
    const t = tensors[name]!,
      size = byteSize(t);
    entries.push({ name, dtype: FILE_NAME_OF[t.dtype], shape: t.shape, begin: offset, end: offset + size });
    offset += size;
  }
  const header = buildHeader(entries, metadata);
  await writeAtomically(file, async (fh) => {
    let position = await writeAll(fh, header, 0);
    for (const name of names) {
      const t = tensors[name]!;
      // toRawArray gives a fresh contiguous copy in row-major order, whatever t's layout
      const raw = await t.check('saveSafetensors').toRawArray();
      position = await writeAll(fh, new Uint8Array(raw.buffer, raw.byteOffset, raw.byteLength), position);
    }
  });
}

/** writes `bytes` at `position`; returns the position after them */
async function writeAll(fh: FileHandle, bytes: Uint8Array, position: number): Promise<number> {
  const MAX_WRITE = 1 << 30;
  for (let done = 0; done < bytes.length; ) {
    const { bytesWritten } = await fh.write(bytes, done, Math.min(MAX_WRITE, bytes.length - done), position + done);
    done += bytesWritten;
  }
  return position + bytes.length;
}

async function writeAtomically(file: string, write: (fh: FileHandle) => Promise<void>): Promise<void> {
  const tmp = `${file}.partial-${process.pid}-${Math.random().toString(36).slice(2, 8)}`;
  const fh = await open(tmp, 'w').catch((e: Error) => {
    throw new SafetensorsError(`${file}: cannot write (${e.message})`);
  });
  try {
    await write(fh);
    await fh.close();
    await rename(tmp, file);
  } catch (e) {
    await fh.close().catch(() => {});
    await unlink(tmp).catch(() => {});
    throw e;
  }
}

function byteSize(t: Tensor): number {
  return t.numel * DTYPE_INFO[t.dtype].size;
}

/** the names, sorted, after checking each is a live tensor under a name a header can hold */
function checkTensors(where: string, tensors: Readonly<Record<string, Tensor>>): string[] {
  const names = Object.keys(tensors).sort();
  for (const name of names) {
    const t: unknown = tensors[name];
    if (!(t instanceof Tensor)) throw new SafetensorsError(`${where}: '${name}' is not a Tensor`);
    if (name === '' || name === '__metadata__')
      throw new SafetensorsError(`${where}: '${name}' cannot be a tensor name in a safetensors header`);
    t.check(`saveSafetensors('${name}')`);
  }
  return names;
}

function checkMetadata(where: string, metadata: Record<string, string> | undefined): void {
  for (const [k, v] of Object.entries(metadata ?? {})) {
    if (typeof v !== 'string')
      throw new SafetensorsError(`${where}: metadata '${k}' must be a string, got ${typeof v}`);
  }
}
