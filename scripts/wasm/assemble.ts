// A small assembler for the subset of the WebAssembly text format that src/backends/cpu/wasm/*.wat
// uses: one module of exported functions and one exported memory; flat (not folded)
// instructions; named params, locals, functions and labels; block/loop/br/br_if/return; the integer,
// float and SIMD (v128) instructions in the tables below. Anything else is an error naming the
// token, so a .wat that assembles here is also standard text another assembler would accept.
//   npx tsx scripts/wasm/assemble.ts      rebuilds every src/backends/cpu/wasm/X.wat into X-wasm.ts

import { readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

type Tree = string | Tree[];

function parse(text: string): Tree[] {
  const tokens = text.replace(/;;[^\n]*/g, ' ').match(/\(|\)|"[^"]*"|[^\s()]+/g) ?? [];
  let at = 0;
  const list = (): Tree[] => {
    const out: Tree[] = [];
    while (at < tokens.length) {
      const t = tokens[at++]!;
      if (t === '(') out.push(list());
      else if (t === ')') return out;
      else out.push(t);
    }
    return out;
  };
  return list();
}

const uleb = (n: number | bigint): number[] => {
  let v = BigInt(n);
  const out: number[] = [];
  do {
    let b = Number(v & 0x7fn);
    v >>= 7n;
    if (v !== 0n) b |= 0x80;
    out.push(b);
  } while (v !== 0n);
  return out;
};
const sleb = (n: number | bigint): number[] => {
  let v = BigInt(n);
  const out: number[] = [];
  for (;;) {
    const b = Number(v & 0x7fn);
    v >>= 7n;
    if ((v === 0n && (b & 0x40) === 0) || (v === -1n && (b & 0x40) !== 0)) {
      out.push(b);
      return out;
    }
    out.push(b | 0x80);
  }
};
const str = (s: string): number[] => {
  const b = [...Buffer.from(s, 'utf8')];
  return [...uleb(b.length), ...b];
};
const section = (id: number, body: number[]): number[] => [id, ...uleb(body.length), ...body];
const vec = (items: number[][]): number[] => [...uleb(items.length), ...items.flat()];

const TYPES: Record<string, number> = { i32: 0x7f, i64: 0x7e, f32: 0x7d, f64: 0x7c, v128: 0x7b };

/** plain instructions: opcode bytes (SIMD: 0xfd then the LEB of the sub-opcode) */
const simd = (op: number): number[] => [0xfd, ...uleb(op)];
const PLAIN: Record<string, number[]> = {
  'i32.add': [0x6a],
  'i32.sub': [0x6b],
  'i32.mul': [0x6c],
  'i32.and': [0x71],
  'i32.or': [0x72],
  'i32.xor': [0x73],
  'i32.shl': [0x74],
  'i32.shr_u': [0x76],
  'i32.lt_u': [0x49],
  'i32.ne': [0x47],
  'i32.eqz': [0x45],
  drop: [0x1a],
  return: [0x0f],
  'v128.and': simd(0x4e),
  'v128.or': simd(0x50),
  'v128.xor': simd(0x51),
  'i32x4.splat': simd(0x11),
  'f32x4.splat': simd(0x13),
  'i32x4.shl': simd(0xab),
  'i32x4.shr_u': simd(0xad),
  'i32x4.add': simd(0xae),
  'i32x4.sub': simd(0xb1),
  'i32x4.mul': simd(0xb5),
  'i64x2.extmul_low_i32x4_u': simd(0xde),
  'i64x2.extmul_high_i32x4_u': simd(0xdf),
  'f32x4.add': simd(0xe4),
  'f32x4.sub': simd(0xe5),
  'f32x4.mul': simd(0xe6),
  'f32x4.convert_i32x4_u': simd(0xfb),
  'i32.eq': [0x46],
  'i32.gt_u': [0x4b],
  'i32.ge_u': [0x4f],
  'f32x4.div': simd(0xe7),
  'f32x4.min': simd(0xe8),
  'f32x4.max': simd(0xe9),
  'f32x4.demote_f64x2_zero': simd(0x5e),
  'f64x2.promote_low_f32x4': simd(0x5f),
  'f64x2.splat': simd(0x14),
  'f64x2.nearest': simd(0x94),
  'f64x2.add': simd(0xf0),
  'f64x2.sub': simd(0xf1),
  'f64x2.mul': simd(0xf2),
  'f64x2.min': simd(0xf4),
  'f64x2.max': simd(0xf5),
  'f32x4.pmin': simd(0xea),
  'f32x4.pmax': simd(0xeb),
  'f64x2.pmin': simd(0xf6),
  'f64x2.pmax': simd(0xf7),
  'i32x4.trunc_sat_f64x2_s_zero': simd(0xfc),
  'i32x4.min_s': simd(0xb6),
  'i32x4.max_s': simd(0xb8),
  'f64x2.lt': simd(0x49),
  'f64x2.gt': simd(0x4a),
  'v128.andnot': simd(0x4f),
  'v128.bitselect': simd(0x52),
};
/** memory instructions: opcode, natural alignment (log2), whether a lane index follows */
const MEM: Record<string, [number[], number, boolean]> = {
  'i32.load': [[0x28], 2, false],
  'i32.store': [[0x36], 2, false],
  'f32.load': [[0x2a], 2, false],
  'f64.load': [[0x2b], 3, false],
  'f32.store': [[0x38], 2, false],
  'f64.store': [[0x39], 3, false],
  'v128.load': [simd(0x00), 4, false],
  'v128.store': [simd(0x0b), 4, false],
  'v128.load32_splat': [simd(0x09), 2, false],
  'v128.load32_lane': [simd(0x56), 2, true],
  'v128.load64_splat': [simd(0x0a), 3, false],
  'v128.load64_lane': [simd(0x57), 3, true],
};
const LANE: Record<string, number[]> = {
  'i32x4.extract_lane': simd(0x1b),
  'i32x4.replace_lane': simd(0x1c),
  'f64x2.extract_lane': simd(0x21),
  'f64x2.replace_lane': simd(0x22),
};

/** a float literal (decimal, exponent, inf, nan, hexadecimal integers) as its little-endian bytes */
function floatBytes(t: string | undefined, width: 4 | 8): number[] {
  const v =
    t === undefined
      ? NaN
      : /^[+-]?inf$/.test(t)
        ? t.startsWith('-')
          ? -Infinity
          : Infinity
        : t === 'nan'
          ? NaN
          : Number(t);
  if (t === undefined || (Number.isNaN(v) && t !== 'nan'))
    throw new Error(`wat: expected a float, got ${JSON.stringify(t)}`);
  const b = new DataView(new ArrayBuffer(width));
  if (width === 4) b.setFloat32(0, v, true);
  else b.setFloat64(0, v, true);
  return [...new Uint8Array(b.buffer)];
}

function num(t: Tree | undefined): bigint {
  if (typeof t !== 'string' || !/^-?(0x[0-9a-f_]+|[0-9_]+)$/i.test(t))
    throw new Error(`wat: expected a number, got ${JSON.stringify(t)}`);
  const neg = t.startsWith('-'),
    body = (neg ? t.slice(1) : t).replace(/_/g, '');
  return neg ? -BigInt(body) : BigInt(body);
}

interface Func {
  name: string;
  exportAs?: string;
  params: [string, number][];
  results: number[];
  locals: [string, number][];
  body: Tree[];
}

export function assemble(text: string): Uint8Array {
  const top = parse(text);
  const mod = top[0];
  if (!Array.isArray(mod) || mod[0] !== 'module' || top.length !== 1) throw new Error('wat: expected one (module ...)');
  const funcs: Func[] = [];
  let memory: { pages: number; exportAs: string } | undefined;
  for (const field of mod.slice(1)) {
    if (!Array.isArray(field)) throw new Error(`wat: unexpected ${field} in module`);
    if (field[0] === 'memory') {
      const ex = field[1] as Tree[];
      if (!Array.isArray(ex) || ex[0] !== 'export')
        throw new Error('wat: memory must be (memory (export "name") pages)');
      memory = { exportAs: JSON.parse(ex[1] as string) as string, pages: Number(num(field[2])) };
    } else if (field[0] === 'func') {
      const named = typeof field[1] === 'string' && field[1].startsWith('$');
      const f: Func = {
        name: named ? (field[1] as string) : `#${funcs.length}`,
        params: [],
        results: [],
        locals: [],
        body: [],
      };
      for (const part of field.slice(named ? 2 : 1)) {
        if (Array.isArray(part)) {
          const kind = part[0],
            ty = (t: Tree | undefined): number => {
              const c = TYPES[t as string];
              if (c === undefined) throw new Error(`wat: ${f.name}: unknown type ${String(t)}`);
              return c;
            };
          if (kind === 'export') f.exportAs = JSON.parse(part[1] as string) as string;
          else if (kind === 'param') f.params.push([part[1] as string, ty(part[2])]);
          else if (kind === 'local') f.locals.push([part[1] as string, ty(part[2])]);
          else if (kind === 'result') f.results.push(ty(part[1]));
          else throw new Error(`wat: ${f.name}: folded instructions are not supported: (${String(kind)} ...)`);
        } else f.body.push(part);
      }
      funcs.push(f);
    } else throw new Error(`wat: unsupported module field ${String(field[0])}`);
  }
  const fnIndex = new Map(funcs.map((f, i) => [f.name, i]));
  const types: string[] = [],
    typeOf = funcs.map((f) => {
      const key = JSON.stringify([f.params.map((p) => p[1]), f.results]);
      if (!types.includes(key)) types.push(key);
      return types.indexOf(key);
    });
  const code = funcs.map((f) => body(f, fnIndex));
  const bytes = [
    0x00,
    0x61,
    0x73,
    0x6d,
    0x01,
    0x00,
    0x00,
    0x00,
    ...section(
      1,
      vec(
        types.map((k) => {
          const [p, r] = JSON.parse(k) as [number[], number[]];
          return [0x60, ...uleb(p.length), ...p, ...uleb(r.length), ...r];
        }),
      ),
    ),
    ...section(3, vec(typeOf.map((t) => uleb(t)))),
    ...(memory ? section(5, vec([[0x00, ...uleb(memory.pages)]])) : []),
    ...section(
      7,
      vec([
        ...funcs.flatMap((f, i) => (f.exportAs ? [[...str(f.exportAs), 0x00, ...uleb(i)]] : [])),
        ...(memory ? [[...str(memory.exportAs), 0x02, 0x00]] : []),
      ]),
    ),
    ...section(10, vec(code.map((c) => [...uleb(c.length), ...c]))),
  ];
  return Uint8Array.from(bytes);
}

function body(f: Func, fnIndex: Map<string, number>): number[] {
  const locals = new Map<string, number>([...f.params, ...f.locals].map(([n], i) => [n, i]));
  const out: number[] = [...uleb(f.locals.length), ...f.locals.flatMap(([, t]) => [1, t])];
  const labels: string[] = [];
  const toks = f.body as string[];
  let i = 0;
  const next = (): string => {
    const t = toks[i++];
    if (t === undefined) throw new Error(`wat: ${f.name}: unexpected end`);
    return t;
  };
  const local = (): number[] => {
    const n = next();
    const k = locals.get(n);
    if (k === undefined) throw new Error(`wat: ${f.name}: unknown local ${n}`);
    return uleb(k);
  };
  const memarg = (natural: number): number[] => {
    let offset = 0n,
      align = natural;
    while (i < toks.length && /^(offset|align)=/.test(toks[i]!)) {
      const [k, v] = next().split('=');
      if (k === 'offset') offset = num(v);
      else align = Math.log2(Number(num(v)));
    }
    return [...uleb(align), ...uleb(offset)];
  };
  while (i < toks.length) {
    const op = next();
    if (op in PLAIN) out.push(...PLAIN[op]!);
    else if (op === 'local.get') out.push(0x20, ...local());
    else if (op === 'local.set') out.push(0x21, ...local());
    else if (op === 'local.tee') out.push(0x22, ...local());
    else if (op === 'call') {
      const n = next(),
        k = fnIndex.get(n);
      if (k === undefined) throw new Error(`wat: ${f.name}: unknown function ${n}`);
      out.push(0x10, ...uleb(k));
    } else if (op === 'i32.const') out.push(0x41, ...sleb(BigInt.asIntN(32, num(next()))));
    else if (op === 'f32.const') out.push(0x43, ...floatBytes(next(), 4));
    else if (op === 'f64.const') out.push(0x44, ...floatBytes(next(), 8));
    else if (op === 'v128.const') {
      if (next() !== 'i32x4') throw new Error(`wat: ${f.name}: v128.const takes i32x4 lanes here`);
      out.push(...simd(0x0c));
      for (let k = 0; k < 4; k++) {
        const v = Number(BigInt.asUintN(32, num(next())));
        out.push(v & 255, (v >>> 8) & 255, (v >>> 16) & 255, v >>> 24);
      }
    } else if (op === 'i8x16.shuffle') {
      out.push(...simd(0x0d));
      for (let k = 0; k < 16; k++) {
        const v = Number(num(next()));
        if (v < 0 || v > 31) throw new Error(`wat: ${f.name}: shuffle lane ${v}`);
        out.push(v);
      }
    } else if (op in LANE) out.push(...LANE[op]!, Number(num(next())));
    else if (op in MEM) {
      const [bytes, natural, lane] = MEM[op]!;
      out.push(...bytes, ...memarg(natural));
      if (lane) out.push(Number(num(next())));
    } else if (op === 'block' || op === 'loop') {
      labels.push(toks[i]?.startsWith('$') ? next() : '');
      out.push(op === 'block' ? 0x02 : 0x03, 0x40);
    } else if (op === 'end') {
      labels.pop();
      out.push(0x0b);
    } else if (op === 'br' || op === 'br_if') {
      const l = next(),
        depth = labels.length - 1 - labels.lastIndexOf(l);
      if (!labels.includes(l)) throw new Error(`wat: ${f.name}: unknown label ${l}`);
      out.push(op === 'br' ? 0x0c : 0x0d, ...uleb(depth));
    } else throw new Error(`wat: ${f.name}: unsupported instruction ${op}`);
  }
  if (labels.length) throw new Error(`wat: ${f.name}: ${labels.length} unclosed block(s)`);
  out.push(0x0b);
  return out;
}

/** the TypeScript module that carries a .wat's bytes (base64), with the source's name */
export function wasmModuleSource(name: string, bytes: Uint8Array): string {
  const b64 = Buffer.from(bytes).toString('base64'),
    lines: string[] = [];
  for (let k = 0; k < b64.length; k += 96) lines.push(`  '${b64.slice(k, k + 96)}'`);
  return `// ${name}-wasm.ts: generated by scripts/wasm/assemble.ts from ${name}.wat; do not edit.
export const WASM_BASE64 =
${lines.join(' +\n')};
`;
}

export const WASM_DIR = new URL('../../src/backends/cpu/wasm/', import.meta.url).pathname;

if (import.meta.url === `file://${process.argv[1]}`) {
  for (const f of readdirSync(WASM_DIR).filter((x) => x.endsWith('.wat'))) {
    const name = f.slice(0, -4),
      bytes = assemble(readFileSync(join(WASM_DIR, f), 'utf8'));
    const api = (globalThis as unknown as { WebAssembly: { validate(b: Uint8Array): boolean } }).WebAssembly;
    if (!api.validate(bytes)) throw new Error(`${f}: the assembled module does not validate`);
    writeFileSync(join(WASM_DIR, `${name}-wasm.ts`), wasmModuleSource(name, bytes));
    console.log(`${f}: ${bytes.length} bytes`);
  }
}
