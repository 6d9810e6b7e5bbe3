// The loader against malformed files (DESIGN.md invariant 3): bad arguments and each malformed
// variant are refused with a non-OK status and the one-line message of the check meant to fire.
//
// Mutations inside the payload refresh the checksum (refresh_checksum) so the deeper check is
// reached, not an earlier one. Model bytes sit in a buffer of exactly their size at a 64-byte
// aligned address, so an AddressSanitizer build catches any read past the end of the file.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "format/format.hpp"
#include "loader_support.hpp"
#include "mote/mote.h"
#include "test_support.hpp"

using namespace mote_loader_test;

namespace {

// ---- patching the valid file ------------------------------------------------------------------

// Byte offset of the table entry of (role, layer) in the valid layout.
size_t entry_offset(const Bytes &b, Role role, uint32_t layer) {
  const FileHeader h = header_of(b);
  for (uint32_t i = 0; i < h.tensor_count; ++i) {
    const size_t at = h.tensor_table_offset + i * sizeof(TensorEntry);
    const TensorEntry e = get<TensorEntry>(b, at);
    if (e.role == static_cast<uint32_t>(role) && e.layer == layer) return at;
  }
  FAIL("no tensor with role " << static_cast<uint32_t>(role) << " layer " << layer);
  return 0;
}

// Mutators: each takes the bytes of a valid file and changes one thing (checksum refreshed).
Bytes with_header(const std::function<void(FileHeader &)> &f, bool refresh = true) {
  Bytes b = valid_file();
  FileHeader h = header_of(b);
  f(h);
  set(b, 0, h);
  if (refresh) refresh_checksum(b);
  return b;
}

// Changes the struct T stored at byte `at` of a valid file (where(b) finds `at`).
template <typename T>
Bytes with_struct(const std::function<size_t(const Bytes &)> &where, const std::function<void(T &)> &f) {
  Bytes b = valid_file();
  const size_t at = where(b);
  T value = get<T>(b, at);
  f(value);
  set(b, at, value);
  refresh_checksum(b);
  return b;
}

Bytes with_config(const std::function<void(ModelConfig &)> &f) {
  return with_struct<ModelConfig>([](const Bytes &b) { return size_t(header_of(b).config_offset); }, f);
}

Bytes with_entry(Role role, uint32_t layer, const std::function<void(TensorEntry &)> &f) {
  return with_struct<TensorEntry>([&](const Bytes &b) { return entry_offset(b, role, layer); }, f);
}

Bytes with_tokenizer(const std::function<void(TokenizerHeader &)> &f) {
  return with_struct<TokenizerHeader>([](const Bytes &b) { return size_t(header_of(b).tokenizer_offset); }, f);
}

// Patches a table of the tokenizer: fn(bytes, section offset, tokenizer header).
Bytes with_tokenizer_tables(const std::function<void(Bytes &, size_t, const TokenizerHeader &)> &f) {
  Bytes b = valid_file();
  const size_t at = header_of(b).tokenizer_offset;
  f(b, at, get<TokenizerHeader>(b, at));
  refresh_checksum(b);
  return b;
}

// The file cut to n bytes, as it would arrive from a short download.
Bytes truncated(size_t n) {
  Bytes b = valid_file();
  b.resize(n);
  return b;
}

// The file cut to n bytes with the header patched to match (file_size and checksum), so the
// checks past the file-size check see the short file.
Bytes truncated_patched(size_t n, const std::function<void(FileHeader &)> &also = nullptr) {
  Bytes b = valid_file();
  b.resize(n);
  FileHeader h = header_of(b);
  h.file_size = n;
  if (also) also(h);
  set(b, 0, h);
  refresh_checksum(b);
  return b;
}

// A hostile file must be turned away with its own message: one line, naming what is wrong.
void expect_rejected(const char *what, const Bytes &bytes, const char *needle,
                     mote_status expected = MOTE_ERR_BAD_MODEL, size_t shift = 0) {
  const Opened r = open_bytes(bytes, shift);
  INFO("variant: " << std::string(what));
  INFO("message: " << r.message);
  CHECK(r.status == expected);
  CHECK(r.message.find(needle) != std::string::npos);
  CHECK(r.message.find('\n') == std::string::npos);
  CHECK(!r.message.empty());
}

}  // namespace

TEST_CASE("loader: arguments") {
  const Bytes &file = valid_file();
  mote_model model;
  char message[256] = "";
  CHECK(mote_model_open(nullptr, file.size(), &model, message, sizeof message) == MOTE_ERR_INVALID_ARGUMENT);
  CHECK(std::string(message).find("null") != std::string::npos);
  ExactBuffer buffer(file);
  CHECK(mote_model_open(buffer.data, buffer.size, nullptr, message, sizeof message) == MOTE_ERR_INVALID_ARGUMENT);
  // Unaligned bytes (a valid file one byte past an aligned address).
  for (size_t shift : {1u, 8u, 32u}) {
    INFO("shift " << shift);
    expect_rejected("unaligned model bytes", file, "64-byte aligned", MOTE_ERR_INVALID_ARGUMENT, shift);
  }
  // No error buffer, or a 1-byte one, is fine.
  const Bytes bad = with_header([](FileHeader &h) { h.version = 9; });
  ExactBuffer bad_buffer(bad);
  CHECK(mote_model_open(bad_buffer.data, bad_buffer.size, &model, nullptr, 0) == MOTE_ERR_BAD_MODEL);
  char tiny[1] = {'x'};
  CHECK(mote_model_open(bad_buffer.data, bad_buffer.size, &model, tiny, sizeof tiny) == MOTE_ERR_BAD_MODEL);
  CHECK(tiny[0] == '\0');
  // A model whose open failed cannot start a session.
  mote_session session;
  mote_session_options options = mote_session_options_default();
  alignas(64) static uint8_t arena[1 << 16];
  CHECK(mote_arena_size(&model, &options) == 0);
  CHECK(mote_session_init(&session, &model, &options, arena, sizeof arena, message, sizeof message) ==
        MOTE_ERR_INVALID_ARGUMENT);
  CHECK(std::string(message).find("not opened") != std::string::npos);
}

