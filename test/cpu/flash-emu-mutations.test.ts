// Mutation controls for the flash emulator (test/emu/flash-emu.cpp): each applies one plausible
// bug to a copy of the kernel sources and asserts that the emulation then fails, so a pass of
// test/cpu/flash-emu.test.ts means something. Each runs the one code path and kernel the bug
// lives in, f16 only. Skips, saying why, only where the ROCm root cannot be entered (not root).
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { clangRoot, runEmulatorInRoot, type SourceEdit } from './emu-run.ts';

interface Mutation {
  readonly what: string;
  readonly arch: string;
  readonly kernel: 'fwd' | 'dec';
  readonly edit: SourceEdit;
}

const MUTATIONS: readonly Mutation[] = [
  {
    // the operand order of AMD's calculator, given to A but not to B: the k of the two operands
    // no longer pair up
    what: 'gfx12 A operand in another k order than B',
    arch: 'gfx1200',
    kernel: 'fwd',
    edit: {
      file: 'mma-layout.h',
      from: 'static ML_FN int a_k(int lane, int v) { return 8 * (lane / 16) + v; }',
      to: 'static ML_FN int a_k(int lane, int v) { return 4 * (lane / 16) + v % 4 + 8 * (v / 4); }',
    },
  },
  {
    what: "gfx11 P exchange takes the other lane's value",
    arch: 'gfx1100',
    kernel: 'fwd',
    edit: {
      file: 'flash.hip',
      from: 'x[u] = M::p_lane(l, v + u) == l ? mine : there;',
      to: 'x[u] = M::p_lane(l, v + u) != l ? mine : there;',
    },
  },
  {
    // attn_merge reads the max in the natural-log domain: a split's log2 max passed unconverted
    what: "flash_dec's split max left in the log2 domain for attn_merge",
    arch: 'gfx942',
    kernel: 'dec',
    edit: {
      file: 'flash.hip',
      from: 'wsml[2 * at] = mx * 0.6931471805599453f;',
      to: 'wsml[2 * at] = mx;',
    },
  },
  {
    // the log-sum-exp kept for the gradient left in the log2 domain
    what: "flash_fwd's kept log-sum-exp not converted from base 2",
    arch: 'gfx942',
    kernel: 'fwd',
    edit: {
      file: 'flash.hip',
      from: '(m[r] + log2f(l[r])) * 0.6931471805599453f;',
      to: '(m[r] + log2f(l[r]));',
    },
  },
  {
    // each wave's rows written where the block's first wave's go
    what: "flash_fwd's log-sum-exp rows without the wave's offset (wave32)",
    arch: 'gfx1100',
    kernel: 'fwd',
    edit: {
      file: 'flash.hip',
      from: 'lse[(u64)bh * tq + m0 + w * WR + row]',
      to: 'lse[(u64)bh * tq + m0 + row]',
    },
  },
  {
    what: "flash.hip's exp2 taken as exp",
    arch: 'gfx1030',
    kernel: 'fwd',
    edit: { file: 'flash.hip', from: 'return __builtin_amdgcn_exp2f(x);', to: 'return expf(x);' },
  },
];

const where = clangRoot();
if ('skip' in where) {
  console.log(`flash-emu mutations: skipped: ${where.skip}`);
  test.skip('flash emulator mutation controls (needs root)', () => {});
} else {
  for (const m of MUTATIONS) {
    test(`the flash emulator fails on a mutation: ${m.what} (${m.arch})`, () => {
      const r = runEmulatorInRoot(where.root, 'flash-emu', {
        std: 'c++20',
        defines: [`__${m.arch}__`],
        args: ['f16', m.kernel],
        edits: [m.edit],
      });
      assert.is.not(r.status, 0, `the mutation passed:\n${r.out}`);
      assert.match(r.out, /^MISMATCH /m, `no mismatch reported:\n${r.out}`);
      console.log(`${m.what}: ${r.out.split('\n').find((l) => /^MISMATCH .*: \d+ of/.test(l)) ?? ''}`);
    });
  }
}

test.run();
