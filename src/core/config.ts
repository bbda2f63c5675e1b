// Every environment variable the library reads, declared once: its name, the kind of value it
// takes, what unset means, what it does, which part of the library reads it and when.
// docs/configuration.md is generated from this table (npm run docs:config).
//
// readEnv() reads a variable when it is called, never at module load: each caller keeps its own
// timing (some read on every call, some once and cache the answer; `when` below says which), so
// a variable set after the library loaded and before that moment still counts. A value that does
// not parse is an error naming the variable and what it accepts; an empty value reads as unset.
//
// This file imports nothing from the library: it is the bottom layer.

/** the kind of value a variable takes */
export type EnvType = 'flag' | 'int' | 'bytes' | 'enum' | 'path' | 'string';

/** the parts of docs/configuration.md, in order */
export type EnvSection = 'general' | 'tuning' | 'libraries' | 'search' | 'distributed' | 'cli' | 'development';

export interface EnvVar {
  readonly name: string;
  readonly type: EnvType;
  readonly section: EnvSection;
  /** what unset (or empty) means */
  readonly default: string;
  /** one line: what it does */
  readonly description: string;
  /** the part of the library (file) that reads it */
  readonly readBy: string;
  /** when that part reads it */
  readonly when: string;
  /** enum: the accepted values */
  readonly values?: readonly string[];
  /** int and bytes: the accepted range; int: or exactly these numbers */
  readonly min?: number;
  readonly max?: number;
  readonly oneOf?: readonly number[];
  /** string: the accepted form, and how the docs and errors say it */
  readonly pattern?: RegExp;
  readonly accepted?: string;
}

/** variables as a process has them (process.env, or a plain object in tests) */
export type EnvSource = Readonly<Record<string, string | undefined>>;

/** a variable with a value that does not parse; the message names the variable and what it takes */
export class ConfigError extends Error {
  constructor(
    message: string,
    readonly variable: string,
  ) {
    super(message);
    this.name = 'ConfigError';
  }
}