TEST_CASE("loader: truncated files") {
  const Bytes &file = valid_file();
  const FileHeader h = header_of(file);
  // Cut inside each section: the header, the config, the tensor table, the tokenizer, the data.
  expect_rejected("empty file", truncated(0), "shorter than the 128-byte header");
  expect_rejected("cut in the magic", truncated(3), "shorter than the 128-byte header");
  expect_rejected("cut in the header", truncated(100), "shorter than the 128-byte header");
  const size_t cuts[] = {128,
                         200,
                         static_cast<size_t>(h.config_offset) + 64,
                         static_cast<size_t>(h.tensor_table_offset) + 64 * 3 + 5,
                         static_cast<size_t>(h.tokenizer_offset) + 40,
                         static_cast<size_t>(h.tokenizer_offset + h.tokenizer_size / 2),
                         static_cast<size_t>(h.data_offset) + 1,
                         static_cast<size_t>(h.data_offset + h.data_size / 2),
                         file.size() - 64,
                         file.size() - 1};
  for (size_t cut : cuts) {
    INFO("cut at " << cut);
    expect_rejected("truncated", truncated(cut), "truncated or padded");
  }
  // The header patched to the short size (and the checksum recomputed): the deeper checks fire.
  expect_rejected("cut after the header, patched", truncated_patched(128), "config at byte 128");
  expect_rejected("cut in the config, patched", truncated_patched(192), "config at byte 128");
  expect_rejected("cut in the tensor table, patched", truncated_patched(h.tensor_table_offset + 64 * 4),
                  "tensor table [");
  expect_rejected("cut in the tokenizer, patched", truncated_patched(h.tokenizer_offset + 128), "data section [");
  expect_rejected("cut in the data, patched", truncated_patched(h.data_offset + 1024), "data section [");
  expect_rejected("cut one block short, patched", truncated_patched(file.size() - 64), "data section [");
  // ... and with data_size patched too, the tensors themselves run past the end.
  const size_t cut = h.data_offset + 1024;
  expect_rejected("cut in the data, data_size patched",
                  truncated_patched(cut, [&](FileHeader &p) { p.data_size = cut - p.data_offset; }),
                  "outside the data section");
  // Not a multiple of 64 (padded by 8 bytes, header patched).
  Bytes padded = valid_file();
  padded.resize(padded.size() + 8, 0);
  set(padded, offsetof(FileHeader, file_size), static_cast<uint64_t>(padded.size()));
  refresh_checksum(padded);
  expect_rejected("size not a multiple of 64", padded, "is not a multiple of 64");
  // Padded by a block without patching the header.
  Bytes longer = valid_file();
  longer.resize(longer.size() + 64, 0);
  expect_rejected("padded", longer, "truncated or padded");
}

TEST_CASE("loader: header") {
  expect_rejected("bad magic", with_header([](FileHeader &h) { h.magic[0] = 'G'; }), "bad magic");
  expect_rejected("bad magic (last byte)", with_header([](FileHeader &h) { h.magic[3] = 'F'; }), "bad magic");
  expect_rejected("version 0", with_header([](FileHeader &h) { h.version = 0; }), "unsupported .mote format version 0");
  expect_rejected("version 2", with_header([](FileHeader &h) { h.version = 2; }), "unsupported .mote format version 2");
  expect_rejected("header size", with_header([](FileHeader &h) { h.header_size = 120; }),
                  "header, config or tensor entry size (120, 128, 64)");
  expect_rejected("config size", with_header([](FileHeader &h) { h.config_size = 256; }),
                  "header, config or tensor entry size (128, 256, 64)");
  expect_rejected("entry size", with_header([](FileHeader &h) { h.tensor_entry_size = 48; }),
                  "header, config or tensor entry size (128, 128, 48)");
  expect_rejected("file_size larger", with_header([](FileHeader &h) { h.file_size += 64; }), "truncated or padded");
  expect_rejected("file_size smaller", with_header([](FileHeader &h) { h.file_size -= 64; }), "truncated or padded");
  expect_rejected("file_size huge", with_header([](FileHeader &h) { h.file_size = UINT64_MAX; }),
                  "truncated or padded");

  // Checksums: one flipped payload byte in each region, and a wrong header field.
  const Bytes &file = valid_file();
  const FileHeader h = header_of(file);
  for (size_t at :
       {static_cast<size_t>(h.config_offset) + 5, static_cast<size_t>(h.tensor_table_offset) + 70,
        static_cast<size_t>(h.tokenizer_offset) + 200, static_cast<size_t>(h.data_offset) + 3, file.size() - 1}) {
    Bytes b = file;
    b[at] ^= 0x10;
    INFO("flipped byte " << at);
    expect_rejected("payload byte flipped", b, "payload checksum");
  }
  expect_rejected("checksum field", with_header([](FileHeader &h2) { h2.payload_checksum ^= 1; }, false),
                  "does not match the header's");

  // Section offsets.
  expect_rejected("config past the end", with_header([&](FileHeader &p) { p.config_offset = file.size(); }),
                  "config at byte");
  expect_rejected("config straddling the end", with_header([&](FileHeader &p) { p.config_offset = file.size() - 64; }),
                  "past the end of the file");
  expect_rejected("config misaligned", with_header([](FileHeader &p) { p.config_offset = 132; }), "config at byte 132");
  expect_rejected("config offset wraps", with_header([](FileHeader &p) { p.config_offset = UINT64_MAX - 63; }),
                  "config at byte 18446744073709551552");
  expect_rejected("tensor count too large", with_header([](FileHeader &p) { p.tensor_count = 5000; }),
                  "tensor count 5000 is too large");
  expect_rejected("tensor table past the end", with_header([](FileHeader &p) { p.tensor_count = 4096; }),
                  "tensor table [");
  expect_rejected("tensor table offset past the end",
                  with_header([&](FileHeader &p) { p.tensor_table_offset = file.size(); }), "tensor table [");
  expect_rejected("tensor table offset wraps",
                  with_header([](FileHeader &p) { p.tensor_table_offset = UINT64_MAX - 63; }), "tensor table [");
  expect_rejected("tensor table misaligned", with_header([](FileHeader &p) { p.tensor_table_offset += 8; }),
                  "tensor table [");
  expect_rejected("data section misaligned", with_header([](FileHeader &p) { p.data_offset += 4; }), "data section [");
  expect_rejected("data section inside the header", with_header([](FileHeader &p) { p.data_offset = 64; }),
                  "data section [");
  expect_rejected("data section past the end", with_header([](FileHeader &p) { p.data_size += 64; }), "data section [");
  expect_rejected("data size wraps", with_header([](FileHeader &p) { p.data_size = UINT64_MAX; }), "data section [");
}

