// `mote inspect`: what a .mote file holds and the arena a session needs.
#include <cstdio>

#include "cli_common.hpp"
#include "format/reader.hpp"
#include "model/model.hpp"

namespace mote::cli {
namespace {

const char *position_name(uint32_t kind, uint32_t layout) {
  if (kind == static_cast<uint32_t>(format::PositionKind::rope)) {
    return layout == static_cast<uint32_t>(format::RopeLayout::split_half) ? "rope (split halves)"
                                                                           : "rope (interleaved pairs)";
  }
  return kind == static_cast<uint32_t>(format::PositionKind::learned) ? "learned" : "sinusoidal";
}

}  // namespace

int command_inspect(int argc, char **argv) {
  uint32_t context = 0;
  bool check = false;
  const std::vector<Option> options = {{"--ctx", nullptr, Option::kU32, &context},
                                       {"--check", nullptr, Option::kSwitch, &check}};
  std::vector<std::string> positional;
  std::string error;
  if (!parse_options(argc, argv, 2, options, &positional, &error)) return report("inspect", error, kExitUsage);
  if (positional.size() != 1) return report("inspect", "give exactly one model file", kExitUsage);
  auto loaded = load_model(positional[0], &error);
  if (!loaded) return report("inspect", error, kExitError);

  const format::ModelView &view = reinterpret_cast<const Model *>(loaded->model.opaque_)->view;
  const format::ModelConfig &c = view.config;
  std::printf("file            %s (%zu bytes)\n", positional[0].c_str(), loaded->file.size());
  std::printf("family          %s\n", c.family == static_cast<uint32_t>(format::Family::llama) ? "llama" : "gpt2");
  std::printf("dim             %u\nlayers          %u\nheads           %u\nkv heads        %u\n", c.dim, c.n_layers,
              c.n_heads, c.n_kv_heads);
  std::printf("head dim        %u\nffn dim         %u\nvocabulary      %u\nmax context     %u\n", c.head_dim, c.ffn_dim,
              c.vocab_size, c.max_seq_len);
  std::printf("norm            %s, eps %g\n", c.norm_kind == 1 ? "rmsnorm" : "layernorm",
              static_cast<double>(c.norm_eps));
  std::printf("positions       %s, theta %g\n", position_name(c.position_kind, c.rope_layout),
              static_cast<double>(c.rope_theta));
  std::printf("activation      %s\n", c.activation == 1 ? "swiglu" : (c.activation == 2 ? "gelu" : "relu"));
  std::printf("embeddings      %s\n", (c.flags & format::kFlagTiedEmbeddings) ? "tied" : "separate classifier");
  std::printf("bos / eos       %d / %d\n", c.bos_id, c.eos_id);
  std::printf("tokenizer       %s, %u tokens, %u merges%s\n",
              view.tokenizer_kind == 1 ? "sentencepiece bpe" : "byte-level bpe", view.tokenizer.n_tokens,
              view.tokenizer.n_merges, view.tokenizer.add_bos ? ", adds bos" : "");
  static const char *const kTemplates[] = {"none", "chatml", "llama-2 [INST]"};
  std::printf("chat template   %s\n", kTemplates[view.chat_template]);

  std::printf("\n%-24s %-6s %-16s %12s\n", "tensor", "dtype", "shape", "bytes");
  for (uint32_t i = 0; i < view.n_tensors; ++i) {
    const format::TensorEntry &t = view.tensors[i];
    char name[48], shape[32];
    format::tensor_name(t, name, sizeof name);
    if (t.n_dims == 2)
      std::snprintf(shape, sizeof shape, "(%u, %u)", t.shape[0], t.shape[1]);
    else
      std::snprintf(shape, sizeof shape, "(%u)", t.shape[0]);
    std::printf("%-24s %-6s %-16s %12llu\n", name, format::dtype_traits(t.dtype)->name, shape,
                static_cast<unsigned long long>(t.size));
  }
  std::printf("%-24s %-6s %-16s %12llu\n", "total", "", "", static_cast<unsigned long long>(view.weight_bytes));

  mote_session_options session_options = mote_session_options_default();
  session_options.context_length = context;
  const size_t f32_bytes = mote_arena_size(&loaded->model, &session_options);
  session_options.kv_dtype = MOTE_KV_F16;
  const size_t f16_bytes = mote_arena_size(&loaded->model, &session_options);
  if (f32_bytes == 0)
    return report("inspect", "invalid --ctx for this model (at most " + std::to_string(c.max_seq_len) + ")",
                  kExitUsage);
  const unsigned shown_context = context == 0 ? c.max_seq_len : context;
  const unsigned batch = session_options.batch_size;
  std::printf("\narena bytes     %zu (context %u, f32 KV cache, prefill batch %u)\n", f32_bytes, shown_context, batch);
  std::printf("arena bytes     %zu (context %u, f16 KV cache, prefill batch %u)\n", f16_bytes, shown_context, batch);
  char message[256] = "";
  if (check_supported(view, ErrorSink{message, sizeof message}) != MOTE_OK) {
    std::printf("runnable        no: %s\n", message);
  }
  if (check) {  // every weight read once: NaN or inf anywhere is an error
    if (mote_model_check_values(&loaded->model, message, sizeof message) != MOTE_OK) {
      return report("inspect", message, kExitError);
    }
    std::printf("values          all finite (every weight, scale and minimum checked)\n");
  }
  return 0;
}

}  // namespace mote::cli
