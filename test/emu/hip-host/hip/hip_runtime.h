// A stand-in for <hip/hip_runtime.h> that runs kernel sources on the host, for radix-emu.cpp:
// each GPU thread of a block is a fiber (ucontext), blocks run one after another, and the
// wave size is a variable (32 or 64), so the AMD wave64 paths run where no AMD GPU is.
//
// What it models: __syncthreads (a barrier of the block's threads), the wave's __ballot,
// __shfl, __shfl_up and __syncwarp (every lane of the wave must arrive, as on a GPU; each call is
// a barrier of the wave), LDS atomics. Fibers switch only at those barriers, in an order shuffled each
// round, so a missing __syncthreads between a write and another thread's read shows up as a
// wrong result. A barrier that some threads never reach is reported and aborts (deadlock).
// Not modelled: memory races between barriers (compute-sanitizer racecheck covers those on the
// GPU), timing, bank conflicts.
#pragma once
#include <setjmp.h>
#include <ucontext.h>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>
#include <vector>

#define __device__
#define __host__
#define __global__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __shared__

namespace emu {

struct Dim3 { unsigned x, y, z; };

struct Barrier {
  unsigned gen = 0, arrived = 0;
};

// A fiber starts on its own stack through makecontext/swapcontext and switches afterwards with
// _setjmp/_longjmp, which (unlike swapcontext) make no system call to save the signal mask.
struct Fiber {
  ucontext_t ctx;
  jmp_buf jb;
  bool started = false;
  std::vector<char> stack;
  unsigned tid = 0;
  bool done = false;
};

struct State {
  int wave = 32;
  Dim3 block{1, 1, 1}, grid{1, 1, 1}, block_idx{0, 0, 0};
  std::vector<Fiber> fibers;
  Fiber* cur = nullptr;
  ucontext_t sched;
  jmp_buf sched_jb;
  std::mt19937 rng{12345};
  Barrier block_bar;
  std::vector<Barrier> wave_bar;
  std::vector<uint64_t> slots[2];  // [parity][tid]: the values a wave op exchanges
  unsigned long progress = 0;
  std::function<void()> body;
};
inline State st;

inline void yield() {
  if (!_setjmp(st.cur->jb)) _longjmp(st.sched_jb, 1);
}

// arrive at b (n participants) and wait until all have
inline void arrive(Barrier& b, unsigned n) {
  const unsigned g = b.gen;
  st.progress++;
  if (++b.arrived == n) { b.arrived = 0; b.gen++; }
  while (b.gen == g) yield();
}

inline unsigned lane() { return st.cur->tid % (unsigned)st.wave; }
inline unsigned wave_first() { return st.cur->tid - lane(); }

// every lane publishes v, waits for its wave, and gets all lanes' values
template <class F>
inline auto wave_op(uint64_t v, F f) {
  const unsigned w = st.cur->tid / (unsigned)st.wave;
  const unsigned parity = st.wave_bar[w].gen & 1u;
  st.slots[parity][st.cur->tid] = v;
  arrive(st.wave_bar[w], (unsigned)st.wave);
  return f(&st.slots[parity][wave_first()]);
}

inline void entry() {
  st.body();
  st.cur->done = true;
  st.progress++;
  _longjmp(st.sched_jb, 1);
}

// runs fiber f until it yields or ends
inline void resume(Fiber& f) {
  st.cur = &f;
  if (_setjmp(st.sched_jb)) return;
  if (!f.started) {
    f.started = true;
    swapcontext(&st.sched, &f.ctx);
  } else {
    _longjmp(f.jb, 1);
  }
}

// runs body once per thread of each block of `grid`, `block` threads a block
inline void launch(unsigned grid, unsigned block, int wave, const std::function<void()>& body) {
  if (block % (unsigned)wave) { std::fprintf(stderr, "emu: block %u is not a multiple of the wave %d\n", block, wave); std::abort(); }
  st.wave = wave;
  st.block = {block, 1, 1};
  st.grid = {grid, 1, 1};
  st.body = body;
  st.fibers.resize(block);
  for (auto& f : st.fibers) if (f.stack.empty()) f.stack.resize(256 * 1024);
  for (unsigned b = 0; b < grid; b++) {
    st.block_idx = {b, 0, 0};
    st.block_bar = Barrier{};
    st.wave_bar.assign(block / (unsigned)wave, Barrier{});
    st.slots[0].assign(block, 0);
    st.slots[1].assign(block, 0);
    std::vector<unsigned> order(block);
    for (unsigned t = 0; t < block; t++) {
      Fiber& f = st.fibers[t];
      f.tid = t;
      f.done = false;
      f.started = false;
      getcontext(&f.ctx);
      f.ctx.uc_stack.ss_sp = f.stack.data();
      f.ctx.uc_stack.ss_size = f.stack.size();
      f.ctx.uc_link = nullptr;
      makecontext(&f.ctx, entry, 0);
      order[t] = t;
    }
    unsigned left = block;
    while (left) {
      std::shuffle(order.begin(), order.end(), st.rng);
      const unsigned long before = st.progress;
      for (unsigned t : order) {
        Fiber& f = st.fibers[t];
        if (f.done) continue;
        resume(f);
        if (f.done) left--;
      }
      if (left && st.progress == before) {
        std::fprintf(stderr, "emu: deadlock in block %u: %u threads wait at a barrier the others never reach\n", b, left);
        std::abort();
      }
    }
    st.cur = nullptr;
  }
}

}  // namespace emu

