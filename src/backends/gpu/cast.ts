// GPU dtype casts (hip-src/cast.hip): one kernel per (from, to) pair, with the rounding and
// wrapping rules of roundTo in src/core/dtype.ts. A dense source takes the contiguous kernel, any
// other view the strided one; the result is always a new contiguous tensor.
import { DTYPE_INFO, type DType } from '../../core/dtype.ts';
import { RawTensor } from '../../device/raw-tensor.ts';
import { arg } from '../../runtime/kernels.ts';
import { ALL_DTYPES } from '../checks.ts';
import { mapUnroll, contigPerThread, eachGeom } from './copy.ts';

const FILE = 'cast.hip';
const ZERO = arg.i64(0);

/** kernel names per (from, to), built once; same-dtype entries are never used */
const NAMES = Object.fromEntries(
  ALL_DTYPES.map((f) => [
    f,
    Object.fromEntries(ALL_DTYPES.map((t) => [t, { contig: `cast_${f}_${t}`, strided: `cast_${f}_${t}_strided` }])),
  ]),
) as Record<DType, Record<DType, { contig: string; strided: string }>>;

/** x -> dtype as a new contiguous tensor; dtype !== x.dtype */
export function cast(x: RawTensor, dtype: DType): RawTensor {
  const dev = x.device;
  const y = RawTensor.empty(x.layout.shape, dtype, dev);
  const n = y.numel;
  if (n === 0) return y;
  try {
    const k = dev.kernels,
      s = dev.stream,
      names = NAMES[x.dtype][dtype],
      l = x.layout;
    const yp = arg.ptr(y.storage.ptrAt(0)),
      xp = arg.ptr(x.storage.ptrAt(0));
    if (l.isContiguous()) {
      const per = contigPerThread(Math.max(DTYPE_INFO[x.dtype].size, DTYPE_INFO[dtype].size), mapUnroll(x.device));
      k.launchContig(FILE, names.contig, n, per, s, [yp, xp, ZERO, arg.i64(l.offset), arg.u64(n)]);
    } else {
      eachGeom(
        names.contig,
        l.shape,
        [
          { strides: y.layout.strides, offset: 0 },
          { strides: l.strides, offset: l.offset },
        ],
        (g, work) => {
          k.launch1d(FILE, names.strided, work, s, [yp, xp, arg.bytes(g)]);
        },
      );
    }
  } catch (e) {
    y.dispose();
    throw e;
  }
  return y;
}
