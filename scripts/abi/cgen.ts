// Turns the TypeScript prototype tables into C that the real headers must accept: one
// _Static_assert per function (whole function type, after macro expansion) and per parameter
// (koffi's own reading of each type against C's size and class), one per alias, and a program
// that prints every enum value, macro, struct offset and size we rely on.
import koffi, { type TypeObject } from 'koffi';
import { registerAliases, type NativeAlias } from '../../src/ffi/native.ts';
import { registerNcclTypes } from '../../src/ffi/nccl.ts';
import { ABI_ALIASES, ABI_LIBRARIES, C_PRELUDE } from './tables.ts';

export interface ParsedProto {
  readonly name: string;
  readonly ret: string;
  readonly params: readonly { readonly type: string; readonly name: string }[];
}

export function parseProto(proto: string): ParsedProto {
  const m = /^\s*(.*?)([A-Za-z_]\w*)\s*\((.*)\)\s*;?\s*$/s.exec(proto);
  if (!m) throw new Error(`not a prototype: ${proto}`);
  const ret = m[1]!.trim();
  const name = m[2]!;
  const list = m[3]!.trim();
  const params =
    list === '' || list === 'void'
      ? []
      : list.split(',').map((raw) => {
          const p = raw.replace(/\b_(Out|In|Inout)_\b/g, '').trim();
          const pm = /^(.*?)([A-Za-z_]\w*)\s*$/s.exec(p);
          if (!pm || pm[1]!.trim() === '')
            throw new Error(`${name}: parameter "${raw.trim()}" needs a type and a name`);
          return { type: pm[1]!.trim(), name: pm[2]! };
        });
  return { name, ret, params };
}

const aliasByName = new Map(ABI_ALIASES.map((a) => [a.name, a]));

/** our prototype spelling -> C spelling (aliases replaced by what they stand for) */
export function toC(type: string): string {
  return type.replace(/[A-Za-z_]\w*/g, (tok) => aliasByName.get(tok)?.c ?? tok).replace(/\s+\*/g, ' *');
}

// __builtin_classify_type: integer 1, enumeral 3, boolean 4, pointer 5, real 8 (GCC/clang typeclass)
const CLASS_OK: Record<'int' | 'pointer' | 'real', readonly number[]> = { int: [1, 3, 4], pointer: [5], real: [8] };
const classIs = (cType: string, ks: readonly number[]): string =>
  `(${ks.map((k) => `__builtin_classify_type((${cType})0) == ${k}`).join(' || ')})`;

function koffiClass(primitive: string): 'int' | 'pointer' | 'real' | 'void' | 'record' {
  if (primitive === 'Void') return 'void';
  if (primitive === 'Record') return 'record';
  if (primitive === 'Float32' || primitive === 'Float64') return 'real';
  if (['Pointer', 'String', 'String16', 'Callback', 'Prototype'].includes(primitive)) return 'pointer';
  return 'int';
}

// koffi 3 reports arguments as { type, direction } (its .d.ts says TypeObject)
function typeOf(x: unknown): TypeObject {
  const o = x as { type?: TypeObject } & TypeObject;
  return o.type && typeof o.type === 'object' ? o.type : o;
}

export interface CheckLine {
  readonly label: string;
  readonly kind: 'function' | 'param' | 'alias';
}

export interface ProtoCheckSource {
  readonly source: string;
  /** label of each generated line (index = line number - 1), for mapping compiler errors */
  readonly lines: readonly (CheckLine | null)[];
  readonly counts: { functions: number; params: number; aliases: number };
  /** symbols koffi binds by name, with the header name they are checked as */
  readonly bound: readonly { readonly lib: string; readonly symbol: string; readonly checkAs: string | null }[];
}

let protoSerial = 0;

