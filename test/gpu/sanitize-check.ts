// The check the compute-sanitizer scripts share (test/gpu/*-sanitize.ts; the attention ones use
// sdpa-check.ts): an op runs on the CPU reference and on the GPU over the same inputs and the
// results are compared, so a run under memcheck or racecheck also shows wrong answers.
import { Device, type DType, type Tensor } from '../../src/index.ts';
import { relErr } from '../helpers.ts';

/** relative error a script allows: f32/f64 1e-5, the 16-bit types 1e-2 */
export const tolOf = (d: DType): number => (d === 'f32' || d === 'f64' ? 1e-5 : 1e-2);

export interface SameOptions {
  /** every value equal (ids, argmin/argmax), instead of a relative error */
  readonly exact?: boolean;
  /** the GPU result must have the reference's length */
  readonly sameLength?: boolean;
  /** no NaN in the GPU result */
  readonly noNaN?: boolean;
}

export class SanitizeRun {
  readonly dev: Device;
  private cases = 0;
  private worst = 0;

  constructor(readonly name: string) {
    const found = Device.bestGpu();
    if (!found) throw new Error(`${name}: no GPU`);
    this.dev = found;
  }

  /** run(ins) on the CPU inputs and on GPU copies of them (disposed after), compared */
  async same<I extends Tensor | null>(
    what: string,
    run: (ins: readonly I[]) => Tensor,
    ins: readonly I[],
    tol: number,
    o: SameOptions = {},
  ): Promise<void> {
    const want = Array.from(run(ins).toArraySync(), Number);
    // an absent input (null) stays absent on the GPU side
    const on = ins.map((t) => (t === null ? t : t.to(this.dev))) as I[];
    let got: number[];
    try {
      got = Array.from(await run(on).toArray(), Number);
    } finally {
      for (const t of on) t?.dispose();
    }
    const e = o.exact ? (got.every((v, i) => v === want[i]) ? 0 : Infinity) : relErr(got, want);
    if (!(e <= tol) || (o.sameLength && got.length !== want.length) || (o.noNaN && got.some((v) => Number.isNaN(v)))) {
      throw new Error(`${this.name} ${what}: relative error ${e}`);
    }
    this.worst = Math.max(this.worst, e);
    this.cases++;
  }

  /** same, for an op of one tensor */
  sameOne(what: string, run: (x: Tensor) => Tensor, x: Tensor, tol: number, o: SameOptions = {}): Promise<void> {
    return this.same(what, ([t]) => run(t!), [x], tol, o);
  }

  /** waits for the GPU, then prints the count and the worst error */
  report(): void {
    this.dev.synchronize();
    console.log(
      `${this.name}: ${this.cases} cases match the CPU reference (worst relative error ${this.worst.toExponential(2)})`,
    );
  }
}