#define threadIdx (emu::Dim3{emu::st.cur->tid, 0, 0})
#define blockIdx (emu::st.block_idx)
#define blockDim (emu::st.block)
#define gridDim (emu::st.grid)
#define warpSize (emu::st.wave)

inline void __syncthreads() { emu::arrive(emu::st.block_bar, emu::st.block.x); }

inline unsigned long long __ballot(int p) {
  return emu::wave_op(p ? 1u : 0u, [](const uint64_t* s) {
    unsigned long long m = 0;
    for (int l = 0; l < emu::st.wave; l++) m |= (unsigned long long)(s[l] != 0) << l;
    return m;
  });
}
inline unsigned __shfl(unsigned v, int src, int width) {
  (void)width;
  return emu::wave_op(v, [src](const uint64_t* s) { return (unsigned)s[src & (emu::st.wave - 1)]; });
}
// lanes below `d` get their own value back, as on the GPU
inline unsigned __shfl_up(unsigned v, unsigned d, int width) {
  (void)width;
  const unsigned me = emu::lane();
  return emu::wave_op(v, [me, d](const uint64_t* s) { return (unsigned)s[me >= d ? me - d : me]; });
}

// LDS atomics: fibers switch only at barriers, so a plain read-modify-write is atomic here
inline unsigned atomicAdd(unsigned* p, unsigned v) { const unsigned old = *p; *p = old + v; return old; }
inline unsigned long long atomicOr(unsigned long long* p, unsigned long long v) { const unsigned long long old = *p; *p = old | v; return old; }
// a barrier of the wave (CUDA's __syncwarp; the kernels' wave_sync on the host)
inline void __syncwarp() { emu::wave_op(0, [](const uint64_t*) { return 0; }); }

inline int __popcll(unsigned long long x) { return __builtin_popcountll(x); }
inline int __popc(unsigned x) { return __builtin_popcount(x); }
inline int __clzll(long long x) { return x ? __builtin_clzll((unsigned long long)x) : 64; }
inline int __clz(int x) { return x ? __builtin_clz((unsigned)x) : 32; }
inline unsigned __float_as_uint(float f) { unsigned u; std::memcpy(&u, &f, 4); return u; }
inline float __uint_as_float(unsigned u) { float f; std::memcpy(&f, &u, 4); return f; }
inline long long __double_as_longlong(double d) { long long u; std::memcpy(&u, &d, 8); return u; }
using std::isfinite;
