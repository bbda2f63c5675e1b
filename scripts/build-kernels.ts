// Compiles every hip-src/*.hip to one raw AMD code object per arch and to PTX (compute_80),
// brotli-compresses them into kernels/, and writes kernels/manifest.json. Run through
// scripts/build-hsaco.sh, which finds or builds the ROCm toolchain and sets:
//   KERNEL_CLANG   clang++ with the ROCm device libraries (path inside KERNEL_CHROOT if set)
//   KERNEL_CHROOT  a root to run KERNEL_CLANG in (the cached Debian-unstable root), or empty
//   KERNEL_NVCC    nvcc (default /usr/local/cuda/bin/nvcc; set to "none" to skip the PTX)
//   KERNEL_JOBS    parallel compiles (default: CPU count)
//   KERNEL_ONLY    comma list of sources to rebuild (others keep their manifest entries)
//   KERNEL_AMD     "none" skips the AMD code objects (PTX only)
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { basename, join } from 'node:path';
import { promisify } from 'node:util';
import { brotliCompressSync, constants as zc } from 'node:zlib';
import pLimit from 'p-limit';
import { parseAmdCodeObject, parsePtxEntries } from '../src/ffi/codeobject.ts';
import { HIP_SRC, kernelSources, localIncludes, sourceHash } from './kernel-sources.ts';

const run = promisify(execFile);
export const AMD_ARCHS = [
  'gfx90a',
  'gfx942',
  'gfx950',
  'gfx1030',
  'gfx1100',
  'gfx1101',
  'gfx1102',
  'gfx1200',
  'gfx1201',
] as const;
const OUT = new URL('../kernels/', import.meta.url).pathname;

const CLANG = process.env['KERNEL_CLANG'] ?? 'clang++';
const CHROOT = process.env['KERNEL_CHROOT'] ?? '';
const NVCC = process.env['KERNEL_NVCC'] ?? '/usr/local/cuda/bin/nvcc';
const JOBS = Number(process.env['KERNEL_JOBS'] ?? cpus().length);
const ONLY = (process.env['KERNEL_ONLY'] ?? '').split(',').filter(Boolean);
/** KERNEL_AMD=none: PTX only (a machine with nvcc and no ROCm compiler) */
const WITH_AMD = process.env['KERNEL_AMD'] !== 'none';

// -Werror: any warning is a build failure; the sources compile clean with -Wall -Wextra.
const AMD_FLAGS = [
  '-x',
  'hip',
  '--cuda-device-only',
  '--no-gpu-bundle-output',
  '-O3',
  '-std=c++17',
  '-Wall',
  '-Wextra',
  '-Werror',
  '-fno-gpu-rdc',
];
const PTX_FLAGS = ['-ptx', '-arch=compute_80', '-O3', '-std=c++17', '-x', 'cu', '-Werror', 'all-warnings'];

interface AmdKernelEntry {
  kernarg: number;
  params: number;
  wave: number;
  sgpr: number;
  vgpr: number;
  agpr: number;
  sgprSpill: number;
  vgprSpill: number;
  scratch: number;
  lds: number;
}
interface ObjectEntry {
  path: string;
  bytes: number;
  rawBytes: number;
  sha256: string;
  kernels: Record<string, unknown>;
}
interface FileEntry {
  hash: string;
  includes: string[];
  amdFlags: string[];
  objects: Record<string, ObjectEntry>;
}

/** extra AMD flags a source asks for with a `// amd-flags: ...` line (the reason sits beside it) */
function sourceAmdFlags(f: string): string[] {
  const m = /^\/\/ amd-flags:(.*)$/m.exec(readFileSync(join(HIP_SRC, f), 'utf8'));
  return m ? m[1]!.trim().split(/\s+/).filter(Boolean) : [];
}
interface Manifest {
  version: 1;
  archs: string[];
  compilers: { amd: string; nvidia: string };
  flags: { amd: string[]; nvidia: string[] };
  files: Record<string, FileEntry>;
  totals?: unknown;
}

