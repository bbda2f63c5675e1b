// The kernel sources in hip-src/ and their content hashes (source plus every header it
// includes, transitively). The build writes these hashes into kernels/manifest.json and the
// freshness test recomputes them, so a source edited without a rebuild fails CI.
import { createHash } from 'node:crypto';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';

export const HIP_SRC = new URL('../hip-src/', import.meta.url).pathname;

/** every compiled source file: hip-src/*.hip (headers are .h) */
export function kernelSources(dir = HIP_SRC): string[] {
  return readdirSync(dir)
    .filter((f) => f.endsWith('.hip'))
    .sort();
}

/** the local headers `file` includes, transitively, sorted */
export function localIncludes(file: string, dir = HIP_SRC): string[] {
  const seen = new Set<string>();
  const visit = (f: string): void => {
    const text = readFileSync(join(dir, f), 'utf8');
    for (const m of text.matchAll(/^\s*#\s*include\s+"([^"]+)"/gm)) {
      const h = m[1]!;
      if (!seen.has(h)) {
        seen.add(h);
        visit(h);
      }
    }
  };
  visit(file);
  return [...seen].sort();
}

/** sha256 over the file and its headers, each as name, NUL, content, NUL */
export function sourceHash(file: string, dir = HIP_SRC): string {
  const h = createHash('sha256');
  for (const f of [file, ...localIncludes(file, dir)]) {
    h.update(f)
      .update('\0')
      .update(readFileSync(join(dir, f)))
      .update('\0');
  }
  return h.digest('hex');
}