export const ENV_VARS = [
  // ---- general ---------------------------------------------------------------------------------
  {
    name: 'ROCM_TENSOR_DEVICE',
    type: 'string',
    section: 'general',
    pattern: /^\s*(cpu|gpu|rocm|cuda)(:\d+)?\s*$/,
    accepted: 'cpu, gpu, rocm[:N] or cuda[:N]',
    default: 'ROCm, then CUDA, then the CPU',
    description: 'the device Device.best() picks (and with it the CLI and the examples)',
    readBy: 'src/device/device.ts',
    when: 'each call of Device.best()',
  },
  {
    name: 'ROCM_TENSOR_MEMORY_LIMIT',
    type: 'bytes',
    section: 'general',
    default: 'no cap: the device memory',
    description:
      'the most device memory the caching allocator holds (allocated plus cached); past it an allocation first frees the cache, then fails',
    readBy: 'src/runtime/allocator.ts',
    when: 'once per GPU device, when its allocator is created (its first allocation)',
  },
  {
    name: 'ROCM_TENSOR_MEMORY_CACHE_LIMIT',
    type: 'bytes',
    section: 'general',
    default: "a quarter of the device's memory, at least 2g",
    description:
      'the most device memory the caching allocator keeps in segments no tensor uses; past it the least recently used go back to the device (0: each as soon as it is unused)',
    readBy: 'src/runtime/allocator.ts',
    when: 'once per GPU device, when its allocator is created (its first allocation)',
  },
  {
    name: 'ROCM_TENSOR_UPLOAD_CHUNK',
    type: 'bytes',
    section: 'general',
    min: 8,
    max: 2 ** 30,
    default: '32m',
    description:
      'bytes per half of the pinned double buffer that streams checkpoint and widened uploads to a device (rounded down to a multiple of 8)',
    readBy: 'src/runtime/staged-upload.ts',
    when: 'once per GPU device, at its first streamed upload',
  },
  {
    name: 'ROCM_TENSOR_POISON',
    type: 'flag',
    section: 'general',
    default: '0',
    description:
      '1 fills new device memory with 0xff bytes, so an op that leaves outputs unwritten shows NaN or all-ones bits (the test suites turn it on)',
    readBy: 'src/device/storage.ts',
    when: 'once, at the first device allocation (setPoison() overrides it)',
  },
  {
    name: 'ROCM_TENSOR_KERNELS',
    type: 'path',
    section: 'general',
    default: 'the kernels/ folder of the package',
    description: 'a folder with manifest.json and the compiled kernels to load instead of the packaged ones',
    readBy: 'src/runtime/kernels.ts',
    when: 'when a GPU device sets up its kernels',
  },
  {
    name: 'ROCM_TENSOR_ROCBLAS_PRELOAD',
    type: 'flag',
    section: 'general',
    default: '0: each kernel loads on first use',
    description:
      '1 loads every rocBLAS kernel for the visible devices up front (rocblas_initialize: seconds), for long-lived processes',
    readBy: 'src/ffi/rocblas.ts',
    when: 'when rocBLAS is first loaded',
  },
  {
    name: 'ROCM_TENSOR_DIST_TIMEOUT_MS',
    type: 'int',
    section: 'general',
    min: 1,
    default: '300000 (5 minutes)',
    description:
      "the default deadline, in milliseconds, of a communicator's synchronize and barrier; past it the communicator is aborted",
    readBy: 'src/distributed/watchdog.ts',
    when: 'when a communicator is created without timeoutMs',
  },
  {
    name: 'ROCM_TENSOR_CPU_EXACT',
    type: 'flag',
    section: 'general',
    default: '0: BLAS and the fast kernels',
    description:
      '1 computes matmul, linear and f32 exp on the CPU as the exact reference (every sum in f64 in order, one rounding to the dtype), without BLAS (slower); the GPU test suites turn it on (setCpuExact() overrides)',
    readBy: 'src/backends/cpu/mode.ts',
    when: 'each CPU matmul and exp',
  },
  {
    name: 'ROCM_TENSOR_CPU_CACHE',
    type: 'bytes',
    section: 'general',
    default: '512m',
    description:
      'the most bytes of freed CPU tensor memory kept for reuse by later tensors of the same byte size (blocks of 4 KiB and up); 0 turns the cache off',
    readBy: 'src/device/host-memory.ts',
    when: 'each CPU tensor freed',
  },
  // ---- tuning ----------------------------------------------------------------------------------
  {
    name: 'ROCM_TENSOR_ROW_VECS',
    type: 'enum',
    section: 'tuning',
    values: ['1', '2', '4', '8', '16', 'split'],
    default: "the row plan's own choice",
    description:
      '16-byte vectors a thread of the register row kernels (softmax, norms) holds where that kernel exists and fits a block; split: rows always split over blocks',
    readBy: 'src/backends/gpu/rowreg.ts',
    when: 'each row-kernel launch plan',
  },
  {
    name: 'ROCM_TENSOR_CONTIG_BLOCK',
    type: 'int',
    section: 'tuning',
    oneOf: [64, 128, 256],
    default: '64 on CUDA, 128 on ROCm',
    description:
      "threads a block of the contiguous elementwise kernels and of cat's one-launch row copies (capped at the device's preferred block size)",
    readBy: 'src/runtime/kernels.ts',
    when: 'once per device, at its first contiguous elementwise launch',
  },
  {
    name: 'ROCM_TENSOR_SORT_BITONIC_MAX',
    type: 'int',
    section: 'tuning',
    min: 0,
    max: 4096,
    default: '256',
    description: 'the longest row sort and topk give the bitonic kernel; longer rows take the radix kernels',
    readBy: 'src/backends/gpu/sort.ts',
    when: 'once, at the first GPU sort',
  },
  {
    name: 'ROCM_TENSOR_GRID_DEP',
    type: 'flag',
    section: 'tuning',
    default: '1 where the GPU and driver support it',
    description:
      '0 turns off programmatic dependent launch (NVIDIA sm_90+, CUDA 12.3+): every kernel then starts only after the one before it has ended',
    readBy: 'src/runtime/cuda/runtime.ts',
    when: 'when a CUDA device is opened',
  },
  // ---- native libraries ------------------------------------------------------------------------
  ...(
    [
      ['HIP', 'HIP runtime (libamdhip64)'],
      ['ROCBLAS', 'rocBLAS (librocblas)'],
      ['MIOPEN', 'MIOpen (libMIOpen)'],
      ['RCCL', 'RCCL (librccl)'],
      ['CUDA', 'CUDA driver (libcuda)'],
      ['CUBLAS', 'cuBLAS (libcublas)'],
      ['CUDNN', 'cuDNN (libcudnn)'],
      ['NCCL', 'NCCL (libnccl)'],
    ] as const
  ).map(([id, what]) => ({
    name: `ROCM_TENSOR_${id}_LIB` as const,
    type: 'path' as const,
    section: 'libraries' as const,
    default: 'searched (next section)',
    description: `the ${what} shared object to load; one that fails to load is an error, never a fallback to another copy`,
    readBy: 'src/ffi/loader.ts (openLibrary)',
    when: 'when the library is first opened',
  })),
  {
    name: 'ROCM_TENSOR_BLAS_LIB',
    type: 'path',
    section: 'libraries',
    default: 'searched: OpenBLAS, then BLIS, then MKL; without one, the built-in kernel',
    description:
      'the CPU BLAS shared object (libopenblas, libblis or libmkl_rt) for matmul and linear on the CPU; `none` uses the built-in kernel; one that fails to load is an error, never a fallback',
    readBy: 'src/backends/cpu/gemm.ts (through src/ffi/loader.ts)',
    when: 'the first CPU matmul or linear, or `rocm-tensor info`',
  },
  {
    name: 'OPENBLAS_CORETYPE',
    type: 'string',
    section: 'libraries',
    default: "SkylakeX where the CPU has AVX-512 (while the CPU BLAS loads), else OpenBLAS's own choice",
    description:
      "OpenBLAS's kernel family; set, it is left to OpenBLAS. Unset on a CPU with AVX-512, the library sets SkylakeX while it loads OpenBLAS (older OpenBLAS, such as Debian 12's 0.3.21, runs its AVX2 kernels on AMD Zen 4: half the speed) and unsets it again",
    readBy: 'src/ffi/openblas.ts',
    when: 'when the CPU BLAS is first opened',
  },
  // ---- library search paths ------------------------------------------------------------------
  {
    name: 'ROCM_PATH',
    type: 'path',
    section: 'search',
    default: 'unset',
    description: 'a ROCm install; its lib/ and lib64/ are searched first for HIP, rocBLAS, MIOpen and RCCL',
    readBy: 'src/ffi/loader.ts',
    when: 'when a ROCm library is first opened',
  },
  {
    name: 'HIP_PATH',
    type: 'path',
    section: 'search',
    default: 'unset',
    description: 'as ROCM_PATH, searched after it',
    readBy: 'src/ffi/loader.ts',
    when: 'when a ROCm library is first opened',
  },
  {
    name: 'CUDA_HOME',
    type: 'path',
    section: 'search',
    default: 'unset',
    description: 'a CUDA toolkit; its lib64/ and lib/ are searched first for cuBLAS, cuDNN and NCCL',
    readBy: 'src/ffi/loader.ts',
    when: 'when a CUDA library is first opened',
  },
  {
    name: 'CUDA_PATH',
    type: 'path',
    section: 'search',
    default: 'unset',
    description: 'as CUDA_HOME, searched after it',
    readBy: 'src/ffi/loader.ts',
    when: 'when a CUDA library is first opened',
  },
  {
    name: 'VIRTUAL_ENV',
    type: 'path',
    section: 'search',
    default: 'unset',
    description:
      "a Python environment whose site-packages/nvidia/*/lib (pip's nvidia-* wheels) are searched for CUDA libraries",
    readBy: 'src/ffi/loader.ts',
    when: 'when a CUDA library is first opened',
  },
  {
    name: 'CONDA_PREFIX',
    type: 'path',
    section: 'search',
    default: 'unset',
    description: 'as VIRTUAL_ENV, for a conda environment',
    readBy: 'src/ffi/loader.ts',
    when: 'when a CUDA library is first opened',
  },
  {
    name: 'HOME',
    type: 'path',
    section: 'search',
    default: '/root',
    description:
      'its .local/lib/python3*/site-packages/nvidia/*/lib (pip install --user) are searched for CUDA libraries',
    readBy: 'src/ffi/loader.ts',
    when: 'when a CUDA library is first opened',
  },
  {
    name: 'LD_LIBRARY_PATH',
    type: 'path',
    section: 'search',
    default: "the system's",
    description:
      'read by the system loader, not the library: the last step of every search loads the bare soname, which the loader finds there',
    readBy: 'the system loader (dlopen, through koffi)',
    when: 'when a library is first opened',
  },
  // ---- distributed jobs (torchrun's convention; `rocm-tensor launch` sets them) --------------
  {
    name: 'RANK',
    type: 'int',
    section: 'distributed',
    min: 0,
    default: 'required in a job',
    description: "this process's rank in the job, below WORLD_SIZE",
    readBy: 'src/distributed/rendezvous.ts',
    when: 'initProcessGroup(), distEnvFrom()',
  },
  {
    name: 'WORLD_SIZE',
    type: 'int',
    section: 'distributed',
    min: 1,
    default: 'required in a job',
    description: "the ranks in the job; the CLI's generate joins a job when this and RANK are set",
    readBy: 'src/distributed/rendezvous.ts, src/cli/generate.ts',
    when: 'initProcessGroup(), distEnvFrom(), rocm-tensor generate',
  },
  {
    name: 'LOCAL_RANK',
    type: 'int',
    section: 'distributed',
    min: 0,
    default: 'RANK',
    description: 'the rank on this host: which GPU the rank takes',
    readBy: 'src/distributed/rendezvous.ts',
    when: 'initProcessGroup(), distEnvFrom()',
  },
  {
    name: 'MASTER_ADDR',
    type: 'string',
    section: 'distributed',
    default: '127.0.0.1',
    description: "the host of rank 0, which serves the communicator's unique id to the other ranks",
    readBy: 'src/distributed/rendezvous.ts',
    when: 'initProcessGroup(), distEnvFrom()',
  },
  {
    name: 'MASTER_PORT',
    type: 'int',
    section: 'distributed',
    min: 1,
    max: 65535,
    default: 'required in a job',
    description: 'the TCP port rank 0 serves the unique id on',
    readBy: 'src/distributed/rendezvous.ts',
    when: 'initProcessGroup(), distEnvFrom()',
  },
  // ---- the command line ------------------------------------------------------------------------
  {
    name: 'NO_COLOR',
    type: 'string',
    section: 'cli',
    default: 'unset',
    description: 'any non-empty value: no ANSI colours (wins over FORCE_COLOR)',
    readBy: 'src/cli/colour.ts',
    when: 'when the CLI prints a table or report',
  },
  {
    name: 'FORCE_COLOR',
    type: 'string',
    section: 'cli',
    default: 'unset: colours on a terminal only',
    description: 'set (other than 0 or false): colours in a pipe or a file too',
    readBy: 'src/cli/colour.ts',
    when: 'when the CLI prints a table or report',
  },
  // ---- the test suites and scripts of a source checkout ----------------------------------------
  {
    name: 'ROCM_TENSOR_GPU_TESTS_ON',
    type: 'enum',
    section: 'development',
    values: ['cpu'],
    default: 'unset: the GPU',
    description: 'cpu runs the GPU op suites against the CPU device, a self-check of the harness',
    readBy: 'test/gpu/harness.ts',
    when: 'each GPU suite',
  },
  {
    name: 'ROCM_TENSOR_TEST_REPORT',
    type: 'path',
    section: 'development',
    default: 'unset: no report',
    description: 'a file each GPU test appends a JSON line to',
    readBy: 'test/gpu/harness.ts',
    when: 'each GPU test',
  },
  {
    name: 'ROCM_TENSOR_DIST_LARGE',
    type: 'flag',
    section: 'development',
    default: '0',
    description: '1 adds a 1 GiB all-reduce to the GPU collectives suite',
    readBy: 'test/gpu/collectives.test.ts',
    when: 'when the suite loads',
  },
  {
    name: 'ROCM_TENSOR_CACHE',
    type: 'path',
    section: 'development',
    default: '~/.cache/rocm-tensor',
    description: 'where the ABI check scripts keep the vendor packages they download',
    readBy: 'scripts/abi-cuda, scripts/rocm-root.sh',
    when: 'each run',
  },
] as const satisfies readonly EnvVar[];

