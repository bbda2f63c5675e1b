// Finds and opens the vendor libraries. Order per library: the explicit environment override,
// then each versioned soname in each candidate directory, then each bare soname through the
// system loader (ld.so.cache, LD_LIBRARY_PATH). A miss lists everything tried and how to install.
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import koffi, { type LibraryHandle } from 'koffi';
import { LibraryNotFoundError } from '../core/errors.ts';
import { readEnv, readLibraryOverride } from '../core/config.ts';

export interface LibrarySpec {
  readonly id: string;
  readonly envVar: string;
  readonly sonames: readonly string[];
  dirs(): string[];
  readonly install: string;
}

export interface LoadedLibrary {
  readonly lib: LibraryHandle;
  readonly path: string;
  readonly spec: LibrarySpec;
}

const SYSTEM_DIRS = ['/usr/lib/x86_64-linux-gnu', '/usr/lib64', '/usr/lib', '/usr/local/lib', '/lib/x86_64-linux-gnu'];

const uniq = (xs: readonly string[]): string[] => [...new Set(xs.filter((x) => x.length > 0))];

/** numeric-aware descending sort so /opt/rocm-6.10.0 precedes /opt/rocm-6.4.3 */
function newestFirst(names: string[]): string[] {
  return names.sort((a, b) => b.localeCompare(a, 'en', { numeric: true }));
}

function globDirs(parent: string, prefix: string, sub: string): string[] {
  try {
    return newestFirst(readdirSync(parent).filter((n) => n.startsWith(prefix))).map((n) => join(parent, n, sub));
  } catch {
    return [];
  }
}

export function rocmDirs(): string[] {
  const fromEnv = [readEnv('ROCM_PATH'), readEnv('HIP_PATH')].flatMap((p) =>
    p ? [join(p, 'lib'), join(p, 'lib64')] : [],
  );
  return uniq([...fromEnv, '/opt/rocm/lib', ...globDirs('/opt', 'rocm-', 'lib'), ...SYSTEM_DIRS]);
}

/** site-packages/nvidia/<pkg>/lib of the python3 environments we can see without running python */
function pythonNvidiaDirs(): string[] {
  const roots = ['/usr/local/lib', '/usr/lib', join(readEnv('HOME') ?? '/root', '.local/lib')];
  const venv = readEnv('VIRTUAL_ENV'),
    conda = readEnv('CONDA_PREFIX');
  if (venv) roots.unshift(join(venv, 'lib'));
  if (conda) roots.unshift(join(conda, 'lib'));
  const out: string[] = [];
  for (const root of roots) {
    for (const py of globDirs(root, 'python3', '')) {
      for (const site of ['site-packages', 'dist-packages']) {
        const nv = join(py, site, 'nvidia');
        if (!existsSync(nv)) continue;
        for (const pkg of readdirSync(nv)) out.push(join(nv, pkg, 'lib'));
      }
    }
  }
  return out;
}

export function cudaDirs(): string[] {
  const fromEnv = [readEnv('CUDA_HOME'), readEnv('CUDA_PATH')].flatMap((p) =>
    p ? [join(p, 'lib64'), join(p, 'lib')] : [],
  );
  return uniq([
    ...fromEnv,
    '/usr/local/cuda/lib64',
    ...globDirs('/usr/local', 'cuda-', 'lib64'),
    ...SYSTEM_DIRS,
    '/usr/lib/wsl/lib',
    ...pythonNvidiaDirs(),
  ]);
}

export const HIP_LIB: LibrarySpec = {
  id: 'hip',
  envVar: 'ROCM_TENSOR_HIP_LIB',
  sonames: ['libamdhip64.so.6', 'libamdhip64.so.5', 'libamdhip64.so'],
  dirs: rocmDirs,
  install:
    'install ROCm (https://rocm.docs.amd.com, /opt/rocm) or, on Debian/Ubuntu, `apt install libamdhip64-6`; ' +
    'or point ROCM_PATH or ROCM_TENSOR_HIP_LIB at it',
};

export const ROCBLAS_LIB: LibrarySpec = {
  id: 'rocblas',
  envVar: 'ROCM_TENSOR_ROCBLAS_LIB',
  sonames: ['librocblas.so.4', 'librocblas.so.0', 'librocblas.so'],
  dirs: rocmDirs,
  install:
    'install rocBLAS (ROCm `rocblas` package, or `apt install librocblas4` on Debian/Ubuntu); ' +
    'or set ROCM_TENSOR_ROCBLAS_LIB',
};

