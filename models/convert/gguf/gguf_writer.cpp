// The GGUF writer: header, metadata (llama.cpp's keys for each family's architecture),
// tensor infos and 32-byte aligned data (gguf_writer.hpp lists the decisions).
#include "gguf/gguf_writer.hpp"

#include <cstring>
#include <map>

#include "families.hpp"
#include "gguf/gguf.hpp"
#include "message_text.hpp"
#include "quant/repack.hpp"
#include "vocab/byte_level_vocab.hpp"
#include "vocab/wordpiece_vocab.hpp"

namespace mote::convert {
namespace {

constexpr uint32_t kGgufVersion = 3;
constexpr uint64_t kGgufAlignment = 32;  // llama.cpp's default; written as general.alignment too

// GGUF's metadata key-value section, encoded as it is added.
class Metadata {
 public:
  void u32(const std::string &key, uint32_t v) {
    head(key, GgufType::u32);
    put(v);
  }
  void f32(const std::string &key, float v) {
    head(key, GgufType::f32);
    put(v);
  }
  void boolean(const std::string &key, bool v) {
    head(key, GgufType::boolean);
    put(static_cast<uint8_t>(v));
  }
  void string(const std::string &key, const std::string &v) {
    head(key, GgufType::string);
    put_string(v);
  }
  void strings(const std::string &key, const std::vector<std::string> &values) {
    array_head(key, GgufType::string, values.size());
    for (const std::string &v : values) put_string(v);
  }
  template <typename T>
  void numbers(const std::string &key, GgufType type, const std::vector<T> &values) {
    array_head(key, type, values.size());
    for (const T v : values) put(v);
  }

  uint64_t count() const { return count_; }
  const std::vector<uint8_t> &bytes() const { return bytes_; }

 private:
  template <typename T>
  void put(T v) {
    const size_t at = bytes_.size();
    bytes_.resize(at + sizeof v);
    std::memcpy(bytes_.data() + at, &v, sizeof v);
  }
  void put_string(const std::string &s) {
    put(static_cast<uint64_t>(s.size()));
    bytes_.insert(bytes_.end(), s.begin(), s.end());
  }
  void head(const std::string &key, GgufType type) {
    put_string(key);
    put(static_cast<uint32_t>(type));
    ++count_;
  }
  void array_head(const std::string &key, GgufType type, size_t n) {
    head(key, GgufType::array);
    put(static_cast<uint32_t>(type));
    put(static_cast<uint64_t>(n));
  }