TEST_CASE("loader: config fields") {
  struct Case {
    const char *what;
    std::function<void(ModelConfig &)> mutate;
    const char *needle;
  };
  const Case cases[] = {
      {"dim 0", [](ModelConfig &c) { c.dim = 0; }, "config field dim = 0 is out of range"},
      {"dim huge", [](ModelConfig &c) { c.dim = 1u << 20; }, "config field dim = 1048576 is out of range"},
      {"n_layers 0", [](ModelConfig &c) { c.n_layers = 0; }, "config field n_layers = 0"},
      {"n_layers huge", [](ModelConfig &c) { c.n_layers = 100000; }, "config field n_layers = 100000"},
      {"n_heads 0", [](ModelConfig &c) { c.n_heads = 0; }, "config field n_heads = 0"},
      {"n_kv_heads 0", [](ModelConfig &c) { c.n_kv_heads = 0; }, "config field n_kv_heads = 0"},
      {"head_dim 0", [](ModelConfig &c) { c.head_dim = 0; }, "config field head_dim = 0"},
      {"ffn_dim huge", [](ModelConfig &c) { c.ffn_dim = 0xFFFFFFFFu; }, "config field ffn_dim = 4294967295"},
      {"vocab 0", [](ModelConfig &c) { c.vocab_size = 0; }, "config field vocab_size = 0"},
      {"max_seq_len 0", [](ModelConfig &c) { c.max_seq_len = 0; }, "config field max_seq_len = 0"},
      {"unknown family", [](ModelConfig &c) { c.family = static_cast<mote::format::Family>(9); },
       "unknown model family 9"},
      {"heads not a multiple of kv heads", [](ModelConfig &c) { c.n_heads = 3; },
       "n_heads 3 is not a multiple of n_kv_heads 2"},
      {"more kv heads than heads", [](ModelConfig &c) { c.n_kv_heads = 8; },
       "n_heads 4 is not a multiple of n_kv_heads 8"},
      {"unknown norm", [](ModelConfig &c) { c.norm_kind = static_cast<mote::format::NormKind>(3); },
       "unknown norm kind 3"},
      {"eps NaN", [](ModelConfig &c) { c.norm_eps = std::numeric_limits<float>::quiet_NaN(); }, "norm epsilon"},
      {"eps 0", [](ModelConfig &c) { c.norm_eps = 0.0f; }, "norm epsilon 0 is not in (0, 1)"},
      {"eps negative", [](ModelConfig &c) { c.norm_eps = -1e-5f; }, "norm epsilon"},
      {"eps infinite", [](ModelConfig &c) { c.norm_eps = std::numeric_limits<float>::infinity(); }, "norm epsilon"},
      {"unknown position kind", [](ModelConfig &c) { c.position_kind = static_cast<mote::format::PositionKind>(0); },
       "unknown position kind 0"},
      {"unknown position kind 4", [](ModelConfig &c) { c.position_kind = static_cast<mote::format::PositionKind>(4); },
       "unknown position kind 4"},
      {"unknown rope layout", [](ModelConfig &c) { c.rope_layout = static_cast<mote::format::RopeLayout>(3); },
       "unknown RoPE layout 3"},
      {"rope layout none with rope", [](ModelConfig &c) { c.rope_layout = mote::format::RopeLayout::none; },
       "unknown RoPE layout 0"},
      {"rope theta NaN", [](ModelConfig &c) { c.rope_theta = std::numeric_limits<float>::quiet_NaN(); }, "RoPE theta"},
      {"rope theta 1", [](ModelConfig &c) { c.rope_theta = 1.0f; }, "RoPE theta 1 is not"},
      {"odd head_dim with rope", [](ModelConfig &c) { c.head_dim = 7; }, "head_dim 7 is odd"},
      {"unknown activation", [](ModelConfig &c) { c.activation = static_cast<mote::format::Activation>(0); }, "unknown activation 0"},
      {"unknown activation 9", [](ModelConfig &c) { c.activation = static_cast<mote::format::Activation>(9); }, "unknown activation 9"},
      {"unknown flags", [](ModelConfig &c) { c.flags |= 1u << 18; }, "unknown config flags 0x40004"},
      // Revision 5's block options: each field with its flag, in range, in a meaningful combination.
      {"window without its flag", [](ModelConfig &c) { c.sliding_window = 16; }, "sliding-window fields are set without"},
      {"window 0", [](ModelConfig &c) { c.flags |= mote::format::kFlagSlidingWindow; c.rope_theta_local = 1e4f; },
       "sliding window 0 is not in [1, max_seq_len"},
      {"window larger than the context",
       [](ModelConfig &c) {
         c.flags |= mote::format::kFlagSlidingWindow;
         c.sliding_window = c.max_seq_len;
         c.rope_theta_local = 1e4f;
       },
       "is not in [1, max_seq_len"},
      {"a pattern with no global layer",
       [](ModelConfig &c) {
         c.flags |= mote::format::kFlagSlidingWindow;
         c.sliding_window = 4;
         c.swa_global_every = c.n_layers + 1;
         c.rope_theta_local = 1e4f;
       },
       "none would be"},
      {"window's RoPE theta NaN",
       [](ModelConfig &c) {
         c.flags |= mote::format::kFlagSlidingWindow;
         c.sliding_window = 4;
         c.rope_theta_local = std::numeric_limits<float>::quiet_NaN();
       },
       "windowed layers' RoPE theta"},
      {"attention scale without its flag", [](ModelConfig &c) { c.attention_scale = 0.5f; }, "attention scale 0.5"},
      {"attention scale negative",
       [](ModelConfig &c) {
         c.flags |= mote::format::kFlagAttentionScale;
         c.attention_scale = -1.0f;
       },
       "attention scale -1"},
      {"both bias kinds", [](ModelConfig &c) { c.flags |= mote::format::kFlagQkvBias | mote::format::kFlagAttentionBias; },
       "are both set"},
      {"fused gate/up without a gate",
       [](ModelConfig &c) {
         c.flags |= mote::format::kFlagFusedGateUp;
         c.activation = mote::format::Activation::gelu;
       },
       "a fused gate/up matrix needs a gated FFN"},
      {"reserved bytes", [](ModelConfig &c) { c.reserved[3] = 1; }, "config reserved bytes are not zero"},
      {"sandwich norms with norm biases",
       [](ModelConfig &c) {
         c.norm_kind = mote::format::NormKind::layernorm;
         c.flags |= mote::format::kFlagSandwichNorm | mote::format::kFlagNormBias;
       },
       "sandwich norms are set on post-norm blocks or with norm biases"},
      {"RoPE factors with windows",
       [](ModelConfig &c) {
         c.flags |= mote::format::kFlagRopeFactors | mote::format::kFlagSlidingWindow;
         c.sliding_window = 4;
         c.rope_theta_local = 1e4f;
       },
       "RoPE factors and sliding windows are both set"},
      {"pooling without the encoder flag", [](ModelConfig &c) { c.pooling = mote::format::Pooling::cls; },
       "pooling fields are set on a model that is not an encoder"},
      {"normalized embeddings without the encoder flag",
       [](ModelConfig &c) { c.flags |= mote::format::kFlagNormalizeEmbeddings; },
       "pooling fields are set on a model that is not an encoder"},
      {"an encoder with tied embeddings", [](ModelConfig &c) { c.flags |= mote::format::kFlagEncoder; },
       "an encoder has no classifier to tie"},
      {"unknown pooling",
       [](ModelConfig &c) {
         c.flags = (c.flags & ~mote::format::kFlagTiedEmbeddings) | mote::format::kFlagEncoder;
         c.pooling = static_cast<mote::format::Pooling>(3);
       },
       "unknown pooling 3"},
      {"RMSNorm with biases", [](ModelConfig &c) { c.flags |= mote::format::kFlagNormBias; },
       "norm biases are set but the norm is not LayerNorm"},
      {"bos = vocab", [](ModelConfig &c) { c.bos_id = static_cast<int32_t>(kVocab); }, "special token ids bos"},
      {"bos -2", [](ModelConfig &c) { c.bos_id = -2; }, "special token ids bos -2"},
      {"eos out of range", [](ModelConfig &c) { c.eos_id = 1 << 30; }, "outside the vocabulary of"},
  };
  for (const Case &c : cases) expect_rejected(c.what, with_config(c.mutate), c.needle);

  // A config that disagrees with the tensors (valid on its own) fails at the first tensor.
  expect_rejected("dim disagrees with the tensors", with_config([](ModelConfig &c) { c.dim = 64; }),
                  "tensor 'token_embd' has shape (");
  // Untied without a classifier; a classifier present while tied.
  expect_rejected("untied without a classifier",
                  with_config([](ModelConfig &c) { c.flags &= ~mote::format::kFlagTiedEmbeddings; }),
                  "tensor 'output' is missing");
  // Optional roles follow the block spec: a plain GELU FFN has no gate; biases the config names
  // must be there; fused QKV replaces q, k and v.
  expect_rejected("a gate the spec does not need",
                  with_config([](ModelConfig &c) { c.activation = mote::format::Activation::gelu; }),
                  "tensor 'blk.0.ffn_gate' is present but the config's architecture has no use for it");
  expect_rejected("biases the config names are required",
                  with_config([](ModelConfig &c) { c.flags |= mote::format::kFlagAttentionBias; }),
                  "tensor 'blk.0.attn_q_bias' is missing");
  expect_rejected("fused QKV replaces q, k and v",
                  with_config([](ModelConfig &c) { c.flags |= mote::format::kFlagFusedQkv; }),
                  "tensor 'blk.0.attn_qkv' is missing");
  expect_rejected("learned positions need their table",
                  with_config([](ModelConfig &c) { c.position_kind = mote::format::PositionKind::learned; }),
                  "tensor 'pos_embd' is missing");
  expect_rejected("post-norm has no final norm",
                  with_config([](ModelConfig &c) { c.flags |= mote::format::kFlagPostNorm; }),
                  "tensor 'output_norm' is present but the config's architecture has no use for it");
  mote::convert::ModelData both = valid_model_data(true);
  both.config.flags |= mote::format::kFlagTiedEmbeddings;
  expect_rejected("classifier while tied", mote::convert::serialize(both),
                  "tensor 'output' is present but embeddings are tied");
}

