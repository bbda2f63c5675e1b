// Where a checkpoint's tensors are: a path given to Checkpoint.open is a .safetensors file, a
// sharded checkpoint's index (model.safetensors.index.json: {"metadata": {...}, "weight_map":
// {tensor: shard file}}), or a folder holding model.safetensors or that index.
import { readdir, readFile, stat } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { SafetensorsError } from '../core/errors.ts';

export const SINGLE_FILE = 'model.safetensors';
export const INDEX_FILE = 'model.safetensors.index.json';

export type Source =
  | { readonly kind: 'file'; readonly path: string }
  | { readonly kind: 'index'; readonly path: string };

/** what `path` names, as an absolute path */
export async function resolveSource(path: string): Promise<Source> {
  const abs = resolve(path);
  const st = await stat(abs).catch((e: NodeJS.ErrnoException) => {
    throw new SafetensorsError(
      e.code === 'ENOENT' ? `${abs}: no such file or folder` : `${abs}: cannot open (${e.message})`,
    );
  });
  if (!st.isDirectory()) return { kind: abs.endsWith('.json') ? 'index' : 'file', path: abs };
  for (const [name, kind] of [
    [SINGLE_FILE, 'file'],
    [INDEX_FILE, 'index'],
  ] as const) {
    if (
      await stat(join(abs, name)).then(
        (s) => s.isFile(),
        () => false,
      )
    )
      return { kind, path: join(abs, name) };
  }
  const found = (await readdir(abs)).filter((n) => n.includes('.safetensors')).sort();
  const held =
    found.length === 0
      ? 'it holds no .safetensors files'
      : `it holds ${found.slice(0, 5).join(', ')}${found.length > 5 ? ` and ${found.length - 5} more` : ''}: open one of those`;
  throw new SafetensorsError(`${abs}: folder has neither ${SINGLE_FILE} nor ${INDEX_FILE} (${held})`);
}

export interface Index {
  /** the index's "metadata", values as strings (total_size is a number there) */
  readonly metadata: Readonly<Record<string, string>>;
  /** tensor name -> shard file name as written in the index (relative to the index's folder) */
  readonly weightMap: ReadonlyMap<string, string>;
}

export async function readIndex(path: string): Promise<Index> {
  const text = await readFile(path, 'utf8');
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (e) {
    throw new SafetensorsError(`${path}: index is not valid JSON (${(e as Error).message})`);
  }
  if (!isRecord(parsed) || !isRecord(parsed.weight_map)) {
    throw new SafetensorsError(
      `${path}: not a safetensors index (expected {"metadata": {...}, "weight_map": {tensor: shard file}})`,
    );
  }
  const weightMap = new Map<string, string>();
  for (const [name, shard] of Object.entries(parsed.weight_map)) {
    if (typeof shard !== 'string' || shard === '')
      throw new SafetensorsError(
        `${path}: weight_map entry '${name}' must name a shard file, got ${JSON.stringify(shard)}`,
      );
    weightMap.set(name, shard);
  }
  const meta = isRecord(parsed.metadata) ? parsed.metadata : {};
  const metadata = Object.fromEntries(
    Object.entries(meta)
      .filter(([, v]) => v !== null && v !== undefined)
      .map(([k, v]) => [k, typeof v === 'string' ? v : JSON.stringify(v)]),
  );
  return { metadata, weightMap };
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