export function protoCheckSource(): ProtoCheckSource {
  registerAliases(ABI_ALIASES);
  registerNcclTypes();
  const out: string[] = [];
  const lines: (CheckLine | null)[] = [];
  const emit = (text: string, label: CheckLine | null): void => {
    for (const l of text.split('\n')) {
      out.push(l);
      lines.push(label);
    }
  };
  emit(C_PRELUDE.trimEnd(), null);
  const counts = { functions: 0, params: 0, aliases: 0 };
  const bound: { lib: string; symbol: string; checkAs: string | null }[] = [];

  for (const a of ABI_ALIASES) aliasCheck(a, emit, counts);

  for (const lib of ABI_LIBRARIES) {
    for (const [key, spec] of Object.entries(lib.functions)) {
      const p = parseProto(spec.proto);
      if (p.name !== key) throw new Error(`${lib.id}: table key ${key} declares ${p.name}`);
      const cname = spec.checkAs ?? p.name;
      bound.push({ lib: lib.id, symbol: p.name, checkAs: spec.checkAs ?? null });
      const cParams = p.params.map((q) => toC(q.type));
      const fp = `rt_fp_${p.name}`;
      const label: CheckLine = { label: `${p.name}${spec.checkAs ? ` (as ${spec.checkAs})` : ''}`, kind: 'function' };
      emit(`typedef ${toC(p.ret)} (*${fp})(${cParams.length ? cParams.join(', ') : 'void'});`, label);
      emit(`_Static_assert(__builtin_types_compatible_p(__typeof__(&${cname}), ${fp}), "function ${p.name}");`, label);
      counts.functions++;

      // koffi's own parse of the same string: each parameter's size and class must match C's
      const t = koffi.proto(spec.proto.replace(/([A-Za-z_]\w*)\s*\(/, `rtabi_${++protoSerial}_$1(`));
      const info = t.proto!;
      if (info.arguments.length !== p.params.length)
        throw new Error(`${p.name}: koffi sees ${info.arguments.length} parameters, we parsed ${p.params.length}`);
      const slots = [
        { c: toC(p.ret), ko: typeOf(info.result), what: 'return' },
        ...p.params.map((q, i) => ({
          c: cParams[i]!,
          ko: typeOf(info.arguments[i]),
          what: `parameter ${q.name}`,
          ours: q.type,
        })),
      ];
      for (const s of slots) {
        // a device-pointer alias is a 64-bit integer to koffi and a pointer to C, by design
        const alias = 'ours' in s ? aliasByName.get(s.ours) : undefined;
        const cls =
          alias?.cls === 'pointer' && koffiClass(s.ko.primitive) === 'int' && s.ko.size === 8
            ? 'pointer'
            : koffiClass(s.ko.primitive);
        const pl: CheckLine = {
          label: `${p.name} ${s.what}: koffi ${s.ko.name} (${s.ko.primitive}, ${s.ko.size} bytes) vs C ${s.c}`,
          kind: 'param',
        };
        if (cls === 'void') {
          emit(`_Static_assert(__builtin_types_compatible_p(${s.c}, void), "${p.name} ${s.what} void");`, pl);
        } else if (cls === 'record') {
          // a struct by value (ncclUniqueId): the size, and C's record class (12)
          emit(`_Static_assert(sizeof(${s.c}) == ${s.ko.size}, "${p.name} ${s.what} size");`, pl);
          emit(`_Static_assert(__builtin_classify_type(*(${s.c} *)0) == 12, "${p.name} ${s.what} class");`, pl);
        } else {
          emit(`_Static_assert(sizeof(${s.c}) == ${s.ko.size}, "${p.name} ${s.what} size");`, pl);
          emit(`_Static_assert(${classIs(s.c, CLASS_OK[cls])}, "${p.name} ${s.what} class");`, pl);
        }
        counts.params++;
      }
    }
  }
  return { source: out.join('\n') + '\n', lines, counts, bound };
}

function aliasCheck(a: NativeAlias, emit: (t: string, l: CheckLine) => void, counts: { aliases: number }): void {
  const l: CheckLine = { label: `alias ${a.name} = ${a.c} (${a.cls})`, kind: 'alias' };
  const size = a.handle || a.cls === 'pointer' ? 8 : a.cls === 'int64' || a.cls === 'uint64' ? 8 : 4;
  const ko = a.handle ? 8 : koffi.sizeof(a.koffi ?? 'int');
  if (ko !== size)
    throw new Error(`alias ${a.name}: koffi type ${a.koffi} is ${ko} bytes, class ${a.cls} needs ${size}`);
  emit(`_Static_assert(sizeof(${a.c}) == ${size}, "alias ${a.name} size");`, l);
  const ks = a.cls === 'pointer' ? CLASS_OK.pointer : a.cls === 'enum' ? [1, 3] : [1];
  emit(`_Static_assert(${classIs(a.c, ks)}, "alias ${a.name} class");`, l);
  if (a.cls === 'int32' || a.cls === 'int64')
    emit(`_Static_assert((${a.c})-1 < (${a.c})0, "alias ${a.name} signed");`, l);
  if (a.cls === 'uint32' || a.cls === 'uint64')
    emit(`_Static_assert((${a.c})-1 > (${a.c})0, "alias ${a.name} unsigned");`, l);
  counts.aliases++;
}

export interface ValueItem {
  readonly key: string;
  readonly expected: number;
  readonly expr: string;
}

/** every enum value, macro, struct offset and size the TypeScript uses */
export function valueItems(): ValueItem[] {
  const items: ValueItem[] = [];
  for (const lib of ABI_LIBRARIES) {
    for (const [name, v] of Object.entries(lib.consts))
      items.push({ key: `const ${name}`, expected: v, expr: `(long long)(intptr_t)(${name})` });
    for (const [st, layout] of Object.entries(lib.structs)) {
      items.push({ key: `sizeof ${st}`, expected: layout.size, expr: `(long long)sizeof(${st})` });
      for (const [field, off] of Object.entries(layout.fields)) {
        items.push({ key: `offsetof ${st}.${field}`, expected: off, expr: `(long long)offsetof(${st}, ${field})` });
      }
    }
  }
  return items;
}

export function valueProgram(items: readonly ValueItem[]): string {
  const body = items.map((it) => `  printf("%s\\t%lld\\n", "${it.key}", ${it.expr});`).join('\n');
  return `${C_PRELUDE}\nint main(void) {\n${body}\n  return 0;\n}\n`;
}

/** object-like macros from `clang -E -dM`: name -> replacement */
export function objectMacros(dump: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const line of dump.split('\n')) {
    const m = /^#define ([A-Za-z_]\w*)(\(?)\s*(.*)$/.exec(line);
    if (m && m[2] === '') out.set(m[1]!, m[3]!.trim());
  }
  return out;
}
