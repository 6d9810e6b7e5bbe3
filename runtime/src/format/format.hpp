// The .mote file, version 1: on-disk structures (little-endian) and enumerations.
// models/FORMAT.md is the normative spec; these structs mirror it field by field.
#pragma once

#include <cstddef>
#include <cstdint>

namespace mote::format {

constexpr uint8_t kMagic[4] = {'M', 'O', 'T', 'E'};
constexpr uint32_t kVersion = 1;
constexpr uint32_t kAlignment = 64;  // every section and tensor starts on this boundary

// The family names where a model came from (inspect prints it); what the blocks do is the config's
// fields and flags, never the family.
enum class Family : uint32_t { llama = 1, gpt2 = 2, qwen2 = 3, gemma3 = 4, qwen3 = 5, phi3 = 6, bert = 7, nomic_bert = 8 };
constexpr uint32_t kFamilyCount = 9;  // families are 1..8
enum class NormKind : uint32_t { rmsnorm = 1, layernorm = 2 };
enum class PositionKind : uint32_t { rope = 1, learned = 2, sinusoidal = 3 };
enum class RopeLayout : uint32_t { none = 0, interleaved = 1, split_half = 2 };
// gelu is GPT-2's tanh approximation ("gelu_new"), gelu_erf the exact 0.5 x (1 + erf(x / sqrt 2));
// swiglu and geglu are gated: silu(gate) * up and gelu(gate) * up (gelu with tanh, Gemma's).
enum class Activation : uint32_t { swiglu = 1, gelu = 2, relu = 3, gelu_erf = 4, geglu = 5 };
enum ConfigFlags : uint32_t {
  kFlagAttentionBias = 1u << 0,  // every attention projection has a bias
  kFlagFfnBias = 1u << 1,        // every FFN projection has a bias
  kFlagTiedEmbeddings = 1u << 2,
  kFlagFusedQkv = 1u << 3,   // one attn_qkv matrix (rows q, then k, then v) instead of three
  kFlagPostNorm = 1u << 4,   // x = norm(x + f(x)) (the original Transformer) instead of x + f(norm(x))
  kFlagNormBias = 1u << 5,   // LayerNorm with a bias (beta) after the weight (gamma)
  kFlagQkvBias = 1u << 6,    // q, k and v projections have biases, the output projection none (Qwen2)
  kFlagQkNorm = 1u << 7,     // each head of q and k is RMS-normalized (attn_q_norm, attn_k_norm) before RoPE
  kFlagSandwichNorm = 1u << 8,  // attention and FFN outputs are normalized again before the residual add
  kFlagEmbedScale = 1u << 9,    // the token embedding is multiplied by sqrt(dim) (Gemma)
  kFlagFusedGateUp = 1u << 10,  // one ffn_gate_up matrix (gate rows, then up rows) instead of two
  kFlagRopeFactors = 1u << 11,  // rope_freqs divides each RoPE pair's frequency (Llama 3 scaling)
  kFlagSlidingWindow = 1u << 12,  // sliding_window, swa_global_every and rope_theta_local are set
  kFlagAttentionScale = 1u << 13,  // attention_scale replaces 1/sqrt(head_dim)
  // Revision 8: BERT-family embedders.
  kFlagEncoder = 1u << 14,     // an embedder: bidirectional attention, no classifier, pooling set
  kFlagEmbedNorm = 1u << 15,   // the embeddings are normalized (token_embd_norm) before the first block
  kFlagTokenTypes = 1u << 16,  // token_types (segment 0's vector) is added to every token's embedding
  kFlagNormalizeEmbeddings = 1u << 17,  // the model's pooled embedding is scaled to unit length
};
constexpr uint32_t kKnownConfigFlags = (1u << 18) - 1;

// How an encoder pools its final hidden states into one embedding (mote_pool's values).
enum class Pooling : uint32_t { mean = 0, last = 1, cls = 2 };
constexpr uint32_t kPoolingCount = 3;

// Token types, numbered as GGUF numbers them (the tokenizer section's types table).
enum TokenType : uint8_t {
  kTokenNormal = 1,
  kTokenUnknown = 2,
  kTokenControl = 3,
  kTokenUserDefined = 4,
  kTokenUnused = 5,
  kTokenByte = 6,
};

// The x8 types hold their plain twin's blocks of 8 rows interleaved (FORMAT.md). q5_0..iq4_nl
// are GGUF's blocks byte for byte; q4_k..q2_k are 256-value super-blocks.
enum class DType : uint32_t {
  f32 = 0,
  f16 = 1,
  bf16 = 2,
  q8_0 = 3,
  q4_0 = 4,
  q4_1 = 5,
  q8_0x8 = 6,
  q4_0x8 = 7,
  q4_1x8 = 8,
  q5_0 = 9,
  q5_1 = 10,
  q5_0x8 = 11,
  q5_1x8 = 12,
  q4_k = 13,
  q5_k = 14,
  q6_k = 15,
  q3_k = 16,
  q2_k = 17,
  iq4_nl = 18,
  q4_kx8 = 19,
  q5_kx8 = 20,
  q6_kx8 = 21,
  q3_kx8 = 22,
  q2_kx8 = 23,
  iq4_nlx8 = 24,
};

// What a tensor is; together with its layer this names it ("blk.3.attn_q").
enum class Role : uint32_t {
  token_embedding = 1,  // (vocab, dim)
  attn_norm = 2,        // (dim)
  attn_q = 3,           // (n_heads * head_dim, dim)
  attn_k = 4,           // (n_kv_heads * head_dim, dim)
  attn_v = 5,           // (n_kv_heads * head_dim, dim)
  attn_output = 6,      // (dim, n_heads * head_dim)
  ffn_norm = 7,         // (dim)
  ffn_gate = 8,         // (ffn_dim, dim)   w1
  ffn_down = 9,         // (dim, ffn_dim)   w2
  ffn_up = 10,          // (ffn_dim, dim)   w3
  output_norm = 11,     // (dim)
  output = 12,          // (vocab, dim)     absent when embeddings are tied
  // Optional roles: present exactly when the block spec (block_spec()) needs them.
  attn_qkv = 13,          // (q_dim + 2 kv_dim, dim)  fused q, k, v rows
  attn_q_bias = 14,       // (q_dim)
  attn_k_bias = 15,       // (kv_dim)
  attn_v_bias = 16,       // (kv_dim)
  attn_qkv_bias = 17,     // (q_dim + 2 kv_dim)
  attn_output_bias = 18,  // (dim)
  ffn_gate_bias = 19,     // (ffn_dim)
  ffn_up_bias = 20,       // (ffn_dim)
  ffn_down_bias = 21,     // (dim)
  attn_norm_bias = 22,    // (dim)
  ffn_norm_bias = 23,     // (dim)
  output_norm_bias = 24,  // (dim)
  pos_embd = 25,          // (max_seq_len, dim) learned absolute positions
  attn_q_norm = 26,       // (head_dim) per-head RMSNorm of q
  attn_k_norm = 27,       // (head_dim) per-head RMSNorm of k
  post_attn_norm = 28,    // (dim) the attention output's norm (sandwich)
  post_ffn_norm = 29,     // (dim) the FFN output's norm (sandwich)
  rope_freqs = 30,        // (head_dim / 2) each RoPE pair's frequency divisor
  ffn_gate_up = 31,       // (2 ffn_dim, dim) fused gate rows, then up rows
  token_types = 32,       // (dim) segment 0's token-type embedding, added to every token (BERT)
  embd_norm = 33,         // (dim) the embeddings' norm before the first block (BERT)
  embd_norm_bias = 34,    // (dim)
};
constexpr uint32_t kRoleCount = 35;         // roles are 1..34
constexpr uint32_t kNoLayer = 0xFFFFFFFFu;  // layer field of global tensors

// wordpiece: BERT's normalizer, pre-tokenizer and greedy longest-match-first WordPiece with the
// "##" continuation prefix (text/wordpiece.hpp); unk_id is required, bos/eos are [CLS]/[SEP].
enum class TokenizerKind : uint32_t { sentencepiece_bpe = 1, byte_level_bpe = 2, wordpiece = 3 };
// chatml_qwen: ChatML with Qwen2.5's default system message when the conversation has none.
// gemma: <start_of_turn>; llama3: header ids; llama3_dated: Llama 3.1-3.3's, whose system block
// always opens with "Cutting Knowledge Date"; phi3: <|user|> ... <|end|> (text/chat.hpp).
enum class ChatTemplate : uint32_t {
  none = 0,
  chatml = 1,
  llama2 = 2,
  chatml_qwen = 3,
  gemma = 4,
  llama3 = 5,
  phi3 = 6,
  llama3_dated = 7,
};
constexpr uint32_t kChatTemplateCount = 8;
// kTokNoDigitSplit: byte-level BPE pre-tokenizes as GPT-2 does (a number run is one regex word)
// instead of splitting every digit off first (SmolLM2's Digits(individual_digits)).
// kTokPreTokenizer: set exactly when pre_tokenizer is not 0, so that a reader older than that
// field rejects the file ("unknown tokenizer flags") instead of splitting text the GPT-2 way.
// kTokLowercase..kTokCleanText are BertNormalizer's options, WordPiece only: full Unicode
// lowercase; strip accents (NFD, then drop category Mn); a space each side of a CJK ideograph;
// clean text (drop controls and U+FFFD, whitespace becomes U+0020).
enum TokenizerFlags : uint32_t {
  kTokAddSpacePrefix = 1u << 0,
  kTokAddBos = 1u << 1,
  kTokNoDigitSplit = 1u << 2,
  kTokPreTokenizer = 1u << 3,
  kTokLowercase = 1u << 4,
  kTokStripAccents = 1u << 5,
  kTokChineseChars = 1u << 6,
  kTokCleanText = 1u << 7,
};
constexpr uint32_t kTokKnownFlags = (1u << 8) - 1;
constexpr uint32_t kTokWordPieceFlags = kTokLowercase | kTokStripAccents | kTokChineseChars | kTokCleanText;
// WordPiece's fixed parameters (the converter refuses a tokenizer with others): a word of more
// code points than this is [UNK] whole (max_input_chars_per_word); pieces after a word's first
// start with the continuation prefix.
constexpr uint32_t kWordPieceMaxWordChars = 100;
constexpr char kWordPiecePrefix[] = "##";
// How byte-level BPE splits text into words before merging (TokenizerHeader::pre_tokenizer;
// SentencePiece: always gpt2 = 0). gpt2 is GPT-2's regex, every number code point split off
// first unless kTokNoDigitSplit: files written before the field existed hold 0 and keep their
// meaning. llama3 and qwen2 are Llama 3's and Qwen2's regexes (byte_level_bpe.cpp spells them;
// they take no kTokNoDigitSplit). llama3 also takes a word that is a token whole, unmerged.
enum class PreTokenizer : uint32_t { gpt2 = 0, llama3 = 1, qwen2 = 2 };
constexpr uint32_t kPreTokenizerCount = 3;

struct FileHeader {  // at offset 0, 128 bytes
  uint8_t magic[4];
  uint32_t version;
  uint64_t file_size;         // the whole file, a multiple of 64
  uint64_t payload_checksum;  // FNV-1a 64 over the payload as little-endian u64 words
  uint32_t header_size;       // sizeof(FileHeader)
  uint32_t config_size;       // sizeof(ModelConfig)
  uint64_t config_offset;
  uint64_t tensor_table_offset;
  uint32_t tensor_count;
  uint32_t tensor_entry_size;  // sizeof(TensorEntry)
  uint64_t tokenizer_offset;
  uint64_t tokenizer_size;
  uint64_t data_offset;  // first tensor byte; tensors lie in [data_offset, file_size)
  uint64_t data_size;
  uint8_t reserved[40];
};
static_assert(sizeof(FileHeader) == 128, "FileHeader is 128 bytes");

struct ModelConfig {  // 128 bytes; the enums are u32 on disk and may hold any value until validated
  Family family;
  uint32_t dim;
  uint32_t n_layers;
  uint32_t n_heads;
  uint32_t n_kv_heads;
  uint32_t head_dim;
  uint32_t ffn_dim;
  uint32_t vocab_size;
  uint32_t max_seq_len;
  NormKind norm_kind;
  float norm_eps;
  PositionKind position_kind;
  float rope_theta;
  RopeLayout rope_layout;
  Activation activation;
  uint32_t flags;
  int32_t bos_id;  // -1 = none
  int32_t eos_id;
  // Revision 5; each is zero unless its flag is set, so an older reader rejects the file (by the
  // flag) instead of running it wrongly.
  uint32_t sliding_window;    // kFlagSlidingWindow: a windowed layer's query sees this many positions
  uint32_t swa_global_every;  // kFlagSlidingWindow: layer l attends globally iff (l + 1) % this == 0
                              // (0: every layer is windowed)
  float rope_theta_local;     // kFlagSlidingWindow: the windowed layers' RoPE base
  float attention_scale;      // kFlagAttentionScale: scores are q.k * this
  Pooling pooling;            // revision 8, kFlagEncoder: the model's own pooling (mean: 0)
  uint8_t reserved[36];
};
static_assert(sizeof(ModelConfig) == 128, "ModelConfig is 128 bytes");

struct TensorEntry {  // 64 bytes
  uint32_t role;
  uint32_t layer;
  uint32_t dtype;
  uint32_t n_dims;    // 1 or 2
  uint32_t shape[4];  // shape[0] = rows (outermost), unused dims are 1
  uint64_t offset;    // from the start of the file, a multiple of 64
  uint64_t size;      // bytes
  uint8_t reserved[16];
};
static_assert(sizeof(TensorEntry) == 64, "TensorEntry is 64 bytes");

// The tokenizer section starts with this header; its offsets are relative to the section start
// and each array is 4-byte aligned.
struct TokenizerHeader {  // 96 bytes
  uint32_t kind;
  uint32_t n_tokens;
  uint32_t flags;
  uint32_t chat_template;
  int32_t bos_id;
  int32_t eos_id;
  int32_t unk_id;
  uint32_t max_piece_bytes;
  uint64_t piece_offsets_offset;  // u32[n_tokens + 1], starts at 0, non-decreasing
  uint64_t piece_bytes_offset;    // piece_offsets[n_tokens] bytes
  uint64_t scores_offset;         // f32[n_tokens]
  uint64_t types_offset;          // u8[n_tokens]
  uint64_t sorted_ids_offset;     // u32[n_tokens], ascending by (bytes, id)
  uint32_t n_merges;              // byte-level BPE only (0 for sentencepiece_bpe)
  uint32_t pre_tokenizer;         // PreTokenizer (0 before this field existed)
  uint64_t merges_offset;         // BpeMerge[n_merges], ascending by (left, right)
  uint8_t reserved[8];
};
static_assert(sizeof(TokenizerHeader) == 96, "TokenizerHeader is 96 bytes");

// One byte-level BPE merge: the adjacent tokens (left, right) become result, whose piece is
// left's bytes followed by right's. Lower rank merges first. The table is sorted by
// (left, right) so the encoder finds a pair by binary search.
struct BpeMerge {  // 16 bytes
  uint32_t left;
  uint32_t right;
  uint32_t result;
  uint32_t rank;
};
static_assert(sizeof(BpeMerge) == 16, "BpeMerge is 16 bytes");

// The architecture of one transformer block, decoded from a validated config: what the forward
// pass does at each step and which optional tensor roles the file holds. Llama is RMSNorm, RoPE,
// SwiGLU, no biases, pre-norm; GPT-2 is LayerNorm with bias, learned positions, GELU, biases,
// fused QKV, pre-norm; Qwen2 adds q/k/v biases; Gemma 3 adds the embedding scale, per-head q/k
// norms, sandwich norms, GeGLU and sliding windows; BERT is an encoder: post-norm LayerNorm,
// token types and an embedding norm, no classifier.
struct BlockSpec {
  NormKind norm;
  bool norm_bias;  // LayerNorm's beta
  float norm_eps;
  PositionKind positions;
  RopeLayout rope_layout;  // RoPE only
  bool rope_factors;       // rope_freqs divides the pair frequencies
  Activation activation;
  bool gated_ffn;  // down(act(gate x) * up x) (SwiGLU, GeGLU) rather than down(act(up x))
  bool fused_gate_up;
  bool qkv_bias, output_bias, ffn_bias;
  bool fused_qkv;
  bool qk_norm;        // per-head RMSNorm of q and k before RoPE
  bool sandwich_norm;  // post_attn_norm / post_ffn_norm on each sub-block's output
  bool embed_scale;    // token embedding * sqrt(dim)
  bool post_norm;        // also: no final norm before the classifier
  bool tied_embeddings;  // the classifier is the token embedding
  bool encoder;          // an embedder: every token sees the whole text; no classifier
  bool embed_norm;       // embd_norm (+ bias with norm_bias) after the embeddings
  bool token_types;      // token_types added to the embeddings
  bool normalize_embeddings;  // the pooled embedding is scaled to unit length
  Pooling pooling;            // encoder: the model's own pooling
  uint32_t sliding_window;    // 0: every layer attends to the whole context
  uint32_t swa_global_every;  // with a window: layer l is global iff (l + 1) % this == 0
  float rope_theta_local;     // with a window: the windowed layers' RoPE base
  float attention_scale;      // q.k scale: 1/sqrt(head_dim) unless the config overrides it
};
BlockSpec block_spec(const ModelConfig &config);

// Whether layer l of this spec attends over a sliding window (and rotates with its own base).
inline bool windowed_layer(const BlockSpec &spec, uint32_t layer) {
  return spec.sliding_window != 0 && (spec.swa_global_every == 0 || (layer + 1) % spec.swa_global_every != 0);
}

// One row per tensor role (like ggml's tensor names): what the .mote file and GGUF call it, where
// it lives, its shape as a rule over the config, and when a block spec needs it. The reader, the
// converter and the importers read this table instead of naming roles.
enum class Extent : uint8_t { dim, q_dim, kv_dim, qkv_dim, ffn_dim, gate_up_dim, head_dim, half_head, vocab, context };
struct RoleInfo {
  Role role;
  const char *name;  // .mote's name: "attn_q_bias"
  const char *stem;  // GGUF's stem, before ".weight" / ".bias": "attn_q"
  // GGUF's stem in a post-norm block, where the norms follow the sub-blocks (BERT's
  // "attn_output_norm"); null: stem.
  const char *post_norm_stem;
  bool per_layer;
  bool bias;         // GGUF ".bias"
  Extent rows;
  Extent cols;       // cols == rows marks a vector: (rows)
  bool (*needed)(const BlockSpec &spec);
};
const RoleInfo *role_info(uint32_t role);  // null for unknown
// A role's extent in values under config c.
uint32_t extent(const ModelConfig &c, Extent e);

// Whether a file of this spec holds a tensor of this role (once per layer or once in all).
bool role_needed(const BlockSpec &spec, Role role);
bool is_global_role(Role role);

// One row per dtype, indexed by its on-disk value: how a tensor of it lays out its bytes. Adding
// a weight type is a row here, one in model/weight_types.cpp (its kernels) and one host row for
// the converter (models/convert/quant/host_types.cpp); the reader, the value checks, the converter and
// its messages read the rows instead of naming dtypes.
struct DTypeTraits {
  const char *name;
  DType dtype;
  uint32_t block_elements;    // values per block: 1 (floats), 32, or 256 (a K-quant super-block)
  uint32_t block_bytes;       // per block of one row: an x8 type's are its plain type's
  uint32_t interleaved_rows;  // rows stored together: 1, or 8 for the x8 types (rows a multiple of it)
  uint32_t ggml_type;         // GGUF's id for these same bytes (GGMLQuantizationType), or kNoGgmlType
  DType twin;                 // a plain type's x8 layout, an x8 type's plain one; itself when it has none
  // Where a block keeps its fp16 scale (then its minimum): finite ones make every value finite.
  // An x8 group block keeps each field for its 8 rows at its start (d[8], then m[8]), so an x8
  // row's offset is 0 whatever its plain twin's is.
  uint32_t scale_offset;  // bytes from the block's start
  uint32_t scale_fields;  // 0 (floats), 1 (d) or 2 (d, then m)
};

constexpr uint32_t kNoGgmlType = 0xFFFFFFFFu;  // the x8 layouts: no GGUF type holds their bytes

// Quantized blocks are GGUF's; the x8 types hold the same blocks, 8 rows interleaved.
inline constexpr DTypeTraits kDTypeTraits[] = {
    // name, dtype, block_elements, block_bytes, interleaved_rows, ggml_type, twin, scale_offset, scale_fields
    {"f32", DType::f32, 1, 4, 1, 0, DType::f32, 0, 0},
    {"f16", DType::f16, 1, 2, 1, 1, DType::f16, 0, 0},
    {"bf16", DType::bf16, 1, 2, 1, 30, DType::bf16, 0, 0},
    {"q8_0", DType::q8_0, 32, 34, 1, 8, DType::q8_0x8, 0, 1},
    {"q4_0", DType::q4_0, 32, 18, 1, 2, DType::q4_0x8, 0, 1},
    {"q4_1", DType::q4_1, 32, 20, 1, 3, DType::q4_1x8, 0, 2},
    {"q8_0x8", DType::q8_0x8, 32, 34, 8, kNoGgmlType, DType::q8_0, 0, 1},
    {"q4_0x8", DType::q4_0x8, 32, 18, 8, kNoGgmlType, DType::q4_0, 0, 1},
    {"q4_1x8", DType::q4_1x8, 32, 20, 8, kNoGgmlType, DType::q4_1, 0, 2},
    {"q5_0", DType::q5_0, 32, 22, 1, 6, DType::q5_0x8, 0, 1},
    {"q5_1", DType::q5_1, 32, 24, 1, 7, DType::q5_1x8, 0, 2},
    {"q5_0x8", DType::q5_0x8, 32, 22, 8, kNoGgmlType, DType::q5_0, 0, 1},
    {"q5_1x8", DType::q5_1x8, 32, 24, 8, kNoGgmlType, DType::q5_1, 0, 2},
    // K-quant super-blocks: the fp16 d (and dmin) sit after the packed sub-block fields in q6_k,
    // q3_k and q2_k, at the start in q4_k and q5_k.
    {"q4_k", DType::q4_k, 256, 144, 1, 12, DType::q4_kx8, 0, 2},
    {"q5_k", DType::q5_k, 256, 176, 1, 13, DType::q5_kx8, 0, 2},
    {"q6_k", DType::q6_k, 256, 210, 1, 14, DType::q6_kx8, 208, 1},
    {"q3_k", DType::q3_k, 256, 110, 1, 11, DType::q3_kx8, 108, 1},
    {"q2_k", DType::q2_k, 256, 84, 1, 10, DType::q2_kx8, 80, 2},
    {"iq4_nl", DType::iq4_nl, 32, 18, 1, 20, DType::iq4_nlx8, 0, 1},
    // The K types' x8 layouts: a group block starts with its rows' fp16 fields (d[8], then
    // dmin[8]) wherever the plain block keeps them.
    {"q4_kx8", DType::q4_kx8, 256, 144, 8, kNoGgmlType, DType::q4_k, 0, 2},
    {"q5_kx8", DType::q5_kx8, 256, 176, 8, kNoGgmlType, DType::q5_k, 0, 2},
    {"q6_kx8", DType::q6_kx8, 256, 210, 8, kNoGgmlType, DType::q6_k, 0, 1},
    {"q3_kx8", DType::q3_kx8, 256, 110, 8, kNoGgmlType, DType::q3_k, 0, 1},
    {"q2_kx8", DType::q2_kx8, 256, 84, 8, kNoGgmlType, DType::q2_k, 0, 2},
    {"iq4_nlx8", DType::iq4_nlx8, 32, 18, 8, kNoGgmlType, DType::iq4_nl, 0, 1},
};
constexpr uint32_t kDTypeCount = sizeof kDTypeTraits / sizeof kDTypeTraits[0];

constexpr const DTypeTraits *dtype_traits(uint32_t dtype) {  // null for unknown
  return dtype < kDTypeCount ? &kDTypeTraits[dtype] : nullptr;
}
// The row of a known dtype.
constexpr const DTypeTraits &traits_of(DType dtype) { return kDTypeTraits[static_cast<uint32_t>(dtype)]; }

// Each row sits at its dtype's index, and a twin pair holds the same blocks in the same rows.
constexpr bool dtype_rows_consistent() {
  for (uint32_t i = 0; i < kDTypeCount; ++i) {
    const DTypeTraits &row = kDTypeTraits[i];
    const DTypeTraits &twin = traits_of(row.twin);
    if (static_cast<uint32_t>(row.dtype) != i || twin.twin != row.dtype) return false;
    if (twin.block_elements != row.block_elements || twin.block_bytes != row.block_bytes ||
        twin.scale_fields != row.scale_fields || row.scale_offset + 2 * row.scale_fields > row.block_bytes) {
      return false;
    }
    if ((row.block_elements > 1) != (row.scale_fields > 0)) return false;  // blocks have scales, floats none
    // Interleaving moves 4-byte quads of the bytes around the fields: none may straddle them.
    if (row.twin != row.dtype && (row.scale_offset % 4 != 0 || (row.block_bytes - 2 * row.scale_fields) % 4 != 0))
      return false;
    if (row.interleaved_rows > 1 && row.scale_offset != 0) return false;
  }
  return true;
}
static_assert(dtype_rows_consistent(), "every DTypeTraits row sits at its dtype and matches its twin");

const char *role_name(uint32_t role);  // "attn_q", or null for unknown
const char *family_name(Family family);  // "qwen2" (GGUF's architecture name), or null for unknown

// Writes "blk.3.attn_q" / "token_embd" style names.
void tensor_name(const TensorEntry &entry, char *out, size_t capacity);

// FNV-1a over 64-bit little-endian words (n a multiple of 8).
uint64_t payload_checksum(const uint8_t *bytes, size_t n);

}  // namespace mote::format