TEST_CASE("loader: tensor table") {
  const Bytes &file = valid_file();
  const FileHeader h = header_of(file);
  const uint32_t G = mote::format::kNoLayer;
  expect_rejected("offset past the end", with_entry(Role::attn_v, 1, [&](TensorEntry &e) { e.offset = file.size(); }),
                  "tensor 'blk.1.attn_v' spans bytes");
  expect_rejected("offset straddles the end",
                  with_entry(Role::output_norm, G, [&](TensorEntry &e) { e.offset = file.size() - 64; }),
                  "tensor 'output_norm' spans bytes");
  expect_rejected("offset + size wraps",
                  with_entry(Role::ffn_up, 0, [](TensorEntry &e) { e.offset = UINT64_MAX - 63; }),
                  "tensor 'blk.0.ffn_up' spans bytes [18446744073709551552");
  expect_rejected("offset before the data section",
                  with_entry(Role::attn_k, 0, [&](TensorEntry &e) { e.offset = h.tensor_table_offset; }),
                  "outside the data section");
  expect_rejected("offset 0", with_entry(Role::token_embedding, G, [](TensorEntry &e) { e.offset = 0; }),
                  "outside the data section");
  expect_rejected("misaligned offset", with_entry(Role::attn_q, 0, [](TensorEntry &e) { e.offset += 4; }),
                  "tensor 'blk.0.attn_q' at byte");
  expect_rejected("misaligned offset (1)", with_entry(Role::ffn_norm, 1, [](TensorEntry &e) { e.offset += 1; }),
                  "is not 64-byte aligned");
  expect_rejected("size too big", with_entry(Role::attn_output, 1, [](TensorEntry &e) { e.size += 4; }),
                  "tensor 'blk.1.attn_output' says");
  expect_rejected("size too small", with_entry(Role::ffn_gate, 0, [](TensorEntry &e) { e.size -= 4; }),
                  "its shape and dtype need 6144");
  expect_rejected("size huge", with_entry(Role::ffn_gate, 0, [](TensorEntry &e) { e.size = UINT64_MAX; }),
                  "its shape and dtype need");
  expect_rejected("shape rows disagree", with_entry(Role::attn_q, 1, [](TensorEntry &e) { e.shape[0] = 31; }),
                  "tensor 'blk.1.attn_q' has shape (31, 32), the config needs (32, 32)");
  expect_rejected("shape cols disagree", with_entry(Role::ffn_down, 0, [](TensorEntry &e) { e.shape[1] = 32; }),
                  "the config needs (32, 48)");
  expect_rejected("shape transposed",
                  with_entry(Role::ffn_up, 1, [](TensorEntry &e) { std::swap(e.shape[0], e.shape[1]); }),
                  "has shape (32, 48), the config needs (48, 32)");
  expect_rejected("extra dims", with_entry(Role::attn_k, 1, [](TensorEntry &e) { e.shape[2] = 2; }), "has shape");
  expect_rejected("n_dims 3", with_entry(Role::attn_v, 0, [](TensorEntry &e) { e.n_dims = 3; }), "has shape");
  expect_rejected("vector as matrix", with_entry(Role::attn_norm, 0, [](TensorEntry &e) { e.n_dims = 2; }),
                  "tensor 'blk.0.attn_norm' has shape");
  expect_rejected("unknown dtype",
                  with_entry(Role::attn_q, 0, [](TensorEntry &e) { e.dtype = mote::format::kDTypeCount; }),
                  ("tensor 'blk.0.attn_q' has unknown dtype " + std::to_string(mote::format::kDTypeCount)).c_str());
  expect_rejected("unknown dtype huge",
                  with_entry(Role::token_embedding, G, [](TensorEntry &e) { e.dtype = 0xFFFFFFFFu; }),
                  "unknown dtype 4294967295");
  expect_rejected("rows do not fill blocks", with_entry(Role::ffn_down, 1, [](TensorEntry &e) { e.dtype = 3; }),
                  "rows of 48 elements do not fill q8_0 blocks of 32");
  // A K-quant's 256-value super-blocks: a row of 48 (or SmolLM2's 576) is refused, never read as 32s.
  expect_rejected("rows do not fill super-blocks",
                  with_entry(Role::ffn_down, 1, [](TensorEntry &e) { e.dtype = static_cast<uint32_t>(DType::q4_k); }),
                  "rows of 48 elements do not fill q4_k blocks of 256");
  expect_rejected("vector stored as f16", with_entry(Role::attn_norm, 1, [](TensorEntry &e) { e.dtype = 1; }),
                  "tensor 'blk.1.attn_norm' is a vector stored as f16");
  static_assert(kVocab % 8 != 0, "the x8 row check below needs an embedding whose rows are not a multiple of 8");
  expect_rejected(
      "x8 rows not a multiple of 8", with_entry(Role::token_embedding, G, [](TensorEntry &e) { e.dtype = 6; }),
      ("tensor 'token_embd' has " + std::to_string(kVocab) + " rows; q8_0x8 interleaves rows in groups of 8").c_str());
  expect_rejected("x8 vector", with_entry(Role::attn_norm, 0, [](TensorEntry &e) { e.dtype = 7; }),
                  "tensor 'blk.0.attn_norm' is a vector stored as q4_0x8; vectors must be f32");
  expect_rejected("x8 rows in groups of 8, size checked per row",
                  with_entry(Role::attn_k, 0, [](TensorEntry &e) { e.dtype = 8; }),
                  "tensor 'blk.0.attn_k' says 2048 bytes, its shape and dtype need 320");
  expect_rejected("dtype disagrees with size", with_entry(Role::attn_k, 0, [](TensorEntry &e) { e.dtype = 1; }),
                  "tensor 'blk.0.attn_k' says 2048 bytes, its shape and dtype need 1024");
  expect_rejected("unknown role 0", with_entry(Role::attn_k, 0, [](TensorEntry &e) { e.role = 0; }),
                  "tensor 'role#0' has an unknown role");
  expect_rejected("unknown role 35", with_entry(Role::output_norm, G, [](TensorEntry &e) { e.role = 35; }),
                  "tensor 'role#35' has an unknown role");

  expect_rejected("layer out of range", with_entry(Role::ffn_norm, 1, [](TensorEntry &e) { e.layer = 2; }),
                  "tensor 'blk.2.ffn_norm' has layer 2, outside the model's 2 layers");
  expect_rejected("global tensor with a layer", with_entry(Role::output_norm, G, [](TensorEntry &e) { e.layer = 0; }),
                  "tensor 'blk.0.output_norm' has layer 0");
  expect_rejected("layer tensor marked global", with_entry(Role::attn_q, 1, [](TensorEntry &e) { e.layer = G; }),
                  "tensor 'attn_q' has layer 4294967295");
  expect_rejected("duplicate tensor", with_entry(Role::attn_q, 1, [](TensorEntry &e) { e.layer = 0; }),
                  "tensor 'blk.0.attn_q' appears twice");
  expect_rejected("missing tensor (table one short)", with_header([](FileHeader &p) { p.tensor_count -= 1; }),
                  "tensor 'output_norm' is missing");
  expect_rejected("empty tensor table", with_header([](FileHeader &p) { p.tensor_count = 0; }),
                  "tensor 'token_embd' is missing");
  // An entry repurposed as a valid classifier (the embedding's bytes): the layer tensor it was
  // is now missing (reported before the classifier that a tied model must not have).
  expect_rejected("missing layer tensor",
                  with_entry(Role::ffn_up, 1,
                             [&](TensorEntry &e) {
                               const TensorEntry emb =
                                   get<TensorEntry>(file, entry_offset(file, Role::token_embedding, G));
                               e = emb;
                               e.role = static_cast<uint32_t>(Role::output);
                             }),
                  "tensor 'blk.1.ffn_up' is missing");
}