export const MIOPEN_LIB: LibrarySpec = {
  id: 'miopen',
  envVar: 'ROCM_TENSOR_MIOPEN_LIB',
  sonames: ['libMIOpen.so.1', 'libMIOpen.so'],
  dirs: rocmDirs,
  install:
    'install MIOpen (ROCm `miopen-hip` package, or `apt install libmiopen1` on Debian/Ubuntu); ' +
    'or set ROCM_TENSOR_MIOPEN_LIB',
};

/** RCCL: NCCL's API on ROCm (the collectives of several GPUs and hosts) */
export const RCCL_LIB: LibrarySpec = {
  id: 'rccl',
  envVar: 'ROCM_TENSOR_RCCL_LIB',
  sonames: ['librccl.so.1', 'librccl.so'],
  dirs: rocmDirs,
  install:
    'install RCCL (ROCm `rccl` package, or `apt install librccl1` on Debian/Ubuntu); or set ROCM_TENSOR_RCCL_LIB',
};

/** NCCL, the same API on NVIDIA */
export const NCCL_LIB: LibrarySpec = {
  id: 'nccl',
  envVar: 'ROCM_TENSOR_NCCL_LIB',
  sonames: ['libnccl.so.2', 'libnccl.so'],
  dirs: cudaDirs,
  install:
    "install NCCL (`apt install libnccl2` from NVIDIA's CUDA repository, or `pip install nvidia-nccl-cu12`); or set ROCM_TENSOR_NCCL_LIB",
};

/** where the CPU BLAS libraries install: the system folders and the alternatives' own folders */
export function blasDirs(): string[] {
  const subs = ['openblas-pthread', 'openblas-openmp', 'openblas-serial', 'blis-pthread', 'blis-openmp', 'blis-serial'];
  return uniq([
    ...SYSTEM_DIRS,
    ...SYSTEM_DIRS.flatMap((d) => subs.map((s) => join(d, s))),
    '/opt/intel/oneapi/mkl/latest/lib',
    '/opt/intel/oneapi/mkl/latest/lib/intel64',
  ]);
}

/** the CPU BLAS (CBLAS interface, 32-bit integers): OpenBLAS, then BLIS, then Intel MKL's single library */
export const BLAS_LIB: LibrarySpec = {
  id: 'blas',
  envVar: 'ROCM_TENSOR_BLAS_LIB',
  sonames: ['libopenblas.so.0', 'libopenblas.so', 'libblis.so.4', 'libblis.so', 'libmkl_rt.so.2', 'libmkl_rt.so'],
  dirs: blasDirs,
  install:
    '`apt install libopenblas0` on Debian/Ubuntu (or libblis4, or Intel oneMKL for libmkl_rt); ' +
    'or set ROCM_TENSOR_BLAS_LIB (none: the built-in kernel)',
};

const cache = new Map<string, LoadedLibrary>();

export function openLibrary(spec: LibrarySpec): LoadedLibrary {
  const hit = cache.get(spec.id);
  if (hit) return hit;
  const tried: string[] = [];
  const attempt = (path: string): LoadedLibrary | null => {
    try {
      const loaded: LoadedLibrary = { lib: koffi.load(path), path, spec };
      cache.set(spec.id, loaded);
      return loaded;
    } catch (e) {
      tried.push(`${path} (${firstLine((e as Error).message)})`);
      return null;
    }
  };

  const override = readLibraryOverride(spec.envVar);
  if (override) {
    // an explicit override that fails must not silently fall back to another copy
    const got = attempt(override);
    if (got) return got;
    throw notFound(spec, tried, `${spec.envVar}=${override} could not be loaded`);
  }
  const dirs = spec.dirs();
  for (const dir of dirs) {
    for (const so of spec.sonames) {
      const path = join(dir, so);
      if (!existsSync(path)) continue;
      const got = attempt(path);
      if (got) return got;
    }
  }
  for (const so of spec.sonames) {
    const got = attempt(so);
    if (got) return got;
  }
  throw notFound(spec, tried, `searched ${dirs.join(', ')} for ${spec.sonames.join(', ')}`);
}

function firstLine(s: string): string {
  return s.split('\n')[0] ?? s;
}

function notFound(spec: LibrarySpec, tried: string[], where: string): LibraryNotFoundError {
  return new LibraryNotFoundError(
    `openLibrary(${spec.id}): no loadable ${spec.sonames[0]}; ${where}; ` +
      `tried: ${tried.length ? tried.join('; ') : 'nothing found on disk'}; ` +
      `${spec.envVar} overrides the path; to install: ${spec.install}`,
  );
}

/** forgets cached handles (tests only; koffi keeps the library mapped) */
export function _resetLibraryCache(): void {
  cache.clear();
}