  std::vector<uint8_t> bytes_;
  uint64_t count_ = 0;
};

// Whether config's split-half q/k rows are permuted into the row's interleaved pairs on the way
// out (llama: llama.cpp's converter permutes Hugging Face's weights so).
bool permutes_rope_rows(const format::ModelConfig &c, const FamilyRow &row) {
  return c.rope_layout == format::RopeLayout::split_half && row.gguf_rope_layout == format::RopeLayout::interleaved;
}

// llama.cpp's architecture for config (the family's row), or null with *error when the blocks are
// not that family's as llama.cpp runs them: the row's flags plus what a file may add (tied
// embeddings; RoPE factors and a window where llama.cpp reads them, the window in its fixed
// pattern), the row's head shapes, and llama.cpp's RoPE pairing (or rows permuted to it).
const FamilyRow *architecture(const format::ModelConfig &c, std::string *error) {
  // An encoder's GGUF needs llama.cpp's pooling and token-type keys, which this writer does not
  // write: say so rather than call its blocks foreign.
  if ((c.flags & format::kFlagEncoder) != 0) {
    *error = "GGUF output is written for decoder models only; write this embedder as a .mote file";
    return nullptr;
  }
  const FamilyRow *row = family_row(c.family);
  if (row != nullptr) {
    const uint32_t optional = format::kFlagTiedEmbeddings | (row->gguf_rope_factors ? format::kFlagRopeFactors : 0u) |
                              (row->gguf_window ? format::kFlagSlidingWindow : 0u);
    const bool window_as_llama_cpp =
        (c.flags & format::kFlagSlidingWindow) == 0 ||
        (c.swa_global_every == row->swa_global_every &&
         c.rope_theta_local == (row->rope_theta_local != 0.0f ? row->rope_theta_local : c.rope_theta));
    const bool rope_as_llama_cpp = c.position_kind != format::PositionKind::rope ||
                                   c.rope_layout == row->gguf_rope_layout || permutes_rope_rows(c, *row);
    const bool heads_as_llama_cpp =
        row->grouped_heads || (c.n_heads * c.head_dim == c.dim && c.n_kv_heads == c.n_heads);
    if (c.norm_kind == row->norm && c.position_kind == row->positions && c.activation == row->activation &&
        (c.flags & ~optional) == row->flags && window_as_llama_cpp && rope_as_llama_cpp && heads_as_llama_cpp) {
      return row;
    }
  }
  *error = "this model's blocks are not those of llama.cpp's architecture for its family (" + known_gguf_archs() +
           "): write a .mote file instead";
  return nullptr;
}

// The hyperparameters llama.cpp reads for the row's architecture.
void add_hyperparameters(const FamilyRow &row, const format::ModelConfig &c, Metadata *meta) {
  const std::string arch = row.gguf_arch;
  meta->u32(arch + ".context_length", c.max_seq_len);
  meta->u32(arch + ".embedding_length", c.dim);
  meta->u32(arch + ".block_count", c.n_layers);
  meta->u32(arch + ".feed_forward_length", c.ffn_dim);
  meta->u32(arch + ".attention.head_count", c.n_heads);
  meta->u32(arch + ".attention.head_count_kv", c.n_kv_heads);
  meta->f32(arch + "." + row.eps_key, c.norm_eps);
  if (row.positions == format::PositionKind::rope) {
    meta->f32(arch + ".rope.freq_base", c.rope_theta);
    meta->u32(arch + ".rope.dimension_count", c.head_dim);
  }
  if (row.gguf_vocab_size) meta->u32(arch + ".vocab_size", c.vocab_size);
  if ((c.flags & format::kFlagSlidingWindow) != 0) meta->u32(arch + ".attention.sliding_window", c.sliding_window);
  if (c.head_dim * c.n_heads != c.dim) {  // llama.cpp's default is embedding_length / head_count
    meta->u32(arch + ".attention.key_length", c.head_dim);
    meta->u32(arch + ".attention.value_length", c.head_dim);
  }
}

// A template in the format's chat kind; llama.cpp recognises ChatML by <|im_start|> and
// Llama 2 by [INST].
const char *chat_template_text(format::ChatTemplate kind) {
  switch (kind) {
    case format::ChatTemplate::chatml:
      return "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + "
             "'<|im_end|>\\n' }}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";
    case format::ChatTemplate::llama2:
      return "{% set ns = namespace(system='') %}{% for message in messages %}{% if message['role'] == 'system' %}"
             "{% set ns.system = '<<SYS>>\\n' + message['content'] + '\\n<</SYS>>\\n\\n' %}"
             "{% elif message['role'] == 'user' %}{{ bos_token + '[INST] ' + ns.system + message['content'] + "
             "' [/INST]' }}{% set ns.system = '' %}{% else %}{{ ' ' + message['content'] + ' ' + eos_token }}"
             "{% endif %}{% endfor %}";
    case format::ChatTemplate::chatml_qwen:  // Qwen2.5's, without its tool-calling branches
      return "{% if messages[0]['role'] != 'system' %}{{ '<|im_start|>system\\nYou are Qwen, created by Alibaba "
             "Cloud. You are a helpful assistant.<|im_end|>\\n' }}{% endif %}{% for message in messages %}"
             "{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>\\n' }}{% endfor %}"
             "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";
    case format::ChatTemplate::gemma:
      return "{{ bos_token }}{% for message in messages %}{% set role = 'model' if message['role'] == 'assistant' "
             "else message['role'] %}{{ '<start_of_turn>' + role + '\\n' + message['content'] | trim + "
             "'<end_of_turn>\\n' }}{% endfor %}{% if add_generation_prompt %}{{ '<start_of_turn>model\\n' }}"
             "{% endif %}";
    case format::ChatTemplate::llama3:
      return "{{ bos_token }}{% for message in messages %}{{ '<|start_header_id|>' + message['role'] + "
             "'<|end_header_id|>\\n\\n' + message['content'] | trim + '<|eot_id|>' }}{% endfor %}"
             "{% if add_generation_prompt %}{{ '<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}{% endif %}";
    case format::ChatTemplate::llama3_dated:  // Llama 3.1's, without its tool-calling branches
      return "{{ bos_token }}{{ '<|start_header_id|>system<|end_header_id|>\\n\\nCutting Knowledge Date: December "
             "2023\\nToday Date: 26 Jul 2024\\n\\n' }}{% if messages[0]['role'] == 'system' %}{{ "
             "messages[0]['content'] "
             "| trim }}{% set messages = messages[1:] %}{% endif %}{{ '<|eot_id|>' }}{% for message in messages %}"
             "{{ '<|start_header_id|>' + message['role'] + '<|end_header_id|>\\n\\n' + message['content'] | trim + "
             "'<|eot_id|>' }}{% endfor %}{% if add_generation_prompt %}"
             "{{ '<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}{% endif %}";
    case format::ChatTemplate::phi3:
      return "{% for message in messages %}{{ '<|' + message['role'] + '|>\\n' + message['content'] + "
             "'<|end|>\\n' }}{% endfor %}{% if add_generation_prompt %}{{ '<|assistant|>\\n' }}{% endif %}";
    case format::ChatTemplate::none:
      break;
  }
  return nullptr;
}

// llama.cpp's tokenizer.ggml.pre name for a byte-level tokenizer's pre-tokenizer.
const char *gguf_pre_tokenizer_name(const TokenizerData &tok) {
  switch (tok.pre_tokenizer) {
    case format::PreTokenizer::llama3:
      return "llama-bpe";
    case format::PreTokenizer::qwen2:
      return "qwen2";
    case format::PreTokenizer::gpt2:
      break;
  }
  return (tok.flags & format::kTokNoDigitSplit) ? "gpt-2" : "smollm";
}

// Token i's GGUF spelling: SentencePiece's spaces as U+2581; a byte-level normal token in
// GPT-2's byte-to-unicode form, the other types as their literal text; WordPiece in llama.cpp's
// phantom-space form.
std::string gguf_piece(const TokenizerData &tok, size_t i) {
  std::string piece = tok.pieces[i];
  if (tok.kind == format::TokenizerKind::byte_level_bpe) {
    return tok.types[i] == format::kTokenNormal ? gpt2_bytes_to_unicode(piece) : piece;
  }
  if (tok.kind == format::TokenizerKind::wordpiece) return wordpiece_to_phantom_space(piece);
  for (size_t at = 0; (at = piece.find(' ', at)) != std::string::npos; at += 3) piece.replace(at, 1, "\xE2\x96\x81");
  return piece;
}

void add_tokenizer(const TokenizerData &tok, Metadata *meta) {
  const bool byte_level = tok.kind == format::TokenizerKind::byte_level_bpe;
  const bool wordpiece = tok.kind == format::TokenizerKind::wordpiece;
  meta->string("tokenizer.ggml.model", byte_level ? "gpt2" : wordpiece ? "bert" : "llama");
  if (byte_level) meta->string("tokenizer.ggml.pre", gguf_pre_tokenizer_name(tok));
  std::vector<std::string> pieces(tok.pieces.size());
  for (size_t i = 0; i < pieces.size(); ++i) pieces[i] = gguf_piece(tok, i);
  meta->strings("tokenizer.ggml.tokens", pieces);
  if (!byte_level && !wordpiece) meta->numbers("tokenizer.ggml.scores", GgufType::f32, tok.scores);
  meta->numbers("tokenizer.ggml.token_type", GgufType::i32, std::vector<int32_t>(tok.types.begin(), tok.types.end()));
  if (byte_level) {
    std::vector<std::string> merges;
    merges.reserve(tok.merges.size());
    for (const format::BpeMerge &m : tok.merges) merges.push_back(pieces[m.left] + " " + pieces[m.right]);
    meta->strings("tokenizer.ggml.merges", merges);
  }
  if (tok.bos_id >= 0) meta->u32("tokenizer.ggml.bos_token_id", static_cast<uint32_t>(tok.bos_id));
  if (tok.eos_id >= 0) meta->u32("tokenizer.ggml.eos_token_id", static_cast<uint32_t>(tok.eos_id));
  if (tok.unk_id >= 0) meta->u32("tokenizer.ggml.unknown_token_id", static_cast<uint32_t>(tok.unk_id));
  meta->boolean("tokenizer.ggml.add_bos_token", (tok.flags & format::kTokAddBos) != 0);
  if (!byte_level && !wordpiece) {
    meta->boolean("tokenizer.ggml.add_space_prefix", (tok.flags & format::kTokAddSpacePrefix) != 0);
  }
  if (wordpiece && tok.bos_id >= 0) meta->u32("tokenizer.ggml.cls_token_id", static_cast<uint32_t>(tok.bos_id));
  if (wordpiece && tok.eos_id >= 0) meta->u32("tokenizer.ggml.seperator_token_id", static_cast<uint32_t>(tok.eos_id));
  if (const char *text = chat_template_text(tok.chat_template)) meta->string("tokenizer.chat_template", text);
}

// A tensor as GGUF holds it: plain row-major blocks of a ggml type.
struct GgufTensor {
  std::string name;
  uint32_t n_dims;
  uint64_t dims[2];  // innermost first
  uint32_t ggml_type;
  std::vector<uint8_t> bytes;
};

// Split-half RoPE rows into GGUF's interleaved pairs, head by head: row 2i of a head takes row i,
// row 2i + 1 takes row i + head_dim / 2 (llama.cpp's converter permutes Hugging Face weights so).
std::vector<uint8_t> interleave_rope_rows(const std::vector<uint8_t> &bytes, size_t rows, size_t head_dim) {
  std::vector<uint8_t> out(bytes.size());
  const size_t row_bytes = bytes.size() / rows, half = head_dim / 2;
  for (size_t head = 0; head < rows / head_dim; ++head) {
    const size_t first = head * head_dim;
    for (size_t i = 0; i < half; ++i) {
      std::memcpy(&out[(first + 2 * i) * row_bytes], &bytes[(first + i) * row_bytes], row_bytes);
      std::memcpy(&out[(first + 2 * i + 1) * row_bytes], &bytes[(first + half + i) * row_bytes], row_bytes);
    }
  }
  return out;
}

bool to_gguf_tensor(const TensorData &t, const format::ModelConfig &c, const FamilyRow &row, GgufTensor *out,
                    std::string *error) {
  out->name = gguf_tensor_name(t.role, t.layer, format::block_spec(c));
  const format::DTypeTraits &traits = format::traits_of(t.dtype);
  const format::DType plain = plain_dtype(t.dtype);
  out->ggml_type = format::traits_of(plain).ggml_type;
  if (out->ggml_type == format::kNoGgmlType) {
    *error = "tensor '" + out->name + "' is " + traits.name + ", which has no GGUF type";
    return false;
  }
  const uint64_t cols = t.n_dims == 1 ? t.rows : t.cols, rows = t.n_dims == 1 ? 1 : t.rows;
  const uint64_t expected = rows * (cols / traits.block_elements) * traits.block_bytes;
  if (cols % traits.block_elements != 0 || rows % traits.interleaved_rows != 0 || t.bytes.size() != expected) {
    *error = "tensor '" + out->name + "' holds " + num(t.bytes.size()) + " bytes, not whole " + traits.name +
             " blocks for its shape";
    return false;
  }
  out->n_dims = t.n_dims;
  out->dims[0] = cols;
  out->dims[1] = rows;
  out->bytes = plain == t.dtype ? t.bytes : deinterleave_rows(t.bytes, plain, rows, cols);
  const bool rope_rows = t.role == format::Role::attn_q || t.role == format::Role::attn_k;
  if (rope_rows && permutes_rope_rows(c, row)) {
    if (rows % c.head_dim != 0) {
      *error = "tensor '" + out->name + "' has " + num(rows) + " rows, not whole heads of " + num(c.head_dim);
      return false;
    }
    out->bytes = interleave_rope_rows(out->bytes, rows, c.head_dim);
  }
  return true;
}

// llama.cpp's file type for the most frequent matrix type (its own guess when the key is absent);
// -1 for a type it has none for.
int64_t file_type(const std::vector<GgufTensor> &tensors) {
  static const std::map<uint32_t, int64_t> kFileTypeOfGgmlType = {
      {0, 0},   {1, 1},   {2, 2},   {3, 3},   {6, 8},   {7, 9},   {8, 7},
      {10, 10}, {11, 12}, {12, 15}, {13, 17}, {14, 18}, {20, 25}, {30, 32},
  };
  std::map<uint32_t, size_t> counts;
  for (const GgufTensor &t : tensors) counts[t.ggml_type] += t.n_dims == 2;
  uint32_t most = 0;
  size_t best = 0;
  for (const auto &[type, count] : counts) {
    if (count > best) most = type, best = count;
  }
  const auto found = kFileTypeOfGgmlType.find(most);
  return found == kFileTypeOfGgmlType.end() ? -1 : found->second;
}

uint64_t aligned(uint64_t n) { return (n + kGgufAlignment - 1) / kGgufAlignment * kGgufAlignment; }

template <typename T>
void append(std::vector<uint8_t> *out, T v) {
  const size_t at = out->size();
  out->resize(at + sizeof v);
  std::memcpy(out->data() + at, &v, sizeof v);
}

// Header, metadata, tensor infos, then each tensor's data at its aligned offset.
std::vector<uint8_t> layout(const Metadata &meta, const std::vector<GgufTensor> &tensors) {
  std::vector<uint8_t> out = {'G', 'G', 'U', 'F'};
  append(&out, kGgufVersion);
  append(&out, static_cast<uint64_t>(tensors.size()));
  append(&out, meta.count());
  out.insert(out.end(), meta.bytes().begin(), meta.bytes().end());
  std::vector<uint64_t> offsets;  // from the start of the data section
  uint64_t end = 0;
  for (const GgufTensor &t : tensors) {
    append(&out, static_cast<uint64_t>(t.name.size()));
    out.insert(out.end(), t.name.begin(), t.name.end());
    append(&out, t.n_dims);
    for (uint32_t d = 0; d < t.n_dims; ++d) append(&out, t.dims[d]);
    append(&out, t.ggml_type);
    append(&out, end);
    offsets.push_back(end);
    end = aligned(end + t.bytes.size());
  }
  const size_t data_start = aligned(out.size());
  out.resize(data_start + end, 0);
  for (size_t i = 0; i < tensors.size(); ++i) {
    std::memcpy(out.data() + data_start + offsets[i], tensors[i].bytes.data(), tensors[i].bytes.size());
  }
  return out;
}

}  // namespace

bool serialize_gguf(const ModelData &model, std::vector<uint8_t> *out, std::string *error) {
  const FamilyRow *row = architecture(model.config, error);
  if (row == nullptr) return false;
  const std::string arch = row->gguf_arch;
  // In the order of the config's slots, whatever order the importer added them in, so a GGUF
  // written from a GGUF import is the same file again.
  const std::vector<TensorSlot> slots = tensor_slots(model.config);
  if (slots.size() != model.tensors.size()) {
    *error = "the model holds " + num(model.tensors.size()) + " tensors where its config needs " + num(slots.size());
    return false;
  }
  std::vector<GgufTensor> tensors(slots.size());
  for (size_t i = 0; i < slots.size(); ++i) {
    const TensorData *found = nullptr;
    for (const TensorData &t : model.tensors) {
      if (t.role == slots[i].role && t.layer == slots[i].layer) found = &t;
    }
    if (found == nullptr) {
      *error = "the model has no tensor '" +
               gguf_tensor_name(slots[i].role, slots[i].layer, format::block_spec(model.config)) + "'";
      return false;
    }
    if (!to_gguf_tensor(*found, model.config, *row, &tensors[i], error)) return false;
  }
  Metadata meta;
  meta.string("general.architecture", arch);
  meta.u32("general.alignment", kGgufAlignment);
  if (const int64_t type = file_type(tensors); type >= 0) meta.u32("general.file_type", static_cast<uint32_t>(type));
  meta.u32("general.quantization_version", 2);  // ggml's current quantized block layouts
  add_hyperparameters(*row, model.config, &meta);
  add_tokenizer(model.tokenizer, &meta);
  *out = layout(meta, tensors);
  return true;
}

}  // namespace mote::convert