// The valid model with the revision-5 options that bring tensors: q/k norms, sandwich norms, RoPE
// factors and a fused gate/up matrix (windows bring none: the config rows above cover them).
Bytes family_file(const std::function<void(mote::convert::ModelData &)> &change = nullptr) {
  mote::convert::ModelData m = valid_model_data();
  ModelConfig &c = m.config;
  c.flags |= mote::format::kFlagQkNorm | mote::format::kFlagSandwichNorm | mote::format::kFlagRopeFactors |
             mote::format::kFlagFusedGateUp;
  std::vector<mote::convert::TensorData> kept;
  for (auto &t : m.tensors) {
    if (t.role != Role::ffn_gate && t.role != Role::ffn_up) kept.push_back(std::move(t));
  }
  m.tensors = std::move(kept);
  std::mt19937 rng(7);
  const auto vector = [&](Role role, uint32_t layer, uint32_t n) {
    mote::convert::TensorData t = make_tensor(role, layer, DType::f32, n, 1, rng, true);
    t.n_dims = 1;
    m.tensors.push_back(t);
  };
  for (uint32_t l = 0; l < kLayers; ++l) {
    m.tensors.push_back(make_tensor(Role::ffn_gate_up, l, DType::f32, 2 * kFfn, kDim, rng));
    vector(Role::attn_q_norm, l, kHeadDim);
    vector(Role::attn_k_norm, l, kHeadDim);
    vector(Role::post_attn_norm, l, kDim);
    vector(Role::post_ffn_norm, l, kDim);
  }
  vector(Role::rope_freqs, mote::format::kNoLayer, kHeadDim / 2);
  if (change) change(m);
  return mote::convert::serialize(m);
}

