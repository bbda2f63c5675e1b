// paged-tables.h: a paged cache's block tables for the paged-attention emulators, the logical ids
// [seqs][maxBlocks] written as u32 and as i64 tables whose rows are tsr entries apart (the padding
// between rows poisoned, so a kernel that reads past a row's blocks shows).
#pragma once
#include <cstddef>
#include <vector>

inline void paged_tables(const std::vector<long long>& ids, unsigned seqs, unsigned maxBlocks, long long tsr,
    std::vector<unsigned>& t32, std::vector<long long>& t64) {
  t32.assign((size_t)seqs * tsr, 0xdeadbeefu);
  t64.assign((size_t)seqs * tsr, -77);
  for (unsigned s = 0; s < seqs; s++)
    for (unsigned b = 0; b < maxBlocks; b++) {
      t32[(size_t)s * tsr + b] = (unsigned)ids[(size_t)s * maxBlocks + b];
      t64[(size_t)s * tsr + b] = ids[(size_t)s * maxBlocks + b];
    }
}