type Declared = (typeof ENV_VARS)[number];
/** the name of a declared variable */
export type EnvName = Declared['name'];
type TypeOf<N extends EnvName> = Extract<Declared, { readonly name: N }>['type'];
/** what readEnv gives for a set variable: flag: boolean; int, bytes: number; else the string */
export type EnvValue<N extends EnvName> =
  TypeOf<N> extends 'flag' ? boolean : TypeOf<N> extends 'int' | 'bytes' ? number : string;

const BY_NAME: ReadonlyMap<string, EnvVar> = new Map(ENV_VARS.map((v) => [v.name, v]));

/** the declaration of `name`, or undefined for a name the table does not hold */
export function envVar(name: string): EnvVar | undefined {
  return BY_NAME.get(name);
}

function processEnv(): EnvSource {
  const p = (globalThis as { process?: { env?: EnvSource } }).process;
  return p?.env ?? {};
}

/**
 * The value of `name` now, validated against its declaration: undefined when unset or empty,
 * else a boolean (flag), a number (int, bytes) or the string (enum, path, string). A value
 * that does not parse throws ConfigError naming the variable and what it accepts.
 */
export function readEnv<N extends EnvName>(name: N, env: EnvSource = processEnv()): EnvValue<N> | undefined {
  return parseEnv(name, env[name]);
}

