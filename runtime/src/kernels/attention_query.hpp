// One query of a group that attends over one key/value head together (the heads that share it,
// and a few tokens of a batch): the group's kernels read each block of keys and values once for
// all of its queries, and give every query exactly what the single-query kernel gives it.
#pragma once

#include <cstddef>

namespace mote::kernels {

// Positions a group reads per block: a block's keys of a 64-wide f16 head are 8 KB, read from
// memory once and from L1 by every other query of the group.
constexpr size_t kAttentionBlock = 64;

// Decoding at depth streams the whole cache from memory once per token, a head's row (a cache
// line or two) every kv_stride bytes: the hardware prefetchers left those rows to be fetched on
// demand (perf: most of a decode step's samples on the first use of each row; decode at depth
// 4096 ran at a quarter of the read bandwidth), so the loops ask for the rows kPrefetchAhead
// positions ahead, every line of each. Far enough ahead to cover a DRAM miss while a group of
// three 64-wide queries works through the positions between (AMD Zen 5, SmolLM2-135M decode at
// depth 4096, 1 thread: 16 positions 90 tok/s, 24 98, 48 105-119, 96 101 with an f16 cache; q8_0
// 106, 116, 135-143, 139-143; bench/README.md "prefetch distance at depth").
constexpr size_t kPrefetchAhead = 48;
// (A template on the kernel table's Arch, as every kernel function: no symbol shared between
// translation units built for different instruction sets.)
template <class Arch, class Element>
inline void prefetch_row(const Element *row, size_t head_dim) {
  for (size_t line = 0; line < head_dim * sizeof(Element); line += 64) {
    __builtin_prefetch(reinterpret_cast<const char *>(row) + line);
  }
}

struct AttentionQuery {
  const float *q;  // head_dim values
  float *out;      // head_dim values
  float *scores;   // end - first floats of scratch (left holding the probabilities)
  size_t first;    // the positions [first, end) it attends over
  size_t end;
};

}  // namespace mote::kernels
