// The emulators' data source: xorshift64, seeded per check, so a failing case reruns the same.
#pragma once
#include <cstdint>

struct Rng {
  uint64_t s;
  uint32_t next() { s ^= s << 13; s ^= s >> 7; s ^= s << 17; return (uint32_t)(s >> 16); }
  // [lo, hi] in steps of a millionth of the range
  double uni(double lo, double hi) { return lo + (hi - lo) * (double)(next() % 1000001) / 1e6; }
};
