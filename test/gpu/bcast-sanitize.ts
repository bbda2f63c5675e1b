// A short run of binary.hip's broadcast-rows kernels (binary_<op>_<DT>_rows) for
// compute-sanitizer: outputs of one vector, of a partial tile and of several blocks; inputs
// along the row, one value a row, both broadcast at once, over one and two row dims; a narrowed
// input whose rows stay 16-byte aligned; a number operand. Each result against the CPU
// reference. Run:
//   compute-sanitizer --tool memcheck node --import tsx test/gpu/bcast-sanitize.ts
//   compute-sanitizer --tool racecheck node --import tsx test/gpu/bcast-sanitize.ts
import { BINARY_OPS, type Tensor } from '../../src/index.ts';
import { randT } from '../helpers.ts';
import { SanitizeRun, tolOf } from './sanitize-check.ts';

const run = new SanitizeRun('bcast-sanitize');
const PAIRS: readonly [number[], number[]][] = [
  [[1, 8], [8]],
  [[37, 64], [64]],
  [
    [37, 64],
    [37, 1],
  ],
  [
    [3, 5, 40],
    [3, 1, 40],
  ],
  [
    [3, 5, 40],
    [5, 1],
  ],
  [
    [4, 1, 24],
    [1, 6, 24],
  ],
  [[300, 256], [256]],
];
for (const d of ['f32', 'f64', 'f16', 'bf16'] as const) {
  const t = tolOf(d);
  for (const op of BINARY_OPS) {
    // divisors kept away from 0
    const rhs = (s: number[]): Tensor => (op === 'div' ? randT(s, d, 0.5, 2) : randT(s, d));
    for (const [sa, sb] of PAIRS) {
      await run.same(
        `${op} ${d} [${sa.join(', ')}] with [${sb.join(', ')}]`,
        ([a, b]) => a!.binary(op, b!),
        [randT(sa, d), rhs(sb)],
        t,
      );
    }
    // columns 16..79 of [9, 96]: rows 96 elements apart, starting 16 in
    await run.same(
      `${op} ${d} columns 16..79 of [9, 96] with [64]`,
      ([a, b]) => a!.narrow(1, 16, 64).binary(op, b!),
      [randT([9, 96], d), rhs([64])],
      t,
    );
    await run.sameOne(`${op} ${d} [37, 64] with a number`, (a) => a.binary(op, 1.75), randT([37, 64], d), t);
  }
}
run.report();
