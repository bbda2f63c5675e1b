// A stand-in for <hip/hip_runtime.h> that runs kernel sources on the host (g++ or clang++,
// -D__HIP__ so compat.h takes its HIP path, -I test/emu/hip-host), for the emulators of test/emu/
// (flash-emu.cpp adds the matrix instructions, amdgcn-mma.h): each GPU thread of a block is a fiber (ucontext), blocks
// run one after another, and the wave size is a variable (32 or 64), so the AMD wave64 paths run
// where no AMD GPU is.
//
// What it models: __syncthreads (a barrier of the block's threads), the wave's __ballot,
// __shfl, __shfl_up, __shfl_xor and __syncwarp (every lane of the wave must arrive, as on a GPU; each call is
// a barrier of the wave), LDS and global atomics. Fibers switch only at those barriers, in an order shuffled each
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
#include <type_traits>
#include <vector>

#define __device__
#define __host__
#define __global__
#define __forceinline__ inline
#define __launch_bounds__(...)
// A function's __shared__ array is a plain static (blocks run one after another); a file's
// extern LDS (sort.hip, topk.hip) is defined by the emulator that includes it, which redefines
// __shared__ as nothing for those declarations.
#define __shared__ static

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
  std::vector<unsigned char> wide[2];  // [parity][tid * WIDE]: a wide wave op's payloads
  unsigned long progress = 0;
  std::function<void()> body;
  // if set, what a 64-bit atomicExch stores given the old and the new word: a model of a write
  // that other blocks see late (blocks run one after another here, so otherwise every write is
  // seen at once)
  std::function<uint64_t(uint64_t, uint64_t)> exch64;
};
inline State st;
// bytes a lane may publish in one wide wave op (a matrix instruction's A, B and C operands)
constexpr size_t WIDE = 128;

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

// every lane publishes n bytes at v, waits for its wave, and gets all lanes' payloads, WIDE apart
template <class F>
inline auto wave_op_wide(const void* v, size_t n, F f) {
  if (n > WIDE) { std::fprintf(stderr, "emu: a wave op of %zu bytes a lane (at most %zu)\n", n, WIDE); std::abort(); }
  const unsigned w = st.cur->tid / (unsigned)st.wave;
  const unsigned parity = st.wave_bar[w].gen & 1u;
  std::memcpy(&st.wide[parity][st.cur->tid * WIDE], v, n);
  arrive(st.wave_bar[w], (unsigned)st.wave);
  return f(&st.wide[parity][wave_first() * WIDE]);
}

inline void entry() {
  st.body();
  st.cur->done = true;
  st.progress++;
  _longjmp(st.sched_jb, 1);
}

// runs fiber f until it yields or ends
// not inlined: the _setjmp stays out of launch()'s frame, whose locals a longjmp could clobber
[[gnu::noinline]] inline void resume(Fiber& f) {
  st.cur = &f;
  if (_setjmp(st.sched_jb)) return;
  if (!f.started) {
    f.started = true;
    swapcontext(&st.sched, &f.ctx);
  } else {
    _longjmp(f.jb, 1);
  }
}

// not inlined either: getcontext returns twice, like _setjmp
[[gnu::noinline]] inline void prepare(Fiber& f) {
  getcontext(&f.ctx);
  f.ctx.uc_stack.ss_sp = f.stack.data();
  f.ctx.uc_stack.ss_size = f.stack.size();
  f.ctx.uc_link = nullptr;
  makecontext(&f.ctx, entry, 0);
}

