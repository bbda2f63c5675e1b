// Runs bench/compare-torch.py on the same cases and timing rules (handed over as a JSON file)
// and reads back its JSON report. Never throws: a missing python, torch or GPU there is an
// error string in the report, shown under the table.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { BenchCase, TimingRules } from './cases.ts';

export interface TorchRow {
  readonly status: string;
  readonly medianMs?: number;
  readonly minMs?: number;
  readonly iters?: number;
  readonly hostUs?: number;
  readonly withSyncUs?: number;
  /** device bytes one call holds at its peak beyond its inputs (torch.cuda.max_memory_allocated) */
  readonly peakBytes?: number;
  readonly error?: string;
}

export interface TorchReport {
  readonly version: string | null;
  readonly device: string | null;
  readonly error: string | null;
  readonly rows: Readonly<Record<string, TorchRow>>;
}

const SCRIPT = fileURLToPath(new URL('./compare-torch.py', import.meta.url));

export function runTorch(python: string, cases: readonly BenchCase[], rules: TimingRules, quick: boolean): TorchReport {
  const dir = mkdtempSync(join(tmpdir(), 'rocm-tensor-bench-'));
  const file = join(dir, 'cases.json');
  writeFileSync(file, JSON.stringify({ quick, rules, cases }));
  console.log(`bench: running ${python} ${SCRIPT} (PyTorch, same cases and timing rules)`);
  try {
    const r = spawnSync(python, [SCRIPT, '--cases', file], {
      encoding: 'utf8',
      maxBuffer: 64 << 20,
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    if (r.error) return failed(`${python}: ${r.error.message}`);
    const text = r.stdout.trim();
    let parsed: Partial<TorchReport> & { rows?: Record<string, TorchRow> };
    try {
      parsed = JSON.parse(text.slice(text.indexOf('{'))) as typeof parsed;
    } catch {
      return failed(
        `compare-torch.py exited with ${r.status} and printed no JSON${text ? `: ${text.slice(0, 300)}` : ''}`,
      );
    }
    return {
      version: parsed.version ?? null,
      device: parsed.device ?? null,
      error: parsed.error ?? (r.status ? `exit status ${r.status}` : null),
      rows: parsed.rows ?? {},
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

function failed(error: string): TorchReport {
  return { version: null, device: null, error, rows: {} };
}
