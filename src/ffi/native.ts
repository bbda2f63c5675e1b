// Shared koffi helpers for every native library (ROCm and CUDA). Prototypes are kept as data:
// one C prototype string per function, which koffi parses at declaration time and which the ABI
// conformance suite (test/abi) compiles against the vendor's real headers. Type names used in
// those strings are either plain C types both sides understand, or aliases registered here with
// an explicit C spelling and ABI class, so the checker can translate and verify them.
import koffi, { type LibraryHandle } from 'koffi';

/** the C function-pointer class of an alias, checked with __builtin_classify_type and sizeof */
export type AliasClass = 'pointer' | 'int32' | 'uint32' | 'int64' | 'uint64' | 'enum';

export interface NativeAlias {
  /** name used in our prototype strings */
  readonly name: string;
  /** C spelling the checker substitutes (the header's own typedef where there is one) */
  readonly c: string;
  readonly cls: AliasClass;
  /** opaque handle: koffi sees a pointer to an opaque type, so values come back as bigint */
  readonly handle?: boolean;
  /** koffi base type for non-handle aliases */
  readonly koffi?: string;
}

export interface NativeFunctionSpec {
  /** C prototype in koffi syntax (_Out_ / _Inout_ mark output parameters) */
  readonly proto: string;
  /** missing from some supported versions: declared when present, null otherwise */
  readonly optional?: boolean;
  /** the header name whose prototype this symbol must match, when the header #defines the
   *  plain name to another symbol (hipGetDeviceProperties -> R0600) and we bind the plain one */
  readonly checkAs?: string;
}

export type NativeTable = Readonly<Record<string, NativeFunctionSpec>>;

/**
 * Device pointers cross koffi as 64-bit integers, not `void *`: a `void *` parameter would also
 * accept a JS typed array and pass host memory where the GPU expects a device address. On
 * x86-64 (and every 64-bit ABI we target) `uint64_t` and a data pointer are passed identically,
 * so the checker treats these aliases as `void *` / `const void *`. Output device pointers are
 * declared `void **` instead, because koffi returns pointers as bigint but may return a small
 * uint64 as a JS number.
 */
export const SHARED_ALIASES: readonly NativeAlias[] = [
  { name: 'devptr_t', c: 'void *', cls: 'pointer', koffi: 'uint64_t' },
  { name: 'cdevptr_t', c: 'const void *', cls: 'pointer', koffi: 'uint64_t' },
];

const registered = new Map<string, NativeAlias>();

/** registers aliases with koffi once per process (both vendors' modules may be loaded) */
export function registerAliases(list: readonly NativeAlias[]): void {
  for (const a of list) {
    const prev = registered.get(a.name);
    if (prev) {
      if (prev.c !== a.c || prev.cls !== a.cls)
        throw new Error(`native alias ${a.name} registered twice with different meanings`);
      continue;
    }
    if (a.handle) koffi.pointer(a.name, koffi.opaque());
    else koffi.alias(a.name, a.koffi ?? 'int');
    registered.set(a.name, a);
  }
}
registerAliases(SHARED_ALIASES);

export type NativeFn = ((...args: never[]) => unknown) & { readonly info: { readonly name: string } };

/** the symbol name a prototype string declares */
export function protoName(proto: string): string {
  const m = /([A-Za-z_]\w*)\s*\(/.exec(proto);
  if (!m) throw new Error(`not a C prototype: ${proto}`);
  return m[1]!;
}

/**
 * Declares every function of a table once. Required functions missing from the library throw
 * (naming the library path); optional ones come back as null.
 */
export function declareTable(lib: LibraryHandle, table: NativeTable, libPath: string): Map<string, NativeFn | null> {
  const out = new Map<string, NativeFn | null>();
  for (const [key, spec] of Object.entries(table)) {
    try {
      out.set(key, lib.func(spec.proto) as unknown as NativeFn);
    } catch (e) {
      if (spec.optional) {
        out.set(key, null);
        continue;
      }
      throw new Error(`cannot declare ${key} from ${libPath}: ${(e as Error).message}`);
    }
  }
  return out;
}

/** single-element out cell for `_Out_ T *` parameters */
export type OutCell<T> = [T];

/** a pointer result from an out cell: koffi gives bigint, or null for NULL */
export function ptrOf(v: unknown): bigint {
  if (v === null || v === undefined) return 0n;
  if (typeof v === 'bigint') return v;
  if (typeof v === 'number') return BigInt(v);
  throw new TypeError(`expected a pointer, got ${typeof v}`);
}

/** fixed-size C string buffer read (NUL-terminated, utf-8) */
export function readCString(ptr: bigint, offset: number, maxLen: number): string {
  const bytes = new Uint8Array(koffi.view(ptr + BigInt(offset), maxLen));
  const end = bytes.indexOf(0);
  return new TextDecoder().decode(bytes.subarray(0, end < 0 ? maxLen : end));
}

/** formats call arguments for error messages: bigints as hex addresses */
export function fmtArgs(args: readonly unknown[]): string {
  return args
    .map((a) => {
      if (typeof a === 'bigint') return `0x${a.toString(16)}`;
      if (a === null) return 'NULL';
      if (ArrayBuffer.isView(a)) return `<${a.constructor.name} ${a.byteLength} bytes>`;
      return String(a);
    })
    .join(', ');
}
