// random-emu.cpp: runs random.hip's kernels (rand, randn, randint, bernoulli_scalar, dropout) on
// the host through their HIP path (hip-host/hip/hip_runtime.h) at wave sizes 64 and 32 and
// prints each output's bytes in hex, for test/cpu/random-emu.test.ts to hold bit for bit against
// the CPU reference (src/backends/cpu/random.ts). Every kernel runs twice per wave, on a grid of
// 3 blocks of 256 threads and of 1 block of 64, and the two outputs must be identical: what an
// element gets may not depend on the thread that draws it. Outputs start poisoned (0xa5), so an
// element no thread writes shows. Exits 1 when the two launches differ.
//   g++ -std=c++20 -O1 -D__HIP__ -Itest/emu/hip-host test/emu/random-emu.cpp && ./a.out
#include "../../hip-src/random.hip"
#include <cstdio>
#include <string>

// the draws the test asks the CPU for (keep in step with test/cpu/random-emu.test.ts)
constexpr u64 N = 1003;  // odd and not a multiple of 4: the blocks' tails
constexpr u32 K0 = 0x12345678u, K1 = 0x9abcdef0u;
constexpr u32 THR = 5033165u;  // (w >> 8) < THR with probability 0.3
constexpr float SCALE = 1.f / 0.7f;

static int failures = 0;

template <class T, class Launch> static void run(const char* name, int wave, Launch body) {
  std::vector<T> a(N), b(N);
  std::memset((void*)a.data(), 0xa5, N * sizeof(T));
  std::memset((void*)b.data(), 0xa5, N * sizeof(T));
  emu::launch(3, 256, wave, [&] { body(a.data()); });
  emu::launch(1, 64, wave, [&] { body(b.data()); });
  if (std::memcmp(a.data(), b.data(), N * sizeof(T)) != 0) {
    std::printf("MISMATCH %s wave %d: 3 blocks of 256 and 1 block of 64 draw differently\n", name, wave);
    failures++;
  }
  std::string hex;
  const unsigned char* p = (const unsigned char*)a.data();
  char two[3];
  for (size_t i = 0; i < N * sizeof(T); i++) {
    std::snprintf(two, sizeof two, "%02x", p[i]);
    hex += two;
  }
  std::printf("data %s %d %s\n", name, wave, hex.c_str());
}

int main() {
  // dropout's input: values every dtype holds exactly (multiples of 1/8 in [-4, 4))
  std::vector<float> xf(N);
  std::vector<bf16> xb(N);
  for (u64 i = 0; i < N; i++) {
    xf[i] = (float)((int)(i * 37 % 64) - 32) / 8.f;
    xb[i] = f32_to_bf16(xf[i]);
  }
  for (int wave : {64, 32}) {
    run<float>("rand_f32", wave, [](float* y) { rand_f32(y, N, K0, K1); });
    run<f16>("rand_f16", wave, [](f16* y) { rand_f16(y, N, K0, K1); });
    run<bf16>("rand_bf16", wave, [](bf16* y) { rand_bf16(y, N, K0, K1); });
    run<double>("rand_f64", wave, [](double* y) { rand_f64(y, N, K0, K1); });
    run<float>("randn_f32", wave, [](float* y) { randn_f32(y, N, K0, K1); });
    run<f16>("randn_f16", wave, [](f16* y) { randn_f16(y, N, K0, K1); });
    run<bf16>("randn_bf16", wave, [](bf16* y) { randn_bf16(y, N, K0, K1); });
    run<double>("randn_f64", wave, [](double* y) { randn_f64(y, N, K0, K1); });
    run<i64>("randint_i64", wave, [](i64* y) { randint_i64(y, N, K0, K1, -5, 1000); });
    run<i64>("randint_i64_full", wave, [](i64* y) { randint_i64(y, N, K0, K1, 7, 0x100000000ull); });
    run<u8>("bernoulli_scalar_u8", wave, [](u8* y) { bernoulli_scalar_u8(y, N, K0, K1, THR); });
    run<float>("dropout_f32", wave, [&](float* y) { dropout_f32(y, xf.data(), 0, N, K0, K1, THR, SCALE); });
    run<bf16>("dropout_bf16", wave, [&](bf16* y) { dropout_bf16(y, xb.data(), 0, N, K0, K1, THR, SCALE); });
  }
  if (failures) {
    std::printf("%d mismatching kernels\n", failures);
    return 1;
  }
  std::printf("ok: 0 mismatches\n");
  return 0;
}
