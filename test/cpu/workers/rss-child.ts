// One op on large CPU tensors, alone in a process: prints the rise of the peak RSS over the op
// (and the tensors it makes) as JSON, for test/cpu/cpu-memory.test.ts. Started with a full GC at
// hand (--expose-gc under Node, Bun.gc under Bun).
import { Tensor } from '../../../src/index.ts';
import { collectGarbage } from '../../runtime.ts';

const N = 2 ** 26;
const CASES: Record<string, () => Tensor[]> = {
  // the input and the output: 2 x 256 MiB
  add: () => {
    const x = Tensor.ones([N]);
    return [x, x.add(1)];
  },
  // a non-contiguous input (transposed) and a broadcast operand
  addTransposed: () => {
    const x = Tensor.ones([8192, 8192]).T;
    return [x, x.add(Tensor.ones([8192]))];
  },
  // a reduction keeps only its output: the input alone
  sum: () => {
    const x = Tensor.ones([4096, 4096]);
    return [x, x.sum(1), x.T.sum(0)];
  },
  softmax: () => {
    const x = Tensor.ones([4096, 4096]);
    return [x, x.softmax(-1)];
  },
  rmsNorm: () => {
    const x = Tensor.ones([4096, 4096]);
    return [x, x.rmsNorm(Tensor.ones([4096]), 1e-6)];
  },
  // 8 GiB of zeros: new memory is zero already, so no page is touched
  zeros31: () => [Tensor.zeros([2 ** 31])],
};

const name = process.argv[2] ?? '';
const make = CASES[name];
if (!make) throw new Error(`rss-child: unknown case '${name}' (known: ${Object.keys(CASES).join(', ')})`);
// warm up the library on small tensors (modules, JIT, WebAssembly), then measure
Tensor.ones([1024]).add(1).softmax(-1).sum().dispose();
collectGarbage();
const before = process.memoryUsage().rss;
let ts: Tensor[] = [],
  error: string | null = null;
try {
  ts = make();
} catch (e) {
  // a runtime that cannot hold the tensor must say so clearly (reported, checked by the test)
  error = `${(e as Error).name}: ${(e as Error).message}`;
}
const peak = process.resourceUsage().maxRSS * 1024;
console.log(JSON.stringify({ name, before, peak, rise: peak - before, shapes: ts.map((t) => t.shape), error }));
