// What `rocm-tensor selftest` prints: one line of counts per status and a table of the rows
// that went wrong, so a healthy device reads as one line instead of hundreds of rows; the full
// table of every (op, dtype) row with `all`.
import Table from 'cli-table3';
import { tableStyle } from './colour.ts';
import type { Row, Status } from './selftest.ts';

const STATUSES: readonly Status[] = ['pass', 'FAIL', 'error', 'not on this device yet'];

export function countLine(rows: readonly Row[]): string {
  const count = (s: Status) => rows.filter((r) => r.status === s).length;
  return `self-test: ${STATUSES.map((s) => `${count(s)} ${s}`).join(', ')} (${rows.length} rows)`;
}

function table(rows: readonly Row[], colour: boolean): string {
  const t = new Table({ head: ['op', 'dtype', 'max error', 'result'], style: tableStyle(colour) });
  for (const r of rows)
    t.push([
      r.op,
      r.dtype,
      Number.isNaN(r.maxErr) ? '-' : r.maxErr.toExponential(2),
      r.status + (r.detail ? `: ${r.detail.slice(0, 60)}` : ''),
    ]);
  return t.toString();
}

export interface ReportOptions {
  /** every row, not only the failing and erroring ones */
  readonly all: boolean;
  readonly colour: boolean;
}

export function formatSelftest(rows: readonly Row[], o: ReportOptions): string {
  const bad = rows.filter((r) => r.status === 'FAIL' || r.status === 'error');
  const out: string[] = [];
  if (o.all) out.push(table(rows, o.colour));
  else if (bad.length) out.push(`failing and erroring rows (${bad.length}):`, table(bad, o.colour));
  out.push(countLine(rows));
  if (!o.all) out.push('  (--all prints every row)');
  return out.join('\n');
}
