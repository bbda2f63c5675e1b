// The results table: time, throughput (GB/s for memory-bound ops, TFLOP/s for matmul), the
// share of the ceiling measured in the same run, and PyTorch's time and the ratio with --torch.
import Table from 'cli-table3';
import type { BenchKind } from './cases.ts';
import type { TorchReport } from './torch.ts';

export interface Row {
  readonly id: string;
  readonly op: string;
  /** the op column's text where the op's name alone would be ambiguous */
  readonly label: string | null;
  readonly kind: BenchKind;
  readonly shape: number[];
  /** matmul: the right operand's shape */
  readonly shapeB: number[] | null;
  readonly dtype: string;
  readonly to: string | null;
  readonly bytes: number;
  readonly flops: number;
  readonly sets: number;
  readonly status: 'ok' | 'not on this device yet' | 'failed';
  readonly medianMs?: number;
  readonly minMs?: number;
  readonly maxMs?: number;
  readonly iters?: number;
  /** host rows: microseconds per op queued, and including the final synchronize */
  readonly hostUs?: number;
  readonly withSyncUs?: number;
  /** device bytes one call holds at its peak beyond its inputs (timing.ts callPeakBytes) */
  readonly peakBytes?: number;
  readonly error?: string;
}

export interface Ceilings {
  copyGBs: number | null;
  /** write-only bandwidth (the driver's memset), what random-number rows are held to */
  writeGBs: number | null;
  gemmTFs: Record<string, number>;
}

export function fmtTime(ms: number): string {
  if (ms < 1) return `${(ms * 1e3).toFixed(ms < 0.01 ? 2 : 1)} us`;
  return `${ms.toFixed(ms < 10 ? 3 : 1)} ms`;
}

export function throughput(r: Row): { text: string; value: number | null } {
  if (r.status !== 'ok' || !r.medianMs) return { text: '', value: null };
  const s = r.medianMs / 1e3;
  if (r.kind === 'host') return { text: `${r.withSyncUs!.toFixed(2)} us/op with sync`, value: null };
  if (r.flops) {
    const v = r.flops / s / 1e12;
    return { text: `${v.toFixed(1)} TFLOP/s`, value: v };
  }
  const v = r.bytes / s / 1e9;
  return { text: `${v.toFixed(0)} GB/s`, value: v };
}

const writeOnly = (r: Row): boolean => r.op === 'rand' || r.op === 'randn';

function ceilingShare(r: Row, c: Ceilings): string {
  if (r.kind.startsWith('ceiling')) return 'ceiling';
  const t = throughput(r).value;
  if (t === null) return '';
  // f16 and bf16 matmul (and convolution, attention) share the tensor-core rate; f32 is held to the f32 GEMM
  const ref = r.flops ? (c.gemmTFs[r.dtype] ?? null) : writeOnly(r) ? c.writeGBs : c.copyGBs;
  return ref ? `${((100 * t) / ref).toFixed(0)}%` : '';
}

function opLabel(r: Row): string {
  if (r.kind.startsWith('ceiling') || r.kind === 'host') return r.id;
  if (r.label) return r.label;
  return r.to ? `${r.op} -> ${r.to}` : r.op;
}

export function printTable(rows: readonly Row[], ceilings: Ceilings, torch: TorchReport | null): void {
  const head = ['op', 'shape', 'dtype', 'time (median)', 'throughput', '% of ceiling'];
  if (torch) head.push('PyTorch', 'PyTorch / ours');
  // no rule between rows: one line per case
  const table = new Table({
    head,
    style: { head: [], border: [] },
    chars: { mid: '', 'left-mid': '', 'mid-mid': '', 'right-mid': '' },
  });
  for (const r of rows) {
    const special = r.kind.startsWith('ceiling') || r.kind === 'host';
    const line: string[] = [
      opLabel(r),
      special ? '' : `[${r.shape.join(', ')}]${r.shapeB ? ` x [${r.shapeB.join(', ')}]` : ''}`,
      special ? '' : r.dtype,
    ];
    if (r.status === 'ok') {
      line.push(
        r.kind === 'host' ? `${r.hostUs!.toFixed(2)} us/op` : fmtTime(r.medianMs!),
        throughput(r).text,
        ceilingShare(r, ceilings),
      );
    } else {
      line.push(r.status, '', '');
    }
    if (torch) {
      const t = torch.rows[r.id];
      if (!t || t.status !== 'ok') line.push(t ? t.status : '', '');
      else if (r.kind === 'host')
        line.push(`${t.hostUs!.toFixed(2)} us/op`, r.status === 'ok' ? (t.hostUs! / r.hostUs!).toFixed(2) : '');
      else line.push(fmtTime(t.medianMs!), r.status === 'ok' ? (t.medianMs! / r.medianMs!).toFixed(2) : '');
    }
    table.push(line);
  }
  console.log(table.toString());
  const w = ceilings.writeGBs
    ? `device write ${ceilings.writeGBs.toFixed(0)} GB/s (memset)`
    : 'device write: not measured';
  const c = `${ceilings.copyGBs ? `device copy ${ceilings.copyGBs.toFixed(0)} GB/s (read + written)` : 'device copy: not measured'}, ${w}`;
  const g = Object.entries(ceilings.gemmTFs)
    .map(([d, v]) => `${d} ${v.toFixed(1)}`)
    .join(', ');
  console.log(`ceilings, measured in this run: ${c}; library GEMM TFLOP/s: ${g || 'not measured'}`);
  console.log(
    'time: GPU time between device events around each op, median; memory ops: % of the copy ceiling (random numbers: of the write ceiling); matmul: % of the same-dtype GEMM ceiling',
  );
  if (torch) {
    console.log(
      'PyTorch / ours = PyTorch time / our time: >= 1.00 means we are as fast as PyTorch or faster; the host row compares host time per op',
    );
    console.log(torch.error ? `PyTorch comparison: ${torch.error}` : `PyTorch ${torch.version} on ${torch.device}`);
  }
  printPeaks(rows, torch);
  for (const r of rows) if (r.status !== 'ok' && r.error) console.log(`  ${r.id}: ${r.error}`);
}

const mib = (b: number): string => `${(b / 2 ** 20).toFixed(b < 2 ** 20 ? 3 : 1)} MiB`;

/** attention's memory beside its time: what one call holds at its peak besides its inputs
 *  (output and workspaces; the composed path's scores would be b * h * tq * tk elements) */
function printPeaks(rows: readonly Row[], torch: TorchReport | null): void {
  const shown = rows.filter((r) => r.op === 'attention' && r.status === 'ok' && r.peakBytes !== undefined);
  if (!shown.length) return;
  console.log('memory one call holds at its peak besides its inputs (output and workspaces):');
  for (const r of shown) {
    const t = torch?.rows[r.id];
    const theirs = t && t.status === 'ok' && t.peakBytes !== undefined ? `, PyTorch ${mib(t.peakBytes)}` : '';
    console.log(`  ${r.id}: ${mib(r.peakBytes!)}${theirs}`);
  }
}
