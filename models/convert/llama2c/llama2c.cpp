#include "llama2c/llama2c.hpp"

#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>

#include "families.hpp"
#include "io/file_map.hpp"
#include "quant/dequant.hpp"
#include "text/tokenizer.hpp"

namespace mote::convert {
namespace {

using format::DType;
using format::Role;

// True for SentencePiece's byte pieces "<0xXX>".
bool is_byte_piece(const std::string &piece) {
  return piece.size() == 6 && piece.compare(0, 3, "<0x") == 0 && piece[5] == '>' &&
         std::isxdigit(static_cast<unsigned char>(piece[3])) && std::isxdigit(static_cast<unsigned char>(piece[4]));
}

bool load_tokenizer(const std::string &path, uint32_t vocab_size, TokenizerData *tok, std::string *error) {
  // Mapped, not read: a huge file costs nothing past the vocab_size entries parsed.
  posix::FileMap bytes;
  if (!bytes.open(path, error)) return false;
  size_t at = 0;
  auto take = [&](void *dst, size_t n) {
    if (bytes.size() - at < n) return false;
    std::memcpy(dst, bytes.bytes() + at, n);
    at += n;
    return true;
  };
  int32_t max_token_length = 0;
  if (!take(&max_token_length, 4) || max_token_length <= 0) {
    *error = "tokenizer '" + path + "' has no valid max_token_length header";
    return false;
  }
  for (uint32_t i = 0; i < vocab_size; ++i) {
    float score = 0;
    int32_t length = 0;
    if (!take(&score, 4) || !take(&length, 4) || length < 0 || length > max_token_length ||
        bytes.size() - at < static_cast<size_t>(length)) {
      *error = "tokenizer '" + path + "' ends or is corrupt at token " + std::to_string(i) + " of " +
               std::to_string(vocab_size) + " (does it belong to this checkpoint?)";
      return false;
    }
    // The encoder compares merge scores: a NaN would make its choices depend on their order.
    if (!std::isfinite(score)) {
      const char *value = std::isnan(score) ? "nan" : score > 0 ? "inf" : "-inf";
      *error = "tokenizer '" + path + "' gives token " + std::to_string(i) + " a non-finite score (" + value + ")";
      return false;
    }
    tok->pieces.emplace_back(reinterpret_cast<const char *>(bytes.bytes() + at), static_cast<size_t>(length));
    tok->scores.push_back(score);
    at += static_cast<size_t>(length);
  }
  // llama2.c's fixed ids: 0 <unk>, 1 <s> (BOS), 2 </s> (EOS).
  tok->kind = format::TokenizerKind::sentencepiece_bpe;
  tok->flags = format::kTokAddSpacePrefix | format::kTokAddBos;  // run.c always starts with BOS
  tok->unk_id = vocab_size > 0 ? 0 : -1;
  tok->bos_id = vocab_size > 1 ? 1 : -1;
  tok->eos_id = vocab_size > 2 ? 2 : -1;
  for (uint32_t i = 0; i < vocab_size; ++i) {
    uint8_t type = kTokenNormal;
    if (static_cast<int32_t>(i) == tok->unk_id)
      type = kTokenUnknown;
    else if (static_cast<int32_t>(i) == tok->bos_id || static_cast<int32_t>(i) == tok->eos_id)
      type = kTokenControl;
    else if (is_byte_piece(tok->pieces[i]))
      type = kTokenByte;
    tok->types.push_back(type);
  }
  return true;
}

}  // namespace

bool load_llama2c(const std::string &checkpoint_path, const std::string &tokenizer_path, const Llama2cOptions &options,
                  ModelData *out, std::string *error) {
  // Mapped, not read: the size check below needs only the header.
  posix::FileMap bytes;
  if (!bytes.open(checkpoint_path, error)) return false;
  int32_t header[7];
  if (bytes.size() < sizeof header) {
    *error = "'" + checkpoint_path + "' is too short for a llama2.c checkpoint header";
    return false;
  }
  std::memcpy(header, bytes.bytes(), sizeof header);
  const int32_t dim = header[0], hidden = header[1], layers = header[2], heads = header[3], kv_heads = header[4];
  const bool shared_classifier = header[5] > 0;
  const int64_t vocab = header[5] > 0 ? header[5] : -static_cast<int64_t>(header[5]);
  const int32_t seq_len = header[6];
  if (dim <= 0 || hidden <= 0 || layers <= 0 || heads <= 0 || kv_heads <= 0 || vocab <= 0 || seq_len <= 0 ||
      dim % heads != 0 || heads % kv_heads != 0 || (dim / heads) % 2 != 0 || dim / heads > 4096 || dim > 65536 ||
      hidden > (1 << 18) || layers > 1024 || vocab > (1 << 24) || seq_len > (1 << 20)) {
    char line[200];
    std::snprintf(line, sizeof line,
                  "'%s' is not a llama2.c checkpoint: header (dim %d, hidden %d, layers %d, heads %d, kv heads %d, "
                  "vocab %lld, seq_len %d) is inconsistent",
                  checkpoint_path.c_str(), dim, hidden, layers, heads, kv_heads, static_cast<long long>(vocab),
                  seq_len);
    *error = line;
    return false;
  }
  const uint64_t head_size = static_cast<uint64_t>(dim / heads);
  const uint64_t kv_dim = static_cast<uint64_t>(kv_heads) * head_size;
  const uint64_t L = static_cast<uint64_t>(layers), D = static_cast<uint64_t>(dim), H = static_cast<uint64_t>(hidden);
  const uint64_t V = static_cast<uint64_t>(vocab);
  // Floats in file order: embedding, rms_att, wq, wk, wv, wo, rms_ffn, w1, w2, w3, rms_final,
  // the two RoPE tables (unused: mote computes angles), then the classifier when unshared.
  const uint64_t floats = V * D + L * D + L * D * D + 2 * L * D * kv_dim + L * D * D + L * D + 3 * L * D * H + D +
                          static_cast<uint64_t>(seq_len) * head_size + (shared_classifier ? 0 : V * D);
  const uint64_t expected = sizeof header + floats * 4;
  if (bytes.size() != expected) {
    *error = "'" + checkpoint_path + "' is " + std::to_string(bytes.size()) + " bytes; its header implies " +
             std::to_string(expected) + " (truncated, or not a legacy float llama2.c checkpoint)";
    return false;
  }

  ModelData &m = *out;
  m = ModelData{};
  if (!load_tokenizer(tokenizer_path, static_cast<uint32_t>(vocab), &m.tokenizer, error)) return false;
  format::ModelConfig &c = m.config;
  c = llama_config(
      {dim, layers, heads, kv_heads, static_cast<int64_t>(head_size), hidden, static_cast<int64_t>(vocab), seq_len});
  c.rope_layout = options.rope_layout;
  c.flags = shared_classifier ? static_cast<uint32_t>(format::kFlagTiedEmbeddings) : 0u;
  c.bos_id = m.tokenizer.bos_id;
  c.eos_id = m.tokenizer.eos_id;

  if (!check_matrix_dtype(options.dtype, error)) return false;
  const uint8_t *cursor = bytes.bytes() + sizeof header;
  // Takes the next block of float tensors (one per layer when per_layer) in file order.
  bool ok = true;
  auto add = [&](Role role, uint64_t rows, uint64_t cols, bool per_layer) {
    const uint64_t count = per_layer ? L : 1;
    for (uint64_t l = 0; l < count && ok; ++l) {
      const TensorSlot slot = {role, per_layer ? static_cast<uint32_t>(l) : format::kNoLayer, rows, cols};
      ok = add_tensor(slot, {cursor, static_cast<uint32_t>(GgmlType::f32)}, options.dtype, options.layout, &m, error,
                      options.mix);
      cursor += rows * (cols == 0 ? 1 : cols) * 4;
    }
  };
  add(Role::token_embedding, V, D, false);
  add(Role::attn_norm, D, 0, true);
  add(Role::attn_q, D, D, true);
  add(Role::attn_k, kv_dim, D, true);
  add(Role::attn_v, kv_dim, D, true);
  add(Role::attn_output, D, D, true);
  add(Role::ffn_norm, D, 0, true);
  add(Role::ffn_gate, H, D, true);
  add(Role::ffn_down, D, H, true);
  add(Role::ffn_up, H, D, true);
  add(Role::output_norm, D, 0, false);
  cursor += static_cast<uint64_t>(seq_len) * head_size * 4;  // freq_cis_real and freq_cis_imag
  if (!shared_classifier) add(Role::output, V, D, false);
  if (!ok) *error = "'" + checkpoint_path + "': " + *error;
  return ok;
}

}  // namespace mote::convert
