// paged-table.h: keys and values read through a paged KV cache's block table into flash.hip's LDS
// tiles, for the matrix-core paged kernels (paged-prefill.hip, paged-decode.hip). Include after
// flash.hip (FlCfg, Vec16, fl_commit). Key j of a sequence is row (id * bs + j % bs) of its kv
// head's plane, id = the table's entry j / bs, so the pools must be slot-linear (a block's stride
// bs times a slot's). A block id outside [0, nblocks) is recorded in err (bad-id.h, tag) and its
// keys and values read as NaN.
#pragma once
#include "bad-id.h"

// a sequence's row of the block table, and where its bad ids are recorded
struct PaTab {
  const void* row;
  i64 tsc;
  u64* err;
  u64 pos0;
  u32 bs, nblocks, i64t, tag;
  // the slot of key j (a row of the kv head's plane); bad: the table names no block of the pools
  RT_DEVICE i64 slot(u32 j, bool& bad) const {
    const u32 bi = j / bs;
    const i64 id = i64t ? ((const i64*)row)[(i64)bi * tsc] : (i64)((const u32*)row)[(i64)bi * tsc];
    bad = id < 0 || id >= (i64)nblocks;
    if (bad) record_bad_id(err, tag, (u64)id, pos0 + bi, nblocks);
    return (bad ? 0 : id) * bs + (j - bi * bs);
  }
};

// fl_tile's copies for the keys j0 .. j0 + n - 1 of a sequence, each row found through the
// table: zero past `valid` rows and past column d, NaN for a bad block (asynchronous on NVIDIA
// but for those, which are plain stores). TR: transposed, into columns of rows VLD apart.
template <class T, int HD, bool TR, int NT>
RT_DEVICE void pa_tile(T* dst, const T* base, i64 rs, const PaTab& tb, u32 j0, int n, int valid, u32 d, bool vec, int tid) {
  constexpr int LD = FlCfg<HD>::LD, VLD = FlCfg<HD>::VLD, CH = HD / 8;
  const int nt = NT > 0 ? NT : (int)blockDim.x;
  const T nan = Elem<T>::store(NAN);
  if (vec) {
    for (int x = tid; x < n * CH; x += nt) {
      const int r = x / CH, c = x % CH;
      bool bad = false;
      const i64 sl = r < valid ? tb.slot(j0 + (u32)r, bad) : 0;
      const bool in = r < valid && (u32)(c * 8) < d && !bad;
      const T* from = base + (in ? sl * rs + c * 8 : 0);
      Vec16<T> z;
#if RT_CUDA
      if (!TR && !bad) {
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" :: "r"(fl_saddr(dst + r * LD + c * 8)), "l"(from), "r"(in ? 16 : 0));
        continue;
      }
#endif
      if (in) z = *(const Vec16<T>*)from;
      else for (int u = 0; u < 8; u++) z.v[u] = bad ? nan : T{ 0 };
      if (TR) {
#pragma unroll
        for (int u = 0; u < 8; u++) dst[(c * 8 + u) * VLD + r] = z.v[u];
      } else {
        *(Vec16<T>*)(dst + r * LD + c * 8) = z;
      }
    }
  } else {
    for (int x = tid; x < n * HD; x += nt) {
      const int r = x / HD, c = x % HD;
      bool bad = false;
      const i64 sl = r < valid ? tb.slot(j0 + (u32)r, bad) : 0;
      dst[TR ? c * VLD + r : r * LD + c] = bad ? nan : r < valid && (u32)c < d ? base[sl * rs + c] : T{ 0 };
    }
  }
  fl_commit();
}