// runs body once per thread of each block of `grid` (x fastest), `block` threads a block
inline void launch(Dim3 grid, unsigned block, int wave, const std::function<void()>& body) {
  if (block % (unsigned)wave) { std::fprintf(stderr, "emu: block %u is not a multiple of the wave %d\n", block, wave); std::abort(); }
  st.wave = wave;
  st.block = {block, 1, 1};
  st.grid = grid;
  st.body = body;
  st.fibers.resize(block);
  for (auto& f : st.fibers) if (f.stack.empty()) f.stack.resize(256 * 1024);
  const unsigned blocks = grid.x * grid.y * grid.z;
  for (unsigned b = 0; b < blocks; b++) {
    st.block_idx = {b % grid.x, b / grid.x % grid.y, b / grid.x / grid.y};
    st.block_bar = Barrier{};
    st.wave_bar.assign(block / (unsigned)wave, Barrier{});
    st.slots[0].assign(block, 0);
    st.slots[1].assign(block, 0);
    st.wide[0].assign(block * WIDE, 0);
    st.wide[1].assign(block * WIDE, 0);
    std::vector<unsigned> order(block);
    for (unsigned t = 0; t < block; t++) {
      Fiber& f = st.fibers[t];
      f.tid = t;
      f.done = false;
      f.started = false;
      prepare(f);
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
inline void launch(unsigned grid, unsigned block, int wave, const std::function<void()>& body) {
  launch(Dim3{grid, 1, 1}, block, wave, body);
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
// a value of up to 8 bytes through a wave op
template <class T, class F>
inline T wave_bits(T v, F pick) {
  static_assert(sizeof(T) <= 8, "shuffle of a value past 8 bytes");
  uint64_t b = 0;
  std::memcpy(&b, &v, sizeof(T));
  const uint64_t o = emu::wave_op(b, pick);
  T r;
  std::memcpy(&r, &o, sizeof(T));
  return r;
}
// lanes below `d` (within their `width` group) get their own value back, as on the GPU
template <class T>
inline T __shfl_up(T v, unsigned d, int width) {
  const unsigned me = emu::lane(), w = (unsigned)width, sub = me % w;
  return wave_bits(v, [me, d, sub](const uint64_t* s) { return s[sub >= d ? me - d : me]; });
}
template <class T>
inline T __shfl_xor(T v, int mask, int width) {
  const unsigned me = emu::lane(), w = (unsigned)width, base = me - me % w;
  return wave_bits(v, [me, mask, w, base](const uint64_t* s) { return s[base + ((me % w) ^ (unsigned)mask)]; });
}

// LDS and global atomics: fibers switch only at barriers, so a plain read-modify-write is
// atomic here (and blocks run one after another: what an earlier block wrote is there)
inline unsigned atomicAdd(unsigned* p, unsigned v) { const unsigned old = *p; *p = old + v; return old; }
inline unsigned long long atomicAdd(unsigned long long* p, unsigned long long v) { const unsigned long long old = *p; *p = old + v; return old; }
inline float atomicAdd(float* p, float v) { const float old = *p; *p = old + v; return old; }
inline double atomicAdd(double* p, double v) { const double old = *p; *p = old + v; return old; }
inline unsigned atomicCAS(unsigned* p, unsigned cmp, unsigned v) { const unsigned old = *p; if (old == cmp) *p = v; return old; }
inline unsigned atomicExch(unsigned* p, unsigned v) { const unsigned old = *p; *p = v; return old; }
inline unsigned atomicMax(unsigned* p, unsigned v) { const unsigned old = *p; if (v > old) *p = v; return old; }
inline unsigned long long atomicExch(unsigned long long* p, unsigned long long v) {
  const unsigned long long old = *p;
  *p = emu::st.exch64 ? emu::st.exch64(old, v) : v;
  return old;
}
inline void __threadfence() {}
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
inline int __ffs(int x) { return __builtin_ffs(x); }
inline unsigned __umulhi(unsigned a, unsigned b) { return (unsigned)(((unsigned long long)a * b) >> 32); }
inline unsigned long long __umul64hi(unsigned long long a, unsigned long long b) { return (unsigned long long)(((unsigned __int128)a * b) >> 64); }
inline float __int_as_float(int x) { float f; std::memcpy(&f, &x, 4); return f; }
inline double __longlong_as_double(long long x) { double d; std::memcpy(&d, &x, 8); return d; }

struct uint4 { unsigned x, y, z, w; };
inline uint4 make_uint4(unsigned x, unsigned y, unsigned z, unsigned w) { return uint4{ x, y, z, w }; }

// AMD's one-instruction 2^x and reciprocal, as the host computes them
#define __builtin_amdgcn_exp2f(x) std::exp2f(x)
#define __builtin_amdgcn_rcpf(x) (1.0f / (x))

using std::isfinite;

// HIP's global min and max of integers (the kernels' i64 and u32 bounds), in the type both
// arguments convert to
template <class A, class B> inline std::common_type_t<A, B> min(A a, B b) { return b < a ? b : a; }
template <class A, class B> inline std::common_type_t<A, B> max(A a, B b) { return a < b ? b : a; }
