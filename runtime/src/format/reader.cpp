#include "format/reader.hpp"

#include <cmath>
#include <cstring>

namespace mote::format {
namespace {

// Sizes are checked in 64-bit arithmetic; every sum and product guards against wrapping.
bool fits(uint64_t offset, uint64_t size, uint64_t limit) { return offset <= limit && size <= limit - offset; }

bool checked_mul(uint64_t a, uint64_t b, uint64_t *out) {
  if (a != 0 && b > UINT64_MAX / a) return false;
  *out = a * b;
  return true;
}

uint32_t read_u32(const uint8_t *p) {
  uint32_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

// The revision-5 options: each flag's field in range, no field without its flag, no combination
// the forward pass has no meaning for.
Status check_block_options(const ModelConfig &c, ErrorSink err) {
  const auto flag = [&](uint32_t bit) { return (c.flags & bit) != 0; };
  const bool gated = c.activation == Activation::swiglu || c.activation == Activation::geglu;
  if (flag(kFlagQkvBias) && flag(kFlagAttentionBias)) {
    return fail(err, MOTE_ERR_BAD_MODEL, "q/k/v-only biases and all-attention biases are both set");
  }
  if (flag(kFlagFusedGateUp) && (!gated || flag(kFlagFfnBias))) {
    return fail(err, MOTE_ERR_BAD_MODEL, "a fused gate/up matrix needs a gated FFN without biases");
  }
  if (flag(kFlagSandwichNorm) && (flag(kFlagPostNorm) || flag(kFlagNormBias))) {
    return fail(err, MOTE_ERR_BAD_MODEL, "sandwich norms are set on post-norm blocks or with norm biases");
  }
  // The factors scale the global layers' frequencies; no family combines them with windows.
  if (flag(kFlagRopeFactors) && flag(kFlagSlidingWindow)) {
    return fail(err, MOTE_ERR_BAD_MODEL, "RoPE factors and sliding windows are both set");
  }
  if ((flag(kFlagRopeFactors) || flag(kFlagQkNorm)) && c.position_kind != PositionKind::rope) {
    return fail(err, MOTE_ERR_BAD_MODEL, "RoPE factors or q/k norms are set without RoPE positions");
  }
  char number[40];
  if (flag(kFlagSlidingWindow)) {
    if (c.sliding_window == 0 || c.sliding_window >= c.max_seq_len) {
      return fail(err, MOTE_ERR_BAD_MODEL, "sliding window %u is not in [1, max_seq_len %u)",
                  static_cast<unsigned>(c.sliding_window), static_cast<unsigned>(c.max_seq_len));
    }
    if (c.swa_global_every > c.n_layers) {
      return fail(err, MOTE_ERR_BAD_MODEL, "every %u-th layer is global, but there are %u layers: none would be",
                  static_cast<unsigned>(c.swa_global_every), static_cast<unsigned>(c.n_layers));
    }
    if (!(std::isfinite(c.rope_theta_local) && c.rope_theta_local > 1.0f)) {
      return fail(err, MOTE_ERR_BAD_MODEL, "windowed layers' RoPE theta %s is not a finite number above 1",
                  float_text(c.rope_theta_local, number, sizeof number));
    }
  } else if (c.sliding_window != 0 || c.swa_global_every != 0 || c.rope_theta_local != 0.0f) {
    return fail(err, MOTE_ERR_BAD_MODEL, "sliding-window fields are set without the sliding-window flag");
  }
  if (flag(kFlagAttentionScale) ? !(std::isfinite(c.attention_scale) && c.attention_scale > 0.0f)
                                : c.attention_scale != 0.0f) {
    return fail(err, MOTE_ERR_BAD_MODEL, "attention scale %s is set without its flag, or is not finite and positive",
                float_text(c.attention_scale, number, sizeof number));
  }
  if (flag(kFlagEncoder)) {
    if (static_cast<uint32_t>(c.pooling) >= kPoolingCount) {
      return fail(err, MOTE_ERR_BAD_MODEL, "unknown pooling %u", static_cast<unsigned>(c.pooling));
    }
    if (flag(kFlagTiedEmbeddings) || flag(kFlagSlidingWindow)) {
      return fail(err, MOTE_ERR_BAD_MODEL, "an encoder has no classifier to tie and attends over the whole text");
    }
  } else if (c.pooling != Pooling::mean || flag(kFlagNormalizeEmbeddings)) {
    return fail(err, MOTE_ERR_BAD_MODEL, "pooling fields are set on a model that is not an encoder");
  }
  for (uint8_t byte : c.reserved) {
    if (byte != 0) return fail(err, MOTE_ERR_BAD_MODEL, "config reserved bytes are not zero (a newer format?)");
  }
  return MOTE_OK;
}

Status check_config(const ModelConfig &c, ErrorSink err) {
  // Limits are far above any model mote targets but keep every later product in 64 bits.
  struct Limit {
    const char *name;
    uint32_t value, max;
  };
  const Limit limits[] = {
      {"dim", c.dim, 1u << 16},
      {"n_layers", c.n_layers, 1024},
      {"n_heads", c.n_heads, 1024},
      {"n_kv_heads", c.n_kv_heads, 1024},
      {"head_dim", c.head_dim, 4096},
      {"ffn_dim", c.ffn_dim, 1u << 18},
      {"vocab_size", c.vocab_size, 1u << 24},
      {"max_seq_len", c.max_seq_len, 1u << 20},
  };
  for (const Limit &l : limits) {
    if (l.value == 0 || l.value > l.max) {
      return fail(err, MOTE_ERR_BAD_MODEL, "config field %s = %u is out of range [1, %u]", l.name,
                  static_cast<unsigned>(l.value), static_cast<unsigned>(l.max));
    }
  }
  if (static_cast<uint32_t>(c.family) == 0 || static_cast<uint32_t>(c.family) >= kFamilyCount) {
    return fail(err, MOTE_ERR_BAD_MODEL, "unknown model family %u", static_cast<unsigned>(c.family));
  }
  if (c.n_heads % c.n_kv_heads != 0) {
    return fail(err, MOTE_ERR_BAD_MODEL, "n_heads %u is not a multiple of n_kv_heads %u",
                static_cast<unsigned>(c.n_heads), static_cast<unsigned>(c.n_kv_heads));
  }
  if (c.norm_kind != NormKind::rmsnorm && c.norm_kind != NormKind::layernorm) {
    return fail(err, MOTE_ERR_BAD_MODEL, "unknown norm kind %u", static_cast<unsigned>(c.norm_kind));
  }
  char number[40];
  if (!(std::isfinite(c.norm_eps) && c.norm_eps > 0.0f && c.norm_eps < 1.0f)) {
    return fail(err, MOTE_ERR_BAD_MODEL, "norm epsilon %s is not in (0, 1)",
                float_text(c.norm_eps, number, sizeof number));
  }
  if (c.position_kind != PositionKind::rope && c.position_kind != PositionKind::learned &&
      c.position_kind != PositionKind::sinusoidal) {
    return fail(err, MOTE_ERR_BAD_MODEL, "unknown position kind %u", static_cast<unsigned>(c.position_kind));
  }
  if (c.position_kind == PositionKind::sinusoidal && c.dim % 2 != 0) {
    return fail(err, MOTE_ERR_BAD_MODEL, "dim %u is odd; sinusoidal positions come in (sin, cos) pairs",
                static_cast<unsigned>(c.dim));
  }
  if (c.position_kind == PositionKind::rope) {
    if (c.rope_layout != RopeLayout::interleaved && c.rope_layout != RopeLayout::split_half) {
      return fail(err, MOTE_ERR_BAD_MODEL, "unknown RoPE layout %u", static_cast<unsigned>(c.rope_layout));
    }
    if (!(std::isfinite(c.rope_theta) && c.rope_theta > 1.0f)) {
      return fail(err, MOTE_ERR_BAD_MODEL, "RoPE theta %s is not a finite number above 1",
                  float_text(c.rope_theta, number, sizeof number));
    }
    if (c.head_dim % 2 != 0) {
      return fail(err, MOTE_ERR_BAD_MODEL, "head_dim %u is odd; RoPE rotates pairs", static_cast<unsigned>(c.head_dim));
    }
  }
  if (c.activation != Activation::swiglu && c.activation != Activation::gelu && c.activation != Activation::relu &&
      c.activation != Activation::gelu_erf && c.activation != Activation::geglu) {
    return fail(err, MOTE_ERR_BAD_MODEL, "unknown activation %u", static_cast<unsigned>(c.activation));
  }
  if ((c.flags & ~kKnownConfigFlags) != 0) {
    return fail(err, MOTE_ERR_BAD_MODEL, "unknown config flags 0x%x", static_cast<unsigned>(c.flags));
  }
  if ((c.flags & kFlagNormBias) != 0 && c.norm_kind != NormKind::layernorm) {
    return fail(err, MOTE_ERR_BAD_MODEL, "norm biases are set but the norm is not LayerNorm");
  }
  const Status status = check_block_options(c, err);
  if (status != MOTE_OK) return status;
  const int64_t vocab = c.vocab_size;
  if (c.bos_id < -1 || c.bos_id >= vocab || c.eos_id < -1 || c.eos_id >= vocab) {
    return fail(err, MOTE_ERR_BAD_MODEL, "special token ids bos %d / eos %d are outside the vocabulary of %u",
                static_cast<int>(c.bos_id), static_cast<int>(c.eos_id), static_cast<unsigned>(c.vocab_size));
  }
  return MOTE_OK;
}

Status check_tensor(const ModelView &view, const TensorEntry &t, uint64_t data_offset, uint64_t data_end,
                    ErrorSink err) {
  char name[48];
  tensor_name(t, name, sizeof name);
  const Role role = static_cast<Role>(t.role);
  if (role_name(t.role) == nullptr) {
    return fail(err, MOTE_ERR_BAD_MODEL, "tensor '%s' has an unknown role", name);
  }
  if (is_global_role(role) ? t.layer != kNoLayer : t.layer >= view.config.n_layers) {
    return fail(err, MOTE_ERR_BAD_MODEL, "tensor '%s' has layer %u, outside the model's %u layers", name,
                static_cast<unsigned>(t.layer), static_cast<unsigned>(view.config.n_layers));
  }
  const DTypeTraits *traits = dtype_traits(t.dtype);
  if (traits == nullptr) {
    return fail(err, MOTE_ERR_BAD_MODEL, "tensor '%s' has unknown dtype %u", name, static_cast<unsigned>(t.dtype));
  }
  uint32_t n_dims = 0, rows = 0, cols = 0;
  expected_shape(view.config, role, &n_dims, &rows, &cols);
  const uint32_t want[2] = {rows, cols};
  if (t.n_dims != n_dims || t.shape[0] != want[0] || (n_dims == 2 && t.shape[1] != want[1]) ||
      (n_dims == 1 && t.shape[1] != 1) || t.shape[2] != 1 || t.shape[3] != 1) {
    return fail(err, MOTE_ERR_BAD_MODEL, "tensor '%s' has shape (%u, %u), the config needs (%u, %u)", name,
                static_cast<unsigned>(t.shape[0]), static_cast<unsigned>(t.shape[1]), static_cast<unsigned>(want[0]),
                static_cast<unsigned>(n_dims == 2 ? want[1] : 1));
  }
  const uint32_t row_elements = n_dims == 2 ? cols : rows;
  if (row_elements % traits->block_elements != 0) {
    return fail(err, MOTE_ERR_BAD_MODEL, "tensor '%s': rows of %u elements do not fill %s blocks of %u", name,
                static_cast<unsigned>(row_elements), traits->name, static_cast<unsigned>(traits->block_elements));
  }
  if (n_dims == 1 && t.dtype != static_cast<uint32_t>(DType::f32)) {
    return fail(err, MOTE_ERR_BAD_MODEL, "tensor '%s' is a vector stored as %s; vectors must be f32", name,
                traits->name);
  }
  if (rows % traits->interleaved_rows != 0) {
    return fail(err, MOTE_ERR_BAD_MODEL, "tensor '%s' has %u rows; %s interleaves rows in groups of %u", name,
                static_cast<unsigned>(rows), traits->name, static_cast<unsigned>(traits->interleaved_rows));
  }
  uint64_t elements = 0, bytes = 0;
  if (!checked_mul(rows, n_dims == 2 ? cols : 1, &elements) ||
      !checked_mul(elements / traits->block_elements, traits->block_bytes, &bytes) || bytes != t.size) {
    return fail(err, MOTE_ERR_BAD_MODEL, "tensor '%s' says %llu bytes, its shape and dtype need %llu", name,
                static_cast<unsigned long long>(t.size), static_cast<unsigned long long>(bytes));
  }
  if (t.offset % kAlignment != 0) {
    return fail(err, MOTE_ERR_BAD_MODEL, "tensor '%s' at byte %llu is not %u-byte aligned", name,
                static_cast<unsigned long long>(t.offset), static_cast<unsigned>(kAlignment));
  }
  if (t.offset < data_offset || !fits(t.offset, t.size, data_end)) {
    return fail(err, MOTE_ERR_BAD_MODEL, "tensor '%s' spans bytes [%llu, +%llu), outside the data section [%llu, %llu)",
                name, static_cast<unsigned long long>(t.offset), static_cast<unsigned long long>(t.size),
                static_cast<unsigned long long>(data_offset), static_cast<unsigned long long>(data_end));
  }
  return MOTE_OK;
}

uint32_t piece_size(const TokenizerView &tok, uint32_t id) { return tok.piece_offsets[id + 1] - tok.piece_offsets[id]; }

// Byte-level BPE merges: in range, sorted strictly by (left, right) (so each pair has one
// rank), ranks below n_merges, and each result's piece is exactly left's bytes then right's.
Status check_merges(const TokenizerHeader &h, const uint8_t *base, uint64_t size, TokenizerView *tok, ErrorSink err) {
  const uint64_t bytes = static_cast<uint64_t>(h.n_merges) * sizeof(BpeMerge);
  if (h.merges_offset % 4 != 0 || !fits(h.merges_offset, bytes, size)) {
    return fail(err, MOTE_ERR_BAD_MODEL, "tokenizer merges table [%llu, +%llu) is misaligned or past the section end",
                static_cast<unsigned long long>(h.merges_offset), static_cast<unsigned long long>(bytes));
  }
  const BpeMerge *merges = reinterpret_cast<const BpeMerge *>(base + h.merges_offset);
  for (uint32_t i = 0; i < h.n_merges; ++i) {
    const BpeMerge &m = merges[i];
    if (m.left >= h.n_tokens || m.right >= h.n_tokens || m.result >= h.n_tokens || m.rank >= h.n_merges) {
      return fail(err, MOTE_ERR_BAD_MODEL, "tokenizer merge %u (%u + %u -> %u, rank %u) is out of range",
                  static_cast<unsigned>(i), static_cast<unsigned>(m.left), static_cast<unsigned>(m.right),
                  static_cast<unsigned>(m.result), static_cast<unsigned>(m.rank));
    }
    if (i > 0 && (merges[i - 1].left > m.left || (merges[i - 1].left == m.left && merges[i - 1].right >= m.right))) {
      return fail(err, MOTE_ERR_BAD_MODEL, "tokenizer merges are not sorted by (left, right) at entry %u",
                  static_cast<unsigned>(i));
    }
    const uint32_t left_n = piece_size(*tok, m.left), right_n = piece_size(*tok, m.right);
    const char *result = tok->piece_bytes + tok->piece_offsets[m.result];
    if (piece_size(*tok, m.result) != left_n + right_n ||
        std::memcmp(result, tok->piece_bytes + tok->piece_offsets[m.left], left_n) != 0 ||
        std::memcmp(result + left_n, tok->piece_bytes + tok->piece_offsets[m.right], right_n) != 0) {
      return fail(err, MOTE_ERR_BAD_MODEL, "tokenizer merge %u: token %u is not token %u followed by token %u",
                  static_cast<unsigned>(i), static_cast<unsigned>(m.result), static_cast<unsigned>(m.left),
                  static_cast<unsigned>(m.right));
    }
  }
  tok->merges = merges;
  tok->n_merges = h.n_merges;
  return MOTE_OK;
}

// The header's fields: known kind, flags, pre-tokenizer and template, special ids in range and
// equal to the config's.
Status check_tokenizer_header(const TokenizerHeader &h, const ModelConfig &config, ErrorSink err) {
  const bool wordpiece = h.kind == static_cast<uint32_t>(TokenizerKind::wordpiece);
  if (h.kind != static_cast<uint32_t>(TokenizerKind::sentencepiece_bpe) &&
      h.kind != static_cast<uint32_t>(TokenizerKind::byte_level_bpe) && !wordpiece) {
    return fail(err, MOTE_ERR_BAD_MODEL, "unknown tokenizer kind %u", static_cast<unsigned>(h.kind));
  }
  if (h.n_tokens != config.vocab_size) {
    return fail(err, MOTE_ERR_BAD_MODEL, "tokenizer has %u tokens but the vocabulary size is %u",
                static_cast<unsigned>(h.n_tokens), static_cast<unsigned>(config.vocab_size));
  }
  if ((h.flags & ~kTokKnownFlags) != 0) {
    return fail(err, MOTE_ERR_BAD_MODEL, "unknown tokenizer flags 0x%x", static_cast<unsigned>(h.flags));
  }
  if (h.kind != static_cast<uint32_t>(TokenizerKind::byte_level_bpe) && h.n_merges != 0) {
    return fail(err, MOTE_ERR_BAD_MODEL, "a %s tokenizer has %u merges (must be 0)",
                wordpiece ? "WordPiece" : "SentencePiece", static_cast<unsigned>(h.n_merges));
  }
  // BERT's normalizer flags belong to WordPiece alone, and WordPiece takes no other text flags.
  const uint32_t foreign = wordpiece ? (kTokAddSpacePrefix | kTokNoDigitSplit) : kTokWordPieceFlags;
  if ((h.flags & foreign) != 0) {
    return fail(err, MOTE_ERR_BAD_MODEL, "tokenizer flags 0x%x do not apply to tokenizer kind %u",
                static_cast<unsigned>(h.flags & foreign), static_cast<unsigned>(h.kind));
  }
  if (wordpiece && (h.unk_id < 0 || h.unk_id >= static_cast<int64_t>(h.n_tokens))) {
    return fail(err, MOTE_ERR_BAD_MODEL, "a WordPiece tokenizer needs an unknown token: unk_id is %d of %u tokens",
                static_cast<int>(h.unk_id), static_cast<unsigned>(h.n_tokens));
  }
  if (h.pre_tokenizer >= kPreTokenizerCount) {
    return fail(err, MOTE_ERR_BAD_MODEL, "unknown pre-tokenizer %u", static_cast<unsigned>(h.pre_tokenizer));
  }
  if ((h.pre_tokenizer != 0) != ((h.flags & kTokPreTokenizer) != 0)) {
    return fail(err, MOTE_ERR_BAD_MODEL, "pre-tokenizer %u disagrees with tokenizer flag 0x%x",
                static_cast<unsigned>(h.pre_tokenizer), static_cast<unsigned>(kTokPreTokenizer));
  }
  if (h.pre_tokenizer != 0 &&
      (h.kind != static_cast<uint32_t>(TokenizerKind::byte_level_bpe) || (h.flags & kTokNoDigitSplit) != 0)) {
    return fail(err, MOTE_ERR_BAD_MODEL, "pre-tokenizer %u needs a byte-level BPE tokenizer without flag 0x%x",
                static_cast<unsigned>(h.pre_tokenizer), static_cast<unsigned>(kTokNoDigitSplit));
  }
  if (h.chat_template >= kChatTemplateCount) {
    return fail(err, MOTE_ERR_BAD_MODEL, "unknown chat template %u", static_cast<unsigned>(h.chat_template));
  }
  if (h.bos_id != config.bos_id || h.eos_id != config.eos_id) {
    return fail(err, MOTE_ERR_BAD_MODEL, "tokenizer bos/eos ids %d/%d disagree with the config's %d/%d",
                static_cast<int>(h.bos_id), static_cast<int>(h.eos_id), static_cast<int>(config.bos_id),
                static_cast<int>(config.eos_id));
  }
  const int64_t n = h.n_tokens;
  if (h.bos_id < -1 || h.bos_id >= n || h.eos_id < -1 || h.eos_id >= n || h.unk_id < -1 || h.unk_id >= n) {
    return fail(err, MOTE_ERR_BAD_MODEL, "tokenizer special ids bos %d / eos %d / unk %d are outside [0, %u)",
                static_cast<int>(h.bos_id), static_cast<int>(h.eos_id), static_cast<int>(h.unk_id),
                static_cast<unsigned>(h.n_tokens));
  }
  return MOTE_OK;
}

// The tables inside the section [base, base + size): aligned and in bounds, piece offsets
// ascending and short, token types known, scores finite.
Status check_tokenizer_tables(const TokenizerHeader &h, const uint8_t *base, uint64_t size, ErrorSink err) {
  struct Table {
    const char *name;
    uint64_t offset, bytes;
  };
  const Table tables[] = {
      {"piece offsets", h.piece_offsets_offset, (static_cast<uint64_t>(h.n_tokens) + 1) * 4},
      {"scores", h.scores_offset, static_cast<uint64_t>(h.n_tokens) * 4},
      {"token types", h.types_offset, h.n_tokens},
      {"sorted ids", h.sorted_ids_offset, static_cast<uint64_t>(h.n_tokens) * 4},
  };
  for (const Table &t : tables) {
    if (t.offset % 4 != 0 || !fits(t.offset, t.bytes, size)) {
      return fail(err, MOTE_ERR_BAD_MODEL,
                  "tokenizer %s table [%llu, +%llu) is misaligned or past the section end (%llu bytes)", t.name,
                  static_cast<unsigned long long>(t.offset), static_cast<unsigned long long>(t.bytes),
                  static_cast<unsigned long long>(size));
    }
  }
  const uint8_t *offsets = base + h.piece_offsets_offset;
  if (read_u32(offsets) != 0) {
    return fail(err, MOTE_ERR_BAD_MODEL, "tokenizer piece offsets do not start at 0");
  }
  for (uint32_t i = 0; i < h.n_tokens; ++i) {
    const uint32_t begin = read_u32(offsets + 4ull * i), end = read_u32(offsets + 4ull * (i + 1));
    if (end < begin || end - begin > h.max_piece_bytes) {
      return fail(err, MOTE_ERR_BAD_MODEL,
                  "tokenizer piece %u has offsets [%u, %u): decreasing or longer than %u bytes",
                  static_cast<unsigned>(i), static_cast<unsigned>(begin), static_cast<unsigned>(end),
                  static_cast<unsigned>(h.max_piece_bytes));
    }
  }
  const uint32_t piece_bytes = read_u32(offsets + 4ull * h.n_tokens);
  if (!fits(h.piece_bytes_offset, piece_bytes, size)) {
    return fail(err, MOTE_ERR_BAD_MODEL, "tokenizer piece bytes [%llu, +%u) run past the section end",
                static_cast<unsigned long long>(h.piece_bytes_offset), static_cast<unsigned>(piece_bytes));
  }
  const uint8_t *types = base + h.types_offset;
  for (uint32_t i = 0; i < h.n_tokens; ++i) {
    if (types[i] < kTokenNormal || types[i] > kTokenByte) {
      return fail(err, MOTE_ERR_BAD_MODEL, "token %u has unknown type %u", static_cast<unsigned>(i),
                  static_cast<unsigned>(types[i]));
    }
    float score;
    std::memcpy(&score, base + h.scores_offset + 4ull * i, sizeof score);
    if (!std::isfinite(score)) {
      return fail(err, MOTE_ERR_BAD_MODEL, "token %u has a non-finite score", static_cast<unsigned>(i));
    }
  }
  return MOTE_OK;
}

// Strictly ascending (bytes, id) with every id in range proves sorted_ids is a permutation,
// which binary search relies on.
Status check_sorted_ids(const TokenizerView &tok, ErrorSink err) {
  for (uint32_t i = 0; i < tok.n_tokens; ++i) {
    const uint32_t id = tok.sorted_ids[i];
    if (id >= tok.n_tokens) {
      return fail(err, MOTE_ERR_BAD_MODEL, "tokenizer sorted index entry %u is id %u, outside the vocabulary",
                  static_cast<unsigned>(i), static_cast<unsigned>(id));
    }
    if (i > 0) {
      const uint32_t prev = tok.sorted_ids[i - 1];
      const int c = compare_pieces(tok, prev, id);
      if (c > 0 || (c == 0 && prev >= id)) {
        return fail(err, MOTE_ERR_BAD_MODEL, "tokenizer sorted index is out of order at entry %u",
                    static_cast<unsigned>(i));
      }
    }
  }
  return MOTE_OK;
}

Status check_tokenizer(ModelView *view, uint64_t offset, uint64_t size, ErrorSink err) {
  if (offset % kAlignment != 0 || !fits(offset, size, view->size) || size < sizeof(TokenizerHeader)) {
    return fail(err, MOTE_ERR_BAD_MODEL, "tokenizer section [%llu, +%llu) is misaligned, too small or past the end",
                static_cast<unsigned long long>(offset), static_cast<unsigned long long>(size));
  }
  const uint8_t *base = view->bytes + offset;
  TokenizerHeader h;
  std::memcpy(&h, base, sizeof h);
  Status status = check_tokenizer_header(h, view->config, err);
  if (status == MOTE_OK) status = check_tokenizer_tables(h, base, size, err);
  if (status != MOTE_OK) return status;
  TokenizerView &tok = view->tokenizer;
  tok.n_tokens = h.n_tokens;
  tok.piece_offsets = reinterpret_cast<const uint32_t *>(base + h.piece_offsets_offset);
  tok.piece_bytes = reinterpret_cast<const char *>(base + h.piece_bytes_offset);
  tok.scores = reinterpret_cast<const float *>(base + h.scores_offset);
  tok.types = base + h.types_offset;
  tok.sorted_ids = reinterpret_cast<const uint32_t *>(base + h.sorted_ids_offset);
  tok.bos_id = h.bos_id;
  tok.eos_id = h.eos_id;
  tok.unk_id = h.unk_id;
  tok.add_space_prefix = (h.flags & kTokAddSpacePrefix) != 0;
  tok.add_bos = (h.flags & kTokAddBos) != 0;
  tok.split_digits = (h.flags & kTokNoDigitSplit) == 0;
  tok.pre_tokenizer = h.pre_tokenizer;
  tok.flags = h.flags;
  status = check_sorted_ids(tok, err);
  if (status != MOTE_OK) return status;
  tok.kind = h.kind;
  if (h.kind == static_cast<uint32_t>(TokenizerKind::byte_level_bpe)) {
    status = check_merges(h, base, size, &tok, err);
    if (status != MOTE_OK) return status;
  }
  view->tokenizer_kind = h.kind;
  view->chat_template = h.chat_template;
  return MOTE_OK;
}

}  // namespace

bool expected_shape(const ModelConfig &c, Role role, uint32_t *n_dims, uint32_t *rows, uint32_t *cols) {
  const RoleInfo *info = role_info(static_cast<uint32_t>(role));
  if (info == nullptr) {
    *n_dims = 0;
    *rows = *cols = 0;
    return false;
  }
  const bool vector = info->cols == info->rows;
  *n_dims = vector ? 1 : 2;
  *rows = extent(c, info->rows);
  *cols = vector ? 1 : extent(c, info->cols);
  return true;
}

const TensorEntry *find_tensor(const ModelView &view, Role role, uint32_t layer) {
  for (uint32_t i = 0; i < view.n_tensors; ++i) {
    const TensorEntry &t = view.tensors[i];
    if (t.role == static_cast<uint32_t>(role) && t.layer == layer) return &t;
  }
  return nullptr;
}

namespace {

// The file header against the bytes given: magic, version, section sizes, file size, checksum.
Status check_file_header(const FileHeader &h, const uint8_t *bytes, size_t n, ErrorSink err) {
  if (std::memcmp(h.magic, kMagic, sizeof kMagic) != 0) {
    return fail(err, MOTE_ERR_BAD_MODEL, "bad magic: not a .mote file (it starts with %02x %02x %02x %02x)", h.magic[0],
                h.magic[1], h.magic[2], h.magic[3]);
  }
  if (h.version != kVersion) {
    return fail(err, MOTE_ERR_BAD_MODEL, "unsupported .mote format version %u (this build reads version %u)",
                static_cast<unsigned>(h.version), static_cast<unsigned>(kVersion));
  }
  if (h.header_size != sizeof(FileHeader) || h.config_size != sizeof(ModelConfig) ||
      h.tensor_entry_size != sizeof(TensorEntry)) {
    return fail(err, MOTE_ERR_BAD_MODEL,
                "header, config or tensor entry size (%u, %u, %u) differs from version 1's (128, 128, 64)",
                static_cast<unsigned>(h.header_size), static_cast<unsigned>(h.config_size),
                static_cast<unsigned>(h.tensor_entry_size));
  }
  if (h.file_size != n) {
    return fail(err, MOTE_ERR_BAD_MODEL,
                "header says the file is %llu bytes but %llu bytes were given (truncated or padded?)",
                static_cast<unsigned long long>(h.file_size), static_cast<unsigned long long>(n));
  }
  if (n % kAlignment != 0) {
    return fail(err, MOTE_ERR_BAD_MODEL, "file size %llu is not a multiple of %u", static_cast<unsigned long long>(n),
                static_cast<unsigned>(kAlignment));
  }
  const uint64_t checksum = payload_checksum(bytes + sizeof(FileHeader), n - sizeof(FileHeader));
  if (checksum != h.payload_checksum) {
    return fail(err, MOTE_ERR_BAD_MODEL, "payload checksum %016llx does not match the header's %016llx (corrupt file)",
                static_cast<unsigned long long>(checksum), static_cast<unsigned long long>(h.payload_checksum));
  }
  return MOTE_OK;
}

// Each tensor entry (bounds, dtype, shape: check_tensor), no (role, layer) twice.
Status check_tensor_table(ModelView *view, const FileHeader &h, ErrorSink err) {
  view->tensors = reinterpret_cast<const TensorEntry *>(view->bytes + h.tensor_table_offset);
  view->n_tensors = h.tensor_count;
  for (uint32_t i = 0; i < h.tensor_count; ++i) {
    const TensorEntry &t = view->tensors[i];
    const Status status = check_tensor(*view, t, h.data_offset, h.data_offset + h.data_size, err);
    if (status != MOTE_OK) return status;
    for (uint32_t j = 0; j < i; ++j) {
      if (view->tensors[j].role == t.role && view->tensors[j].layer == t.layer) {
        char name[48];
        tensor_name(t, name, sizeof name);
        return fail(err, MOTE_ERR_BAD_MODEL, "tensor '%s' appears twice in the tensor table", name);
      }
    }
    view->weight_bytes += t.size;
  }
  return MOTE_OK;
}

// Every tensor the block spec needs must be present, and no other (the classifier only when
// untied, biases only when the config has them).
Status check_tensor_roles(const ModelView *view, ErrorSink err) {
  const BlockSpec spec = block_spec(view->config);
  for (uint32_t role = 1; role < kRoleCount; ++role) {
    const Role r = static_cast<Role>(role);
    const bool global = is_global_role(r);
    for (uint32_t k = 0; role_needed(spec, r) && k < (global ? 1 : view->config.n_layers); ++k) {
      const uint32_t layer = global ? kNoLayer : k;
      if (find_tensor(*view, r, layer) == nullptr) {
        TensorEntry probe{};
        probe.role = role;
        probe.layer = layer;
        char name[48];
        tensor_name(probe, name, sizeof name);
        return fail(err, MOTE_ERR_BAD_MODEL, "tensor '%s' is missing", name);
      }
    }
  }
  for (uint32_t i = 0; i < view->n_tensors; ++i) {  // then any the spec has no use for
    const TensorEntry &t = view->tensors[i];
    if (!role_needed(spec, static_cast<Role>(t.role))) {
      char name[48];
      tensor_name(t, name, sizeof name);
      return fail(err, MOTE_ERR_BAD_MODEL,
                  t.role == static_cast<uint32_t>(Role::output)
                      ? "tensor '%s' is present but embeddings are tied"
                      : "tensor '%s' is present but the config's architecture has no use for it",
                  name);
    }
  }
  return MOTE_OK;
}

// RoPE factors divide frequencies: a zero, negative or non-finite one would rotate by NaN.
// (A handful of floats, so checked at load, unlike the weights.)
Status check_rope_factors(const ModelView *view, ErrorSink err) {
  if (const TensorEntry *factors = find_tensor(*view, Role::rope_freqs, kNoLayer)) {
    for (uint32_t i = 0; i < factors->shape[0]; ++i) {
      float f;
      std::memcpy(&f, view->bytes + factors->offset + 4ull * i, sizeof f);
      if (!(std::isfinite(f) && f > 0.0f)) {
        char number[40];
        return fail(err, MOTE_ERR_BAD_MODEL,
                    "tensor 'rope_freqs' holds %s at index %u (factors must be finite and positive)",
                    float_text(f, number, sizeof number), static_cast<unsigned>(i));
      }
    }
  }
  return MOTE_OK;
}

}  // namespace

Status open_model(const uint8_t *bytes, size_t n, ModelView *view, ErrorSink err) {
  *view = ModelView{};
  if (bytes == nullptr) return fail(err, MOTE_ERR_INVALID_ARGUMENT, "model bytes are null");
  if (n < sizeof(FileHeader)) {
    return fail(err, MOTE_ERR_BAD_MODEL, "file is %llu bytes, shorter than the %u-byte header",
                static_cast<unsigned long long>(n), static_cast<unsigned>(sizeof(FileHeader)));
  }
  if (reinterpret_cast<uintptr_t>(bytes) % kAlignment != 0) {
    return fail(err, MOTE_ERR_INVALID_ARGUMENT, "model bytes must be %u-byte aligned (mmap them or align the buffer)",
                static_cast<unsigned>(kAlignment));
  }
  FileHeader h;
  std::memcpy(&h, bytes, sizeof h);
  Status status = check_file_header(h, bytes, n, err);
  if (status != MOTE_OK) return status;
  view->bytes = bytes;
  view->size = n;
  if (h.config_offset % kAlignment != 0 || !fits(h.config_offset, sizeof(ModelConfig), n)) {
    return fail(err, MOTE_ERR_BAD_MODEL, "config at byte %llu is misaligned or past the end of the file",
                static_cast<unsigned long long>(h.config_offset));
  }
  std::memcpy(&view->config, bytes + h.config_offset, sizeof(ModelConfig));
  status = check_config(view->config, err);
  if (status != MOTE_OK) return status;

  if (h.tensor_count > 4096) {
    return fail(err, MOTE_ERR_BAD_MODEL, "tensor count %u is too large (at most 4096)",
                static_cast<unsigned>(h.tensor_count));
  }
  const uint64_t table_bytes = static_cast<uint64_t>(h.tensor_count) * sizeof(TensorEntry);
  if (h.tensor_table_offset % kAlignment != 0 || !fits(h.tensor_table_offset, table_bytes, n)) {
    return fail(err, MOTE_ERR_BAD_MODEL, "tensor table [%llu, +%llu) is misaligned or past the end of the file",
                static_cast<unsigned long long>(h.tensor_table_offset), static_cast<unsigned long long>(table_bytes));
  }
  if (h.data_offset % kAlignment != 0 || h.data_offset < sizeof(FileHeader) || !fits(h.data_offset, h.data_size, n)) {
    return fail(err, MOTE_ERR_BAD_MODEL, "data section [%llu, +%llu) is misaligned or past the end of the file",
                static_cast<unsigned long long>(h.data_offset), static_cast<unsigned long long>(h.data_size));
  }
  status = check_tensor_table(view, h, err);
  if (status == MOTE_OK) status = check_tensor_roles(view, err);
  if (status == MOTE_OK) status = check_rope_factors(view, err);
  if (status != MOTE_OK) return status;
  return check_tokenizer(view, h.tokenizer_offset, h.tokenizer_size, err);
}

}  // namespace mote::format
