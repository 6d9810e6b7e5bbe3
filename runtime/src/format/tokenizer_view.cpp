#include "format/tokenizer_view.hpp"

#include <cstring>

namespace mote::format {

int compare_pieces(const TokenizerView &tok, uint32_t a, uint32_t b) {
  const uint32_t a_begin = tok.piece_offsets[a], a_size = tok.piece_offsets[a + 1] - a_begin;
  const uint32_t b_begin = tok.piece_offsets[b], b_size = tok.piece_offsets[b + 1] - b_begin;
  const uint32_t common = a_size < b_size ? a_size : b_size;
  const int order = common == 0 ? 0 : std::memcmp(tok.piece_bytes + a_begin, tok.piece_bytes + b_begin, common);
  if (order != 0) return order;
  return a_size < b_size ? -1 : (a_size > b_size ? 1 : 0);
}

}  // namespace mote::format
