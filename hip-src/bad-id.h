// bad-id.h: the device-side error record of the indexing kernels (indexing.hip, index-rows.hip).
// A kernel that meets an id outside [0, limit) skips it and records the first such id here;
// src/runtime/device-errors.ts reads the record back and throws an IndexError at the next
// readback. Only bad ids reach the atomics, so a launch with good ids pays one compare per id.
#pragma once
#include "compat.h"

// The error record: u32 tag (0 = clear), u32 done (1 once the fields below are written),
// u64 id (the id's bits, zero-extended for u8/u32), u64 pos, u64 limit. 32 bytes.
RT_DEVICE void record_bad_id(u64* err, u32 tag, u64 id, u64 pos, u64 limit) {
  u32* head = reinterpret_cast<u32*>(err);
  // a plain look first: with many bad ids only the first few threads reach the atomic
  if (*reinterpret_cast<volatile u32*>(head) != 0u) return;
  if (atomicCAS(head, 0u, tag) != 0u) return;
  err[1] = id;
  err[2] = pos;
  err[3] = limit;
  __threadfence();
  atomicExch(head + 1, 1u);
}
