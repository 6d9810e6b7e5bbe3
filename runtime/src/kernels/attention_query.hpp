// One query of a group that attends over one key/value head together (the heads that share it,
// and a few tokens of a batch): the group's kernels read each block of keys and values once for
// all of its queries, and give every query exactly what the single-query kernel gives it.
#pragma once

#include <cstddef>

namespace mote::kernels {

// Positions a group reads per block: a block's keys of a 64-wide f16 head are 8 KB, read from
// memory once and from L1 by every other query of the group.
constexpr size_t kAttentionBlock = 64;

struct AttentionQuery {
  const float *q;  // head_dim values
  float *out;      // head_dim values
  float *scores;   // end - first floats of scratch (left holding the probabilities)
  size_t first;    // the positions [first, end) it attends over
  size_t end;
};

}  // namespace mote::kernels