const sh = async (cmd: string, args: string[]): Promise<string> => {
  const { stdout, stderr } = await run(cmd, args, { maxBuffer: 64 << 20 });
  return stdout + stderr;
};
const clang = (args: string[]): Promise<string> => (CHROOT ? sh('chroot', [CHROOT, CLANG, ...args]) : sh(CLANG, args));

const compress = (b: Uint8Array): Buffer =>
  brotliCompressSync(b, {
    params: { [zc.BROTLI_PARAM_QUALITY]: 10, [zc.BROTLI_PARAM_LGWIN]: 24, [zc.BROTLI_PARAM_SIZE_HINT]: b.length },
  });

function store(key: string, file: string, ext: string, raw: Uint8Array, kernels: Record<string, unknown>): ObjectEntry {
  mkdirSync(join(OUT, key), { recursive: true });
  const path = `${key}/${basename(file, '.hip')}.${ext}.br`;
  const packed = compress(raw);
  writeFileSync(join(OUT, path), packed);
  return {
    path,
    bytes: packed.length,
    rawBytes: raw.length,
    sha256: createHash('sha256').update(raw).digest('hex'),
    kernels,
  };
}

async function main(): Promise<void> {
  const t0 = Date.now();
  const all = kernelSources();
  const sources = ONLY.length ? all.filter((f) => ONLY.includes(f)) : all;
  const old: Manifest | null = existsSync(join(OUT, 'manifest.json'))
    ? (JSON.parse(readFileSync(join(OUT, 'manifest.json'), 'utf8')) as Manifest)
    : null;
  const withPtx = NVCC !== 'none';
  const amdVersion = WITH_AMD ? (await clang(['--version'])).split('\n')[0]!.trim() : (old?.compilers.amd ?? 'none');
  const nvVersion = withPtx
    ? (await sh(NVCC, ['--version']))
        .trim()
        .split('\n')
        .filter((l) => /release/.test(l))
        .join(' ')
    : (old?.compilers.nvidia ?? 'none');

  // the sources go where the compiler can see them: inside the root when it runs in one
  const stage = CHROOT ? mkdtempSync(join(CHROOT, 'tmp', 'rt-kernels-')) : mkdtempSync('/tmp/rt-kernels-');
  const inRoot = (p: string): string => (CHROOT ? p.slice(CHROOT.length) : p);
  cpSync(HIP_SRC, join(stage, 'src'), { recursive: true });
  mkdirSync(join(stage, 'out'));

  const files: Record<string, FileEntry> = {};
  for (const f of sources)
    files[f] = { hash: sourceHash(f), includes: localIncludes(f), amdFlags: sourceAmdFlags(f), objects: {} };
  const keys = [...(WITH_AMD ? AMD_ARCHS : []), ...(withPtx ? ['ptx'] : [])];
  const jobs = sources.flatMap((f) => keys.map((k) => ({ f, k })));
  // biggest first so the last jobs to finish are short ones
  const weight = (f: string): number => readFileSync(join(HIP_SRC, f)).length;
  jobs.sort((a, b) => weight(b.f) - weight(a.f) || (a.k === 'ptx' ? -1 : 0));
  let done = 0;
  const limit = pLimit(Math.max(1, JOBS));
  try {
    await Promise.all(
      jobs.map(({ f, k }) =>
        limit(async () => {
          const t = Date.now();
          const src = join(stage, 'src', f);
          const obj = join(stage, 'out', `${basename(f, '.hip')}.${k}`);
          if (k === 'ptx') {
            await sh(NVCC, [...PTX_FLAGS, src, '-o', obj]);
            const text = readFileSync(obj);
            const entries = Object.fromEntries(
              parsePtxEntries(text.toString('utf8')).map((e) => [
                e.name,
                { paramBytes: e.paramBytes, params: e.params.length },
              ]),
            );
            files[f]!.objects['ptx'] = store('ptx', f, 'ptx', text, entries);
          } else {
            const log = await clang([
              ...AMD_FLAGS,
              ...files[f]!.amdFlags,
              `--offload-arch=${k}`,
              '-c',
              inRoot(src),
              '-o',
              inRoot(obj),
            ]);
            if (log.trim()) process.stderr.write(log);
            const image = new Uint8Array(readFileSync(obj));
            const co = parseAmdCodeObject(image);
            if (co.arch !== k) throw new Error(`${f}: built for ${k} but the code object says ${co.target}`);
            const entries: Record<string, AmdKernelEntry> = {};
            for (const kn of co.kernels) {
              entries[kn.name] = {
                kernarg: kn.kernargSegmentSize,
                params: kn.params.length,
                wave: kn.wavefrontSize,
                sgpr: kn.sgprCount,
                vgpr: kn.vgprCount,
                agpr: kn.agprCount,
                sgprSpill: kn.sgprSpillCount,
                vgprSpill: kn.vgprSpillCount,
                scratch: kn.privateSegmentSize,
                lds: kn.groupSegmentSize,
              };
            }
            files[f]!.objects[k] = store(k, f, 'hsaco', image, entries);
          }
          done++;
          process.stderr.write(
            `[${String(done).padStart(3)}/${jobs.length}] ${k.padEnd(7)} ${f.padEnd(14)} ${((Date.now() - t) / 1000).toFixed(1)}s\n`,
          );
        }),
      ),
    );
  } finally {
    rmSync(stage, { recursive: true, force: true });
  }

  // keep entries of sources not rebuilt this time (KERNEL_ONLY); drop sources that are gone
  for (const f of all) if (!files[f] && old?.files[f]) files[f] = old.files[f]!;
  // a vendor skipped this time (KERNEL_NVCC=none, KERNEL_AMD=none) keeps the objects it built
  // before, for sources whose text did not change; a changed source has none until its compiler
  // runs (the ABI suite names what is missing)
  const skipped = (old?.archs ?? []).filter((k) => !keys.includes(k));
  for (const f of sources) {
    const prev = old?.files[f];
    if (prev?.hash !== files[f]!.hash) continue;
    for (const k of skipped) if (prev.objects[k]) files[f]!.objects[k] = prev.objects[k];
  }
  const manifest: Manifest = {
    version: 1,
    archs: [...AMD_ARCHS, 'ptx'].filter((k) => keys.includes(k) || skipped.includes(k)),
    compilers: { amd: amdVersion, nvidia: nvVersion },
    flags: { amd: AMD_FLAGS, nvidia: PTX_FLAGS },
    files: Object.fromEntries(Object.entries(files).sort(([a], [b]) => a.localeCompare(b))),
  };
  const perArch: Record<string, number> = {};
  let bytes = 0;
  for (const e of Object.values(manifest.files)) {
    for (const [k, o] of Object.entries(e.objects)) {
      perArch[k] = (perArch[k] ?? 0) + Object.keys(o.kernels).length;
      bytes += o.bytes;
    }
  }
  manifest.totals = { files: Object.keys(manifest.files).length, kernelsPerArch: perArch, bytes };
  writeFileSync(join(OUT, 'manifest.json'), JSON.stringify(manifest, null, 1) + '\n');
  const secs = ((Date.now() - t0) / 1000).toFixed(1);
  // objects no manifest entry points at (a renamed or deleted source) would only ship dead weight
  const wanted = new Set(Object.values(manifest.files).flatMap((e) => Object.values(e.objects).map((o) => o.path)));
  for (const d of readdirSync(OUT, { withFileTypes: true })) {
    if (!d.isDirectory()) continue;
    for (const n of readdirSync(join(OUT, d.name))) if (!wanted.has(`${d.name}/${n}`)) rmSync(join(OUT, d.name, n));
  }
  process.stderr.write(
    `kernels: ${Object.keys(manifest.files).length} files, kernels per arch ${JSON.stringify(perArch)}, ${(bytes / 1048576).toFixed(2)} MiB compressed, ${secs}s\n`,
  );
}

main().catch((e: unknown) => {
  const err = e as { stderr?: string; message?: string };
  process.stderr.write(`build-kernels: ${err.stderr || err.message || String(e)}\n`);
  process.exit(1);
});
