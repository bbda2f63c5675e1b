// Writes docs/ops.md, the op reference, from the op registry (npm run docs:ops). A CPU test fails
// when the committed page differs from what this makes.
import { writeFileSync } from 'node:fs';
import { registeredOps, type OpInfo } from '../src/ops/all.ts';

const DEVICES: Record<string, string> = { cpu: 'CPU', gpu: 'ROCm, CUDA' };
const GRAD: Record<OpInfo['grad'], string> = { none: 'not differentiable', missing: 'not yet', rule: 'yes' };

export function opsPage(): string {
  const ops = registeredOps();
  const families = [...new Set(ops.map((o) => o.family))].sort();
  const lines = [
    '# Op reference',
    '',
    'Generated from the op registry (`src/ops/`) by `npm run docs:ops`; do not edit by hand.',
    'Each op is declared once: its checks, the dtypes it takes, one implementation per backend and',
    'its gradient. "Names" are the Tensor methods (or static functions) that reach it.',
    'Every op runs on the CPU (the numerical reference) and on GPUs; the GPU code is the same for',
    'ROCm and CUDA, and has executed on NVIDIA GPUs only.',
    '',
  ];
  for (const f of families) {
    lines.push(
      `## ${f}`,
      '',
      '| op | names | dtypes | devices | gradient | what it does |',
      '|---|---|---|---|---|---|',
    );
    for (const o of ops.filter((x) => x.family === f)) {
      const devices = o.backends.map((b) => DEVICES[b]).join(', ');
      lines.push(
        `| \`${o.name}\` | ${o.variants.map((v) => `\`${v}\``).join(', ') || '(internal)'} | ${o.dtypes.join(', ')} | ${devices} | ${GRAD[o.grad]} | ${o.summary.replace(/\|/g, '\\|')} |`,
      );
    }
    lines.push('');
  }
  lines.push(`${ops.length} ops in ${families.length} families.`, '');
  return lines.join('\n');
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const path = new URL('../docs/ops.md', import.meta.url);
  writeFileSync(path, opsPage());
  process.stderr.write(`wrote ${path.pathname}\n`);
}
