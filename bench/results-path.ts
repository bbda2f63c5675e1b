// Where the benches write their JSON unless --json says otherwise:
// bench/results/<YYYY-MM-DD>-<gpu>[-<kind>].json, the date in UTC (as the JSON's own `date`) and
// the GPU's name as a slug ("NVIDIA H200" -> nvidia-h200). The folder is made on first write.
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, isAbsolute, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

export const RESULTS_DIR = fileURLToPath(new URL('./results/', import.meta.url));

/** lower case, runs of anything but letters and digits as one '-', none at either end */
export function slug(name: string): string {
  return (
    name
      .toLowerCase()
      .replace(/[^a-z0-9]+/g, '-')
      .replace(/^-+|-+$/g, '') || 'unknown'
  );
}

/** bench/results/<date>-<gpu>[-<kind>].json for a device named `gpuName` */
export function defaultResultsPath(gpuName: string, kind?: string, date = new Date()): string {
  const day = date.toISOString().slice(0, 10);
  return `${RESULTS_DIR}${day}-${slug(gpuName)}${kind ? `-${slug(kind)}` : ''}.json`;
}

/** writes `data` as indented JSON to `path`, making its folder; returns the path to print
 *  (relative to the working directory when it lies below it) */
export function writeResults(path: string, data: unknown): string {
  mkdirSync(dirname(path), { recursive: true });
  writeFileSync(path, JSON.stringify(data, null, 2) + '\n');
  const rel = relative(process.cwd(), path);
  return rel && !rel.startsWith('..') && !isAbsolute(rel) ? rel : path;
}
