// The temporaries of a gradient rule or a composed op: made through keep(), all disposed when
// the function returns or throws (what it returns is its own).
import type { RawTensor } from '../device/raw-tensor.ts';

export function scoped<T>(f: (keep: (t: RawTensor) => RawTensor) => T): T {
  const temps: RawTensor[] = [];
  try {
    return f((t) => {
      temps.push(t);
      return t;
    });
  } finally {
    for (const t of temps) t.dispose();
  }
}