/** `raw` read as the value of `name` (as readEnv does): for values from elsewhere than the environment */
export function parseEnv<N extends EnvName>(name: N, raw: string | undefined): EnvValue<N> | undefined {
  const v = BY_NAME.get(name);
  if (!v) throw new ConfigError(`${name}: not a declared variable (src/core/config.ts)`, name);
  return parseValue(v, raw) as EnvValue<N> | undefined;
}

/**
 * A native library's path override: the variable a LibrarySpec names. Declared ones are checked
 * to be paths; any other name (a caller's own spec) reads as a path too.
 */
export function readLibraryOverride(name: string, env: EnvSource = processEnv()): string | undefined {
  const v = BY_NAME.get(name);
  if (v && v.type !== 'path') throw new ConfigError(`${name}: declared as ${v.type}, not a library path`, name);
  const raw = env[name];
  return raw ? raw : undefined;
}

/** what a variable accepts, in words (docs and errors) */
export function acceptedValues(v: EnvVar): string {
  switch (v.type) {
    case 'flag':
      return '0 or 1';
    case 'enum':
      return listOr(v.values ?? []);
    case 'int':
      if (v.oneOf) return listOr(v.oneOf.map(String));
      return range('an integer', v);
    case 'bytes':
      return range('a byte count such as 1000, 512k, 32m or 8g (binary units)', v, true);
    case 'path':
      return 'a path';
    case 'string':
      return v.accepted ?? 'any text';
  }
}