// family_file() with one tensor entry changed (checksum refreshed).
Bytes family_with_entry(Role role, uint32_t layer, const std::function<void(TensorEntry &)> &f) {
  Bytes b = family_file();
  const size_t at = entry_offset(b, role, layer);
  TensorEntry e = get<TensorEntry>(b, at);
  f(e);
  set(b, at, e);
  refresh_checksum(b);
  return b;
}

TEST_CASE("loader: the families' roles and values") {
  const Opened ok = open_bytes(family_file());
  INFO(ok.message);
  REQUIRE(ok.status == MOTE_OK);
  expect_rejected("a q norm of the wrong length",
                  family_with_entry(Role::attn_q_norm, 1, [](TensorEntry &e) { e.shape[0] = kHeadDim - 2; }),
                  "tensor 'blk.1.attn_q_norm' has shape (");
  expect_rejected("a fused gate/up of the wrong size",
                  family_with_entry(Role::ffn_gate_up, 0, [](TensorEntry &e) { e.shape[0] = kFfn; }),
                  "tensor 'blk.0.ffn_gate_up' has shape (");
  expect_rejected("a post-FFN norm missing", family_with_entry(Role::post_ffn_norm, 1, [](TensorEntry &e) {
                    e.role = static_cast<uint32_t>(Role::attn_norm_bias);  // a (dim) vector RMSNorm has no use for
                  }),
                  "tensor 'blk.1.post_ffw_norm' is missing");
  const auto factor = [](float value) {
    return family_file([value](mote::convert::ModelData &m) {
      for (auto &t : m.tensors) {
        if (t.role == Role::rope_freqs) std::memcpy(t.bytes.data() + 4, &value, sizeof value);
      }
    });
  };
  expect_rejected("a zero RoPE factor", factor(0.0f), "tensor 'rope_freqs' holds 0 at index 1");
  expect_rejected("a NaN RoPE factor", factor(std::nanf("")), "tensor 'rope_freqs' holds nan at index 1");
  expect_rejected("a negative RoPE factor", factor(-2.0f), "tensor 'rope_freqs' holds -2 at index 1");
}

