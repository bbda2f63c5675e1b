// How a GPU op writes a tensor it has just made: the launch code gets a list for the temporary
// tensors it creates (contiguous copies, broadcast masks); they are released when it returns or
// throws, and so is the output when it throws, so a failed launch leaks nothing.
import type { RawTensor } from '../../device/raw-tensor.ts';
import { contiguous } from './copy.ts';

export function filled(out: RawTensor, fill: (temps: RawTensor[]) => void): RawTensor {
  const temps: RawTensor[] = [];
  try {
    fill(temps);
  } catch (e) {
    out.dispose();
    throw e;
  } finally {
    for (const t of temps) t.dispose();
  }
  return out;
}

/** t, or a contiguous copy of it kept in `temps` */
export function dense(t: RawTensor, temps: RawTensor[]): RawTensor {
  if (t.layout.isContiguous()) return t;
  const c = contiguous(t);
  temps.push(c);
  return c;
}
