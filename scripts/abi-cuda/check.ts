// The CUDA ABI checker behind test/abi/cuda-*.test.ts: finds the CUDA headers and libraries on
// this machine (or the fixtures scripts/abi-cuda/fetch.sh caches), writes one C file that
// _Static_asserts each of our koffi prototypes, alias types, enum values and struct offsets
// against the real headers, compiles it with gcc, and reads libraries' dynamic symbol tables.
// Whatever is missing is reported as a reason to skip, never as a pass.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { cudaDirs } from '../../src/ffi/loader.ts';
import { protoName, type NativeAlias, type NativeTable } from '../../src/ffi/native.ts';

export const FIXTURES = join(process.env.ROCM_TENSOR_CACHE ?? join(homedir(), '.cache/rocm-tensor'), 'cuda-abi');

function globDirs(parent: string, prefix: string, sub: string): string[] {
  try {
    return readdirSync(parent)
      .filter((n) => n.startsWith(prefix))
      .sort()
      .reverse()
      .map((n) => join(parent, n, sub));
  } catch {
    return [];
  }
}

/** include folders that may hold CUDA, cuBLAS or cuDNN headers, most specific first */
export function includeDirs(): string[] {
  const env = [process.env.CUDA_HOME, process.env.CUDA_PATH]
    .filter((x): x is string => !!x)
    .map((p) => join(p, 'include'));
  const dirs = [
    ...env,
    '/usr/local/cuda/include',
    ...globDirs('/usr/local', 'cuda-', 'include'),
    join(FIXTURES, 'include'),
    '/usr/include',
    '/usr/include/x86_64-linux-gnu',
  ];
  return [...new Set(dirs)].filter((d) => existsSync(d));
}

/** the folder holding `header`, or null */
export function findHeader(header: string): string | null {
  return includeDirs().find((d) => existsSync(join(d, header))) ?? null;
}

/** the first existing file among `names` in the fixtures, the usual library folders and stubs/ */
export function findLibrary(names: readonly string[], envVar?: string): string | null {
  const override = envVar ? process.env[envVar] : undefined;
  if (override && existsSync(override)) return override;
  const dirs = [join(FIXTURES, 'lib'), ...cudaDirs(), ...cudaDirs().map((d) => join(d, 'stubs'))];
  for (const d of dirs) for (const n of names) if (existsSync(join(d, n))) return join(d, n);
  return null;
}

export function haveGcc(): boolean {
  return spawnSync('gcc', ['--version'], { encoding: 'utf8' }).status === 0;
}

/** exported dynamic symbols of a shared object (version suffixes dropped) */
export function dynamicSymbols(path: string): Set<string> {
  const r = spawnSync('nm', ['-D', '--defined-only', path], { encoding: 'utf8', maxBuffer: 256 << 20 });
  if (r.status !== 0) throw new Error(`nm -D ${path} failed: ${r.stderr}`);
  const out = new Set<string>();
  for (const line of r.stdout.split('\n')) {
    const name = line.trim().split(/\s+/)[2];
    if (name) out.add(name.split('@')[0]!);
  }
  return out;
}

// ---- C generation ---------------------------------------------------------------------------

const word = (s: string): RegExp => new RegExp(`\\b${s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\\b`, 'g');

/** our prototype, with aliases spelled as C and _Out_ markers dropped, as a function-pointer type */
export function pointerType(proto: string, aliases: readonly NativeAlias[]): string {
  let p = proto.replace(/\b_(Out|Inout|In)_\s+/g, '');
  for (const a of aliases) if (a.name !== a.c) p = p.replace(word(a.name), a.c);
  const name = protoName(p);
  return p.replace(new RegExp(`\\b${name}\\s*\\(`), '(*)(');
}

export interface CheckLine {
  readonly label: string;
}
export interface CheckSource {
  readonly source: string;
  readonly lines: readonly (CheckLine | undefined)[];
  readonly count: number;
}

export interface CheckSpec {
  readonly includes: readonly string[];
  readonly aliases: readonly NativeAlias[];
  readonly functions: NativeTable;
  readonly constants: Readonly<Record<string, number>>;
  /** struct name -> { size, fields: { member: offset } } */
  readonly structs?: Readonly<
    Record<string, { readonly size: number; readonly fields: Readonly<Record<string, number>> }>
  >;
}