function listOr(xs: readonly string[]): string {
  return xs.length <= 1 ? (xs[0] ?? '') : `${xs.slice(0, -1).join(', ')} or ${xs[xs.length - 1]}`;
}

function range(what: string, v: EnvVar, bytes = false): string {
  const n = (x: number): string => (bytes && x >= 1024 && x % 1024 === 0 ? fmtBytes(x) : String(x));
  if (v.min !== undefined && v.max !== undefined) return `${what}, from ${n(v.min)} to ${n(v.max)}`;
  if (v.min !== undefined)
    return v.min === 1 ? `${what}, above 0` : v.min === 0 ? `${what}, 0 or more` : `${what}, from ${n(v.min)}`;
  if (v.max !== undefined) return `${what}, up to ${n(v.max)}`;
  return what;
}

function fmtBytes(x: number): string {
  for (const [unit, s] of [
    [2 ** 30, 'g'],
    [2 ** 20, 'm'],
    [2 ** 10, 'k'],
  ] as const)
    if (x % unit === 0) return `${x / unit}${s}`;
  return String(x);
}

const BYTES = /^\s*(\d+(?:\.\d+)?)\s*(?:([kmg])i?)?b?\s*$/i;
const SCALE = { k: 2 ** 10, m: 2 ** 20, g: 2 ** 30 } as const;

function parseValue(v: EnvVar, raw: string | undefined): boolean | number | string | undefined {
  if (raw === undefined || raw === '') return undefined;
  const bad = (): ConfigError =>
    new ConfigError(`${v.name}=${JSON.stringify(raw)}: expected ${acceptedValues(v)}`, v.name);
  const inRange = (x: number): boolean => (v.min === undefined || x >= v.min) && (v.max === undefined || x <= v.max);
  switch (v.type) {
    case 'flag': {
      const t = raw.trim();
      if (t === '1') return true;
      if (t === '0') return false;
      throw bad();
    }
    case 'int': {
      const x = raw.trim() === '' ? NaN : Number(raw);
      if (!Number.isSafeInteger(x) || !inRange(x) || (v.oneOf && !v.oneOf.includes(x))) throw bad();
      return x;
    }
    case 'bytes': {
      const m = BYTES.exec(raw);
      if (!m) throw bad();
      const x = Math.floor(Number(m[1]) * (m[2] ? SCALE[m[2].toLowerCase() as keyof typeof SCALE] : 1));
      if (!Number.isSafeInteger(x) || !inRange(x)) throw bad();
      return x;
    }
    case 'enum': {
      const t = raw.trim();
      if (!(v.values ?? []).includes(t)) throw bad();
      return t;
    }
    case 'string':
      if (v.pattern && !v.pattern.test(raw)) throw bad();
      return raw;
    case 'path':
      return raw;
  }
}
