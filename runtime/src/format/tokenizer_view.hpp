// The tokenizer section of a .mote file as the reader validated it: tables inside the model bytes.
#pragma once

#include <cstddef>
#include <cstdint>

#include "format/format.hpp"

namespace mote::format {

// Everything points into the model bytes; the format reader validated it all (see FORMAT.md).
struct TokenizerView {
  uint32_t kind = 0;  // format::TokenizerKind
  uint32_t n_tokens = 0;
  const uint32_t *piece_offsets = nullptr;  // n_tokens + 1 offsets into piece_bytes, ascending
  const char *piece_bytes = nullptr;        // token i is [piece_offsets[i], piece_offsets[i+1])
  const float *scores = nullptr;            // n_tokens merge scores (higher merges first)
  const uint8_t *types = nullptr;           // n_tokens TokenType values
  const uint32_t *sorted_ids = nullptr;     // ids ordered by (piece bytes, id), strictly ascending
  int32_t bos_id = -1;
  int32_t eos_id = -1;
  int32_t unk_id = -1;
  bool add_space_prefix = true;  // SentencePiece's dummy prefix: " " before non-empty text
  bool add_bos = false;          // the model expects BOS before text (informational)
  bool split_digits = true;      // byte-level BPE: every digit is a word of its own (SmolLM2), else GPT-2
  uint32_t pre_tokenizer = 0;    // format::PreTokenizer, validated
  uint32_t flags = 0;            // format::TokenizerFlags, validated (WordPiece reads its normalizer's)
  // Byte-level BPE only: pieces are raw bytes (the GPT-2 byte-to-unicode mapping is undone
  // at conversion), merges ascending by (left, right).
  const format::BpeMerge *merges = nullptr;
  uint32_t n_merges = 0;
};

// Orders two tokens' pieces as sorted_ids does: bytes as unsigned, shorter first on a common
// prefix. Negative, zero or positive. The reader validates sorted_ids with it.
int compare_pieces(const TokenizerView &tok, uint32_t a, uint32_t b);

}  // namespace mote::format