/** one _Static_assert per line, so a compiler error's line number names what failed */
export function checkSource(spec: CheckSpec): CheckSource {
  const lines: (CheckLine | undefined)[] = [];
  const text: string[] = [];
  const raw = (s: string): void => {
    text.push(s);
    lines.push(undefined);
  };
  const add = (label: string, expr: string): void => {
    text.push(`_Static_assert(${expr}, ${JSON.stringify(label)});`);
    lines.push({ label });
  };
  raw('#include <stddef.h>');
  for (const inc of spec.includes) raw(`#include <${inc}>`);
  for (const a of spec.aliases) {
    const t = a.c;
    const size = a.cls === 'int64' || a.cls === 'uint64' || a.cls === 'pointer' ? 8 : 4;
    add(`alias ${a.name} = ${t}: ${size} bytes`, `sizeof(${t}) == ${size}`);
    if (a.cls === 'pointer') add(`alias ${a.name} = ${t}: a pointer`, `__builtin_classify_type((${t})0) == 5`);
    if (a.cls === 'int32' || a.cls === 'int64') add(`alias ${a.name} = ${t}: signed`, `(${t})-1 < 0`);
    if (a.cls === 'uint32' || a.cls === 'uint64') add(`alias ${a.name} = ${t}: unsigned`, `(${t})-1 > 0`);
  }
  for (const [key, f] of Object.entries(spec.functions)) {
    const header = f.checkAs ?? protoName(f.proto);
    add(key, `__builtin_types_compatible_p(__typeof__(&${header}), ${pointerType(f.proto, spec.aliases)})`);
  }
  for (const [name, value] of Object.entries(spec.constants))
    add(`${name} == ${value}`, `(long long)(${name}) == ${value}LL`);
  for (const [name, s] of Object.entries(spec.structs ?? {})) {
    add(`sizeof(${name}) == ${s.size}`, `sizeof(${name}) == ${s.size}`);
    for (const [m, off] of Object.entries(s.fields))
      add(`offsetof(${name}, ${m}) == ${off}`, `offsetof(${name}, ${m}) == ${off}`);
  }
  return { source: text.join('\n') + '\n', lines, count: lines.filter(Boolean).length };
}

export interface CompileResult {
  readonly ok: boolean;
  /** label -> compiler messages, for the generated checks that failed */
  readonly failures: ReadonlyMap<string, string[]>;
  /** errors not on a generated line (header trouble) */
  readonly stray: readonly string[];
  readonly stderr: string;
}

export function compileChecks(
  src: CheckSource,
  includeDirs: readonly string[],
  defines: readonly string[] = [],
): CompileResult {
  const dir = mkdtempSync(join(tmpdir(), 'rocm-tensor-cuda-abi-'));
  try {
    const file = join(dir, 'check.c');
    writeFileSync(file, src.source);
    const args = [
      '-std=gnu11',
      '-fsyntax-only',
      '-fmax-errors=0',
      ...defines.map((d) => `-D${d}`),
      ...includeDirs.map((d) => `-I${d}`),
      file,
    ];
    const r = spawnSync('gcc', args, { encoding: 'utf8', timeout: 120_000 });
    const failures = new Map<string, string[]>();
    const stray: string[] = [];
    for (const line of (r.stderr ?? '').split('\n')) {
      const m = /check\.c:(\d+):\d+: error: (.*)$/.exec(line);
      if (m) {
        const l = src.lines[Number(m[1]) - 1];
        if (!l) {
          stray.push(line);
          continue;
        }
        failures.set(l.label, [...(failures.get(l.label) ?? []), m[2]!]);
      } else if (/\berror\b/.test(line)) {
        stray.push(line);
      }
    }
    return { ok: r.status === 0 && failures.size === 0 && stray.length === 0, failures, stray, stderr: r.stderr ?? '' };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** object-like macros the headers define: name -> replacement (to spot symbols a header renames) */
export function objectMacros(includes: readonly string[], includeDirs: readonly string[]): Map<string, string> {
  const src = includes.map((i) => `#include <${i}>`).join('\n') + '\n';
  const r = spawnSync('gcc', ['-std=gnu11', '-E', '-dM', ...includeDirs.map((d) => `-I${d}`), '-x', 'c', '-'], {
    input: src,
    encoding: 'utf8',
    maxBuffer: 64 << 20,
  });
  if (r.status !== 0) throw new Error(`gcc -E -dM failed: ${r.stderr}`);
  const out = new Map<string, string>();
  for (const line of r.stdout.split('\n')) {
    const m = /^#define (\w+) (.*)$/.exec(line);
    if (m) out.set(m[1]!, m[2]!.trim());
  }
  return out;
}

export function formatFailures(r: CompileResult): string {
  return (
    [...r.failures].map(([k, v]) => `  ${k}: ${v.join(' | ')}`).join('\n') +
    (r.stray.length ? `\n  other errors:\n    ${r.stray.slice(0, 20).join('\n    ')}` : '')
  );
}
