// The matrix instructions of flash.hip's kernels as compiled: each AMD arch's committed code
// object disassembled by llvm-objdump 21 inside the ROCm root (scripts/rocm-root.sh; the host's
// LLVM predates gfx12), counted per kernel, and the count the kernel's loops should give.
import { join } from 'node:path';
import { readCodeObject, readManifest } from '../../src/runtime/kernels.ts';
import { runInRoot, writeInRoot } from './root.ts';

const repo = new URL('../..', import.meta.url).pathname;
export const KERNELS_DIR = join(repo, 'kernels');

/** matrix (and gfx1030's packed-dot) instructions of one kernel: mnemonic -> count */
export type InstrCounts = Map<string, number>;

const COUNTED = /^\s+(v_mfma_\S+|v_wmma_\S+|v_dot2\S*)\s/;
const SYMBOL = /^[0-9a-f]+ <([A-Za-z_][\w]*)>:$/;

/** per kernel of `file` on `arch`, the counted instructions of its disassembly */
export function disassembleCounts(root: string, arch: string, file = 'flash.hip'): Map<string, InstrCounts> {
  const manifest = readManifest(KERNELS_DIR);
  const obj = manifest.files[file]?.objects[arch];
  if (!obj) throw new Error(`kernels/manifest.json has no ${arch} object of ${file}`);
  const inner = `/tmp/rocm-tensor-abi/isa/${arch}-${file}.o`;
  writeInRoot(root, inner, readCodeObject(KERNELS_DIR, obj.path));
  const r = runInRoot(root, ['llvm-objdump-21', '-d', '--no-show-raw-insn', inner], 120_000);
  if (r.status !== 0)
    throw new Error(`llvm-objdump-21 on ${arch} ${file} failed (${r.status}):\n${r.stderr.slice(-2000)}`);
  const out = new Map<string, InstrCounts>();
  let cur: InstrCounts | null = null;
  for (const line of r.stdout.split('\n')) {
    const s = SYMBOL.exec(line);
    if (s) {
      cur = new Map();
      out.set(s[1]!, cur);
      continue;
    }
    const m = COUNTED.exec(line);
    if (m && cur) cur.set(m[1]!, (cur.get(m[1]!) ?? 0) + 1);
  }
  return out;
}

/** the wave size of an arch's code path: gfx9 (CDNA) 64, RDNA 32 */
export const archWave = (arch: string): number => (/^gfx9/.test(arch) ? 64 : 32);

/** flash.hip's instruction family on an arch (its FL_FAMILY) */
export function flashFamily(arch: string): 'mfma' | 'wmma' | 'fma' {
  if (/^gfx9/.test(arch)) return 'mfma';
  if (/^gfx1[12]/.test(arch)) return 'wmma';
  return 'fma';
}

/**
 * Matrix instructions flash_fwd_<dt>_<hd> and flash_dec_<dt>_<hd> hold once each: the key loop's
 * products, fully unrolled (FlArchAmd::qk and ::pv). Per key block of BN keys: S^T takes
 * (hd / 16) (BN / 16) products, O^T (BN / 16) CT, CT the column tiles of the wave's share
 * (FlCfg: BN is 64 on wave64 up to head dim 128, else 16; wave32 splits the columns over two
 * waves).
 */
export function expectedMatrixOps(arch: string, hd: number): number {
  if (flashFamily(arch) === 'fma') return 0;
  const wave = archWave(arch);
  const bn = wave === 32 || hd > 128 ? 16 : 64;
  const cs = 256 / (4 * wave);
  const ct = Math.ceil(hd / 16 / cs);
  return (hd / 16) * (bn / 16) + (bn / 16) * ct;
}

/** the mnemonic flash.hip's products of dtype `dt` must compile to on `arch` */
export function expectedMnemonic(arch: string, dt: 'f16' | 'bf16'): string | null {
  switch (flashFamily(arch)) {
    case 'mfma':
      // gfx90a keeps the older spellings (16x16x16f16, 16x16x16bf16_1k)
      if (arch === 'gfx90a') return dt === 'f16' ? 'v_mfma_f32_16x16x16f16' : 'v_mfma_f32_16x16x16bf16_1k';
      return `v_mfma_f32_16x16x16_${dt}`;
    case 'wmma':
      return `v_wmma_f32_16x16x16_${dt}`;
    default:
      return null;
  }
}
