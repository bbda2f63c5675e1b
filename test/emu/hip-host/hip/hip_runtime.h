// A stand-in for <hip/hip_runtime.h> that lets hip-src kernels compile for the host (g++,
// -D__HIP__ so compat.h takes its HIP path, -I test/emu/hip-host) and run in the emulator of
// test/emu/rowreg-emu.cpp: a block's threads are fibers of one OS thread (ucontext), switched
// only where a thread waits: at __syncthreads for the whole block, in a shuffle for its wave (a
// slot per thread written, the wave waits, the partner's slot read, the wave waits again). Only
// what the row kernels use is here. Blocks run one after another, so a function's __shared__
// array is a plain static.
#pragma once
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <ucontext.h>
#include <vector>

#define __device__
#define __host__
#define __global__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __shared__ static

struct HostDim3 { unsigned x = 1, y = 1, z = 1; };
inline HostDim3 threadIdx, blockIdx, blockDim, gridDim;
inline int warpSize = 64;

// ---- the fibers of a block -------------------------------------------------------------------
enum HostWait { HOST_RUN, HOST_BLOCK, HOST_WAVE, HOST_DONE };
struct HostFiber { ucontext_t ctx; HostWait wait = HOST_RUN; };
struct HostBlockRun {
  std::vector<HostFiber> fibers;
  std::vector<std::vector<char>> stacks;
  std::vector<uint64_t> slots;
  ucontext_t sched;
  const std::function<void()>* kernel = nullptr;
};
inline HostBlockRun host_run;

inline void host_wait(HostWait w) {
  HostFiber& f = host_run.fibers[threadIdx.x];
  f.wait = w;
  swapcontext(&f.ctx, &host_run.sched);
}
inline void host_fiber_main() {
  (*host_run.kernel)();
  host_wait(HOST_DONE);
}

// Runs `kernel` on every thread of block blockIdx (blockDim threads, waves of warpSize): each
// fiber runs until it waits; a wave whose live threads all wait in a shuffle goes on, else a
// block whose live threads all wait at the barrier goes on; anything else is a deadlock (a
// thread missing from a barrier or a shuffle its partners reached), reported and fatal.
inline void host_run_block(const std::function<void()>& kernel) {
  const unsigned n = blockDim.x, ws = (unsigned)warpSize;
  host_run.kernel = &kernel;
  host_run.fibers.assign(n, HostFiber{});
  if (host_run.stacks.size() < n) host_run.stacks.resize(n, std::vector<char>(1 << 18));
  host_run.slots.assign(n, 0);
  for (unsigned t = 0; t < n; t++) {
    HostFiber& f = host_run.fibers[t];
    getcontext(&f.ctx);
    f.ctx.uc_stack.ss_sp = host_run.stacks[t].data();
    f.ctx.uc_stack.ss_size = host_run.stacks[t].size();
    f.ctx.uc_link = nullptr;
    makecontext(&f.ctx, host_fiber_main, 0);
  }
  for (;;) {
    for (unsigned t = 0; t < n; t++) {
      if (host_run.fibers[t].wait != HOST_RUN) continue;
      threadIdx.x = t;
      swapcontext(&host_run.sched, &host_run.fibers[t].ctx);
    }
    bool released = false, live = false, allBlock = true;
    for (unsigned w0 = 0; w0 < n; w0 += ws) {
      bool all = true, any = false;
      for (unsigned t = w0; t < w0 + ws && t < n; t++) {
        const HostWait s = host_run.fibers[t].wait;
        if (s == HOST_DONE) continue;
        any = true;
        if (s != HOST_WAVE) all = false;
      }
      if (any && all) {
        for (unsigned t = w0; t < w0 + ws && t < n; t++) if (host_run.fibers[t].wait == HOST_WAVE) host_run.fibers[t].wait = HOST_RUN;
        released = true;
      }
    }
    for (unsigned t = 0; t < n; t++) {
      const HostWait s = host_run.fibers[t].wait;
      if (s != HOST_DONE) live = true;
      if (s != HOST_DONE && s != HOST_BLOCK) allBlock = false;
    }
    if (!live) return;
    if (released) continue;
    if (allBlock) {
      for (auto& f : host_run.fibers) if (f.wait == HOST_BLOCK) f.wait = HOST_RUN;
      continue;
    }
    std::fprintf(stderr, "hip-host: block %u deadlocked (threads waiting on different barriers)\n", blockIdx.x);
    std::exit(2);
  }
}

inline void __syncthreads() { host_wait(HOST_BLOCK); }

template <class T> T __shfl_xor(T v, int mask, int width) {
  static_assert(sizeof(T) <= 8, "shuffle of a value past 8 bytes");
  const unsigned t = threadIdx.x, ws = (unsigned)width, base = t - t % ws;
  uint64_t b = 0;
  std::memcpy(&b, &v, sizeof(T));
  host_run.slots[t] = b;
  host_wait(HOST_WAVE);
  const uint64_t o = host_run.slots[base + ((t % ws) ^ (unsigned)mask)];
  host_wait(HOST_WAVE);
  T r;
  std::memcpy(&r, &o, sizeof(T));
  return r;
}

template <class T> T __shfl_up(T v, int delta, int width) {
  static_assert(sizeof(T) <= 8, "shuffle of a value past 8 bytes");
  const unsigned t = threadIdx.x, ws = (unsigned)width, lane = t % ws;
  uint64_t b = 0;
  std::memcpy(&b, &v, sizeof(T));
  host_run.slots[t] = b;
  host_wait(HOST_WAVE);
  // a lane below delta keeps its own value, as the hardware's does
  const uint64_t o = lane >= (unsigned)delta ? host_run.slots[t - (unsigned)delta] : b;
  host_wait(HOST_WAVE);
  T r;
  std::memcpy(&r, &o, sizeof(T));
  return r;
}

inline int __ffs(int x) { return __builtin_ffs(x); }
template <class To, class From> To host_bits(From f) { To t; std::memcpy(&t, &f, sizeof(To)); return t; }
inline float __int_as_float(int x) { return host_bits<float>(x); }
inline float __uint_as_float(unsigned x) { return host_bits<float>(x); }
inline unsigned __float_as_uint(float x) { return host_bits<unsigned>(x); }
inline double __longlong_as_double(long long x) { return host_bits<double>(x); }
inline long long __double_as_longlong(double x) { return host_bits<long long>(x); }

struct uint4 { unsigned x, y, z, w; };
inline uint4 make_uint4(unsigned x, unsigned y, unsigned z, unsigned w) { return uint4{ x, y, z, w }; }

// AMD's one-instruction 2^x and reciprocal, as the host computes them
#define __builtin_amdgcn_exp2f(x) std::exp2f(x)
#define __builtin_amdgcn_rcpf(x) (1.0f / (x))

using std::isfinite;
