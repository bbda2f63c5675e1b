// One safetensors file's header: an 8-byte little-endian length N, then N bytes of JSON naming
// each tensor's dtype, shape and [begin, end) byte range in the data section that follows (at
// 8 + N). Reading checks everything that can be checked without the data: sizes against
// dtypes and shapes, ranges inside the file, no two tensors sharing bytes. Writing pads the
// JSON with spaces so the data section starts on a multiple of 8, as the reference writer does.
import type { FileHandle } from 'node:fs/promises';
import { SafetensorsError } from '../core/errors.ts';
import { fileDType, FILE_DTYPES } from './st-dtypes.ts';
import { readFully } from './st-read.ts';

/** the reference implementation refuses longer headers too: a longer one is a corrupt length */
export const MAX_HEADER_BYTES = 100_000_000;
const METADATA_KEY = '__metadata__';

export interface HeaderEntry {
  readonly name: string;
  /** the file's dtype name, e.g. 'BF16' */
  readonly dtype: string;
  readonly shape: readonly number[];
  /** relative to the start of the data section */
  readonly begin: number;
  readonly end: number;
}

export interface Header {
  readonly entries: readonly HeaderEntry[];
  readonly metadata: Readonly<Record<string, string>>;
  /** where the data section starts in the file (8 + N) */
  readonly dataStart: number;
}

const fail = (file: string, msg: string, tensor?: string): never => {
  throw new SafetensorsError(tensor === undefined ? `${file}: ${msg}` : `${file}: tensor '${tensor}': ${msg}`);
};

/** reads and checks the header of an open file (nothing past it is read) */
export async function readHeader(fh: FileHandle, file: string): Promise<Header> {
  const size = (await fh.stat()).size;
  if (size < 8)
    fail(file, `only ${size} bytes long, too short for a safetensors file (it starts with an 8-byte header length)`);
  const head = new Uint8Array(8);
  await readFully({ fh, file }, head, 0);
  const n = new DataView(head.buffer).getBigUint64(0, true);
  if (n > BigInt(MAX_HEADER_BYTES))
    fail(
      file,
      `header length ${n} is over the ${MAX_HEADER_BYTES}-byte limit: not a safetensors file, or a corrupt one`,
    );
  const len = Number(n);
  if (8 + len > size)
    fail(file, `header length ${len} runs past the end of the file (${size} bytes, so at most ${size - 8})`);
  const json = new Uint8Array(len);
  await readFully({ fh, file }, json, 8);
  return parseHeader(json, file, size - 8 - len);
}

/** checks the JSON header bytes of `file`, whose data section holds `dataBytes` bytes */
export function parseHeader(json: Uint8Array, file: string, dataBytes: number): Header {
  let text = '';
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(json);
  } catch {
    fail(file, 'header is not valid UTF-8');
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (e) {
    fail(file, `header is not valid JSON (${(e as Error).message})`);
  }
  if (!isRecord(parsed)) fail(file, `header is JSON but not an object of tensors (got ${kindOf(parsed)})`);
  const top = parsed as Record<string, unknown>;
  const entries: HeaderEntry[] = [];
  let metadata: Record<string, string> = {};
  for (const [name, value] of Object.entries(top)) {
    if (name === METADATA_KEY) metadata = checkMetadata(file, value);
    else entries.push(checkEntry(file, name, value, dataBytes));
  }
  checkOverlaps(file, entries);
  return { entries, metadata, dataStart: 8 + json.length };
}

function checkMetadata(file: string, value: unknown): Record<string, string> {
  if (!isRecord(value)) return fail(file, `${METADATA_KEY} must be an object of strings, got ${kindOf(value)}`);
  for (const [k, v] of Object.entries(value)) {
    if (typeof v !== 'string') fail(file, `${METADATA_KEY} value of '${k}' must be a string, got ${kindOf(v)}`);
  }
  return Object.fromEntries(Object.entries(value)) as Record<string, string>;
}

function checkEntry(file: string, name: string, value: unknown, dataBytes: number): HeaderEntry {
  if (!isRecord(value))
    return fail(file, `entry must be an object with dtype, shape and data_offsets, got ${kindOf(value)}`, name);
  const { dtype, shape, data_offsets: offsets } = value;
  if (typeof dtype !== 'string') return fail(file, `dtype must be a string, got ${kindOf(dtype)}`, name);
  const spec = fileDType(dtype);
  if (!spec) return fail(file, `unknown dtype '${dtype}' (known: ${Object.keys(FILE_DTYPES).join(' ')})`, name);
  if (!Array.isArray(shape) || !shape.every(isCount))
    return fail(file, `shape must be an array of non-negative integers, got ${JSON.stringify(shape)}`, name);
  if (!Array.isArray(offsets) || offsets.length !== 2 || !offsets.every(isCount) || offsets[0] > offsets[1]) {
    return fail(file, `data_offsets must be [begin, end] with 0 <= begin <= end, got ${JSON.stringify(offsets)}`, name);
  }
  const [begin, end] = offsets as [number, number];
  const dims = shape as number[];
  const want = dims.reduce((a, d) => a * d, spec.size);
  const got = end - begin;
  if (!Number.isSafeInteger(want) || want !== got) {
    fail(
      file,
      `shape [${dims.join(', ')}] of ${dtype} takes ${want} bytes but data_offsets [${begin}, ${end}] hold ${got}`,
      name,
    );
  }
  if (end > dataBytes) {
    fail(
      file,
      `data_offsets [${begin}, ${end}] run past the end of the data section (${dataBytes} bytes): the file is truncated or the offsets are wrong`,
      name,
    );
  }
  return { name, dtype, shape: dims, begin, end };
}

/** no two tensors may share a byte (empty tensors own none) */
function checkOverlaps(file: string, entries: readonly HeaderEntry[]): void {
  const byBegin = entries.filter((e) => e.end > e.begin).sort((a, b) => a.begin - b.begin);
  for (let i = 1; i < byBegin.length; i++) {
    const prev = byBegin[i - 1]!,
      cur = byBegin[i]!;
    if (cur.begin < prev.end) {
      fail(
        file,
        `tensors '${prev.name}' [${prev.begin}, ${prev.end}) and '${cur.name}' [${cur.begin}, ${cur.end}) overlap in the data section`,
      );
    }
  }
}

/**
 * The header bytes (length and JSON) for tensors laid out as given, padded with spaces so the
 * data section starts on a multiple of 8.
 */
export function buildHeader(
  entries: readonly HeaderEntry[],
  metadata: Readonly<Record<string, string>> | undefined,
): Uint8Array {
  // fromEntries defines own properties, so even a tensor named '__proto__' is written as one
  const obj = Object.fromEntries([
    ...(metadata && Object.keys(metadata).length > 0 ? [[METADATA_KEY, metadata] as const] : []),
    ...entries.map((e) => [e.name, { dtype: e.dtype, shape: e.shape, data_offsets: [e.begin, e.end] }] as const),
  ]);
  const json = new TextEncoder().encode(JSON.stringify(obj));
  const padded = json.length + ((8 - (json.length % 8)) % 8);
  const out = new Uint8Array(8 + padded).fill(0x20, 8 + json.length);
  new DataView(out.buffer).setBigUint64(0, BigInt(padded), true);
  out.set(json, 8);
  return out;
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
function isCount(v: unknown): v is number {
  return typeof v === 'number' && Number.isSafeInteger(v) && v >= 0;
}
function kindOf(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'an array';
  return typeof v === 'object' ? 'an object' : `${typeof v} ${JSON.stringify(v)}`;
}