TEST_CASE("loader: tokenizer section") {
  const Bytes &file = valid_file();
  const FileHeader h = header_of(file);
  expect_rejected("tokenizer past the end", with_header([&](FileHeader &p) { p.tokenizer_size = file.size(); }),
                  "tokenizer section [");
  expect_rejected("tokenizer offset past the end",
                  with_header([&](FileHeader &p) { p.tokenizer_offset = file.size(); }), "tokenizer section [");
  expect_rejected("tokenizer offset wraps", with_header([](FileHeader &p) { p.tokenizer_offset = UINT64_MAX - 63; }),
                  "tokenizer section [18446744073709551552");
  expect_rejected("tokenizer misaligned", with_header([](FileHeader &p) { p.tokenizer_offset += 4; }),
                  "tokenizer section [");
  expect_rejected("tokenizer smaller than its header", with_header([](FileHeader &p) { p.tokenizer_size = 95; }),
                  "tokenizer section [");
  expect_rejected("tokenizer section too small for its tables",
                  with_header([](FileHeader &p) { p.tokenizer_size = 200; }), "past the section end (200 bytes)");
  (void)h;

  expect_rejected("unknown kind", with_tokenizer([](TokenizerHeader &t) { t.kind = 4; }), "unknown tokenizer kind 4");
  using mote::format::kTokAddSpacePrefix;
  using mote::format::kTokLowercase;
  using mote::format::kTokStripAccents;
  expect_rejected("WordPiece with the dummy prefix", with_tokenizer([](TokenizerHeader &t) {
                    t.kind = 3;
                    t.flags = kTokAddSpacePrefix | kTokLowercase;
                  }),
                  "tokenizer flags 0x1 do not apply to tokenizer kind 3");
  expect_rejected("WordPiece without [UNK]", with_tokenizer([](TokenizerHeader &t) {
                    t.kind = 3;
                    t.flags = kTokLowercase;
                    t.unk_id = -1;
                  }),
                  "a WordPiece tokenizer needs an unknown token: unk_id is -1 of 277 tokens");
  expect_rejected("WordPiece with merges", with_tokenizer([](TokenizerHeader &t) {
                    t.kind = 3;
                    t.flags = kTokLowercase;
                    t.n_merges = 1;
                  }),
                  "a WordPiece tokenizer has 1 merges (must be 0)");
  expect_rejected("BERT normalizer flags on SentencePiece",
                  with_tokenizer([](TokenizerHeader &t) { t.flags |= kTokStripAccents; }),
                  "tokenizer flags 0x20 do not apply to tokenizer kind 1");
  expect_rejected("unknown tokenizer flag", with_tokenizer([](TokenizerHeader &t) { t.flags |= 1u << 8; }),
                  "unknown tokenizer flags 0x");
  {  // the same tables read as a WordPiece tokenizer are valid
    const Opened wordpiece = open_bytes(with_tokenizer([](TokenizerHeader &t) {
      t.kind = 3;
      t.flags = kTokLowercase | kTokStripAccents;
    }));
    CHECK_MESSAGE(wordpiece.status == MOTE_OK, wordpiece.message);
  }
  expect_rejected("n_tokens != vocab", with_tokenizer([](TokenizerHeader &t) { t.n_tokens -= 1; }),
                  "tokenizer has 276 tokens but the vocabulary size is 277");
  expect_rejected("n_tokens huge", with_tokenizer([](TokenizerHeader &t) { t.n_tokens = 0xFFFFFFFFu; }),
                  "tokenizer has 4294967295 tokens");
  expect_rejected("unknown chat template", with_tokenizer([](TokenizerHeader &t) { t.chat_template = 8; }),
                  "unknown chat template 8");
  expect_rejected("unknown pre-tokenizer", with_tokenizer([](TokenizerHeader &t) {
                    t.pre_tokenizer = 3;
                    t.flags |= mote::format::kTokPreTokenizer;
                  }),
                  "unknown pre-tokenizer 3");
  expect_rejected("pre-tokenizer without its flag", with_tokenizer([](TokenizerHeader &t) { t.pre_tokenizer = 1; }),
                  "pre-tokenizer 1 disagrees with tokenizer flag 0x8");
  expect_rejected("pre-tokenizer flag without one",
                  with_tokenizer([](TokenizerHeader &t) { t.flags |= mote::format::kTokPreTokenizer; }),
                  "pre-tokenizer 0 disagrees with tokenizer flag 0x8");
  expect_rejected("pre-tokenizer on SentencePiece", with_tokenizer([](TokenizerHeader &t) {
                    t.pre_tokenizer = 1;
                    t.flags |= mote::format::kTokPreTokenizer;
                  }),
                  "pre-tokenizer 1 needs a byte-level BPE tokenizer");
  expect_rejected("bos disagrees", with_tokenizer([](TokenizerHeader &t) { t.bos_id = 0; }),
                  "tokenizer bos/eos ids 0/2 disagree with the config's 1/2");
  expect_rejected("eos disagrees", with_tokenizer([](TokenizerHeader &t) { t.eos_id = -1; }),
                  "disagree with the config's 1/2");
  expect_rejected("unk out of range",
                  with_tokenizer([](TokenizerHeader &t) { t.unk_id = static_cast<int32_t>(kVocab); }),
                  "tokenizer special ids bos 1 / eos 2 / unk 277 are outside [0, 277)");
  expect_rejected("unk -5", with_tokenizer([](TokenizerHeader &t) { t.unk_id = -5; }), "unk -5");
  expect_rejected("piece offsets table past the end",
                  with_tokenizer([](TokenizerHeader &t) { t.piece_offsets_offset = 1u << 20; }),
                  "tokenizer piece offsets table");
  expect_rejected("piece offsets misaligned", with_tokenizer([](TokenizerHeader &t) { t.piece_offsets_offset += 2; }),
                  "tokenizer piece offsets table");
  expect_rejected("scores table wraps", with_tokenizer([](TokenizerHeader &t) { t.scores_offset = UINT64_MAX - 3; }),
                  "tokenizer scores table");
  expect_rejected("types table past the end", with_tokenizer([](TokenizerHeader &t) { t.types_offset = 1u << 30; }),
                  "tokenizer token types table");
  expect_rejected("sorted ids misaligned", with_tokenizer([](TokenizerHeader &t) { t.sorted_ids_offset += 1; }),
                  "tokenizer sorted ids table");
  expect_rejected("sorted ids past the end",
                  with_tokenizer([](TokenizerHeader &t) { t.sorted_ids_offset += 1u << 16; }),
                  "tokenizer sorted ids table");
  expect_rejected("piece longer than max_piece_bytes",
                  with_tokenizer([](TokenizerHeader &t) { t.max_piece_bytes = 5; }),
                  "decreasing or longer than 5 bytes");

  auto offsets_at = [](const TokenizerHeader &t, size_t section, uint32_t i) {
    return section + t.piece_offsets_offset + 4ull * i;
  };
  expect_rejected("piece offsets not starting at 0",
                  with_tokenizer_tables(
                      [&](Bytes &b, size_t s, const TokenizerHeader &t) { set<uint32_t>(b, offsets_at(t, s, 0), 1); }),
                  "tokenizer piece offsets do not start at 0");
  expect_rejected("piece offsets decreasing", with_tokenizer_tables([&](Bytes &b, size_t s, const TokenizerHeader &t) {
                    const uint32_t prev = get<uint32_t>(b, offsets_at(t, s, 9));
                    set<uint32_t>(b, offsets_at(t, s, 10), prev - 1);
                  }),
                  "tokenizer piece 9 has offsets");
  expect_rejected("piece bytes past the section end", with_tokenizer_tables([&](Bytes &b, size_t s, TokenizerHeader t) {
                    t.max_piece_bytes = 0xFFFFFFFFu;
                    set(b, s, t);
                    set<uint32_t>(b, offsets_at(t, s, t.n_tokens), 0xFFFFFFF0u);
                  }),
                  "tokenizer piece bytes [");
  expect_rejected("unknown token type 0", with_tokenizer_tables([&](Bytes &b, size_t s, const TokenizerHeader &t) {
                    b[s + t.types_offset + 5] = 0;
                  }),
                  "token 5 has unknown type 0");
  expect_rejected("unknown token type 7", with_tokenizer_tables([&](Bytes &b, size_t s, const TokenizerHeader &t) {
                    b[s + t.types_offset + kVocab - 1] = 7;
                  }),
                  "token 276 has unknown type 7");
  expect_rejected("NaN score", with_tokenizer_tables([&](Bytes &b, size_t s, const TokenizerHeader &t) {
                    set(b, s + t.scores_offset + 4 * 270, std::numeric_limits<float>::quiet_NaN());
                  }),
                  "token 270 has a non-finite score");
  expect_rejected("infinite score", with_tokenizer_tables([&](Bytes &b, size_t s, const TokenizerHeader &t) {
                    set(b, s + t.scores_offset + 4 * 3, -std::numeric_limits<float>::infinity());
                  }),
                  "token 3 has a non-finite score");
  expect_rejected("sorted id out of range", with_tokenizer_tables([&](Bytes &b, size_t s, const TokenizerHeader &t) {
                    set<uint32_t>(b, s + t.sorted_ids_offset + 4 * 3, 9999);
                  }),
                  "tokenizer sorted index entry 3 is id 9999");
  expect_rejected("sorted ids swapped", with_tokenizer_tables([&](Bytes &b, size_t s, const TokenizerHeader &t) {
                    const size_t a = s + t.sorted_ids_offset + 4 * 20, c = a + 4;
                    const uint32_t x = get<uint32_t>(b, a), y = get<uint32_t>(b, c);
                    set(b, a, y);
                    set(b, c, x);
                  }),
                  "tokenizer sorted index is out of order at entry 21");
  expect_rejected("sorted ids repeated", with_tokenizer_tables([&](Bytes &b, size_t s, const TokenizerHeader &t) {
                    set(b, s + t.sorted_ids_offset + 4 * 1, get<uint32_t>(b, s + t.sorted_ids_offset));
                  }),
                  "tokenizer sorted index is out of order at entry 1");
}
