// Reading tensor bytes out of an open file into memory we are given (a CPU tensor's host array,
// or a half of the pinned upload buffer), so no bytes are copied on the host beyond the read
// itself. Types the file stores narrower than ours are widened here, through a bounded scratch
// buffer, so host memory never grows with the tensor.
import type { FileHandle } from 'node:fs/promises';
import { SafetensorsError } from '../core/errors.ts';
import type { FillChunk } from '../runtime/staged-upload.ts';
import type { Widen } from './st-dtypes.ts';

/** Node refuses single reads of 2 GiB or more */
const MAX_READ = 1 << 30;
/** source bytes widened per step */
const WIDEN_SCRATCH = 4 << 20;

const LITTLE_ENDIAN = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;

/** where bytes come from, for error messages */
export interface ReadSource {
  readonly fh: FileHandle;
  readonly file: string;
  readonly tensor?: string;
}

function where(src: ReadSource): string {
  return src.tensor === undefined ? src.file : `${src.file}: tensor '${src.tensor}'`;
}

/** fills `into` with the file's bytes from `position`; a short file is an error naming it */
export async function readFully(src: ReadSource, into: Uint8Array, position: number): Promise<void> {
  let done = 0;
  while (done < into.length) {
    const len = Math.min(MAX_READ, into.length - done);
    const { bytesRead } = await src.fh.read(into, done, len, position + done);
    if (bytesRead === 0) {
      throw new SafetensorsError(
        `${where(src)}: the file ends at byte ${position + done}, ${into.length - done} bytes short of what was asked (truncated after it was opened?)`,
      );
    }
    done += bytesRead;
  }
}

/**
 * The fill of a tensor stored at `byteOffset` in the file: output byte ranges are read straight
 * into place, or, with `widen`, read into a scratch buffer and widened (signed types to i64
 * with the sign extended, u16 to u32). Output ranges start on an output element.
 */
export function tensorFill(src: ReadSource, byteOffset: number, widen: Widen | null): FillChunk {
  if (!LITTLE_ENDIAN)
    throw new SafetensorsError(`${where(src)}: safetensors data is little-endian and this host is not`);
  if (widen === null) return (into, off) => readFully(src, into, byteOffset + off);
  const inSize = { i32: 4, i16: 2, i8: 1, u16: 2 }[widen];
  const outSize = widen === 'u16' ? 4 : 8;
  let scratch: Uint8Array | null = null;
  return async (into, off) => {
    if (off % outSize !== 0 || into.length % outSize !== 0 || into.byteOffset % 4 !== 0) {
      throw new Error(
        `internal: widening fill of ${into.length} bytes at ${off} (view offset ${into.byteOffset}) is not element aligned`,
      );
    }
    scratch ??= new Uint8Array(WIDEN_SCRATCH);
    const total = into.length / outSize,
      step = WIDEN_SCRATCH / inSize;
    for (let k = 0; k < total; k += step) {
      const n = Math.min(step, total - k);
      const raw = scratch.subarray(0, n * inSize);
      await readFully(src, raw, byteOffset + (off / outSize + k) * inSize);
      const out = into.subarray(k * outSize, (k + n) * outSize);
      widenInto(widen, raw, out, n);
    }
  };
}

function widenInto(widen: Widen, raw: Uint8Array, out: Uint8Array, n: number): void {
  if (widen === 'u16') {
    new Uint32Array(out.buffer, out.byteOffset, n).set(new Uint16Array(raw.buffer, raw.byteOffset, n));
    return;
  }
  const from =
    widen === 'i32'
      ? new Int32Array(raw.buffer, raw.byteOffset, n)
      : widen === 'i16'
        ? new Int16Array(raw.buffer, raw.byteOffset, n)
        : new Int8Array(raw.buffer, raw.byteOffset, n);
  // an i64 as two 32-bit words, low first: the value's low bits, then its sign extended
  const words = new Int32Array(out.buffer, out.byteOffset, 2 * n);
  for (let i = 0; i < n; i++) {
    const v = from[i]!;
    words[2 * i] = v;
    words[2 * i + 1] = v >> 31;
  }
}
