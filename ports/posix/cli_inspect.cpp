// `mote inspect`: what a .mote file holds and the arena a session needs.
#include <cstdio>

#include "cli_common.hpp"
#include "format/reader.hpp"
#include "model/model.hpp"

namespace mote::cli {
namespace {

const char *position_name(format::PositionKind kind, format::RopeLayout layout) {
  if (kind == format::PositionKind::rope) {
    return layout == format::RopeLayout::split_half ? "rope (split halves)" : "rope (interleaved pairs)";
  }
  return kind == format::PositionKind::learned ? "learned" : "sinusoidal";
}

const char *activation_name(format::Activation activation) {
  switch (activation) {
    case format::Activation::swiglu:
      return "swiglu";
    case format::Activation::gelu:
      return "gelu (tanh approximation)";
    case format::Activation::gelu_erf:
      return "gelu (erf)";
    case format::Activation::relu:
      return "relu";
    case format::Activation::geglu:
      return "geglu (gated gelu, tanh approximation)";
  }
  return "?";
}



// `--arena-bytes`: only the number mote_arena_size() returns for these options, e.g. for a build
// that sizes a static arena (ports/baremetal generates its firmware's arena size this way).
int print_arena_bytes(const mote_model &model, uint32_t context, uint32_t batch, mote_kv_dtype kv) {
  mote_session_options options = mote_session_options_default();
  options.kv_dtype = kv;
  options.context_length = context;
  if (batch != 0) options.batch_size = batch;
  const size_t bytes = mote_arena_size(&model, &options);
  if (bytes == 0) return report("inspect", "invalid --ctx or --batch for this model", kExitUsage);
  std::printf("%zu\n", bytes);
  return 0;
}

}  // namespace

int command_inspect(int argc, char **argv) {
  uint32_t context = 0, arena_batch = mote_session_options_default().batch_size;
  bool arena_only = false, gpu = false, check = false;
  KvCacheOptions kv;
  std::string backend_name = "cpu";
  CommandHelp command{"inspect",
                      "MODEL [OPTIONS]",
                      "Print what a model file holds (config, tensor table) and the arena a session needs.\n"
                      "A GGUF model is converted once into ~/.cache/mote first.",
                      {
                          {"-c|--ctx-size|--ctx", Option::kU32, &context, "N", "the context the arena sizes are for",
                           nullptr, "the model's maximum"},
                          {"--arena-bytes", Option::kSwitch, &arena_only, nullptr,
                           "print only the session's arena bytes (for --ctx, -b and --kv)"},
                          {"-b|--batch-size|--batch", Option::kU32, &arena_batch, "N",
                           "prompt tokens per forward pass (--arena-bytes)"},
                          {"--backend", Option::kString, &backend_name, "NAME",
                           "cpu or cuda: also print the device memory a session takes"},
                          {"--gpu", Option::kSwitch, &gpu, nullptr, "the same as --backend cuda"},
                          {"--check", Option::kSwitch, &check, nullptr,
                           "also scan every weight for NaN or inf (exit 1 naming the first)"},
                      }};
  kv.add_options(&command.options);
  std::vector<std::string> positional;
  const int parsed = parse_command(command, argc, argv, &positional);
  if (parsed != kParsed) return parsed;
  std::string error;
  if (positional.size() != 1) return report("inspect", "give exactly one model file", kExitUsage);
  if (!kv.finish(&error)) return report("inspect", error, kExitUsage);
  mote_backend backend = MOTE_BACKEND_CPU;
  if (!parse_backend(backend_name, gpu, &backend, &error)) return report("inspect", error, kExitUsage);
  if (gpu) backend_name = "cuda";
  auto loaded = load_model(positional[0], &error);
  if (!loaded) return report("inspect", error, kExitError);
  if (arena_only) return print_arena_bytes(loaded->model, context, arena_batch, kv.dtype);
  // A backend's device memory: the weights (one allocation per model) and one session's KV cache
  // and activations (f32 KV cache, --ctx, the default batch). Checked first: an error prints nothing else.
  uint64_t weight_bytes = 0, session_bytes = 0;
  if (backend != MOTE_BACKEND_CPU) {
    mote_session_options device_options = mote_session_options_default();
    device_options.context_length = context;
    device_options.backend = backend;
    char reason[256] = "";
    if (mote_backend_memory(&loaded->model, &device_options, &weight_bytes, &session_bytes, reason, sizeof reason) !=
        MOTE_OK) {
      return report("inspect", reason, kExitError);
    }
  }

  const format::ModelView &view = reinterpret_cast<const Model *>(loaded->model.opaque_)->view;
  const format::ModelConfig &c = view.config;
  std::printf("file            %s (%zu bytes)\n", loaded->path.c_str(), loaded->file.size());
  std::printf("family          %s\n", format::family_name(c.family));
  std::printf("dim             %u\nlayers          %u\nheads           %u\nkv heads        %u\n", c.dim, c.n_layers,
              c.n_heads, c.n_kv_heads);
  std::printf("head dim        %u\nffn dim         %u\nvocabulary      %u\nmax context     %u\n", c.head_dim, c.ffn_dim,
              c.vocab_size, c.max_seq_len);
  const format::BlockSpec spec = format::block_spec(c);
  std::printf("norm            %s%s, eps %g, %s\n", spec.norm == format::NormKind::rmsnorm ? "rmsnorm" : "layernorm",
              spec.norm_bias ? " with bias" : "", static_cast<double>(c.norm_eps),
              spec.post_norm ? "post-norm" : "pre-norm");
  if (c.position_kind == format::PositionKind::rope) {
    std::printf("positions       %s, theta %g%s\n", position_name(c.position_kind, c.rope_layout),
                static_cast<double>(c.rope_theta), spec.rope_factors ? ", frequency factors (rope_freqs)" : "");
  } else {
    std::printf("positions       %s\n", position_name(c.position_kind, c.rope_layout));
  }
  std::printf("activation      %s\n", activation_name(c.activation));
  std::printf("attention       %s q/k/v%s%s%s, scale %g\n", spec.fused_qkv ? "fused" : "separate",
              spec.qkv_bias ? (spec.output_bias ? ", biases" : ", q/k/v biases") : "",
              spec.qk_norm ? ", per-head q/k rmsnorm" : "", spec.ffn_bias ? "; ffn biases" : "",
              static_cast<double>(spec.attention_scale));
  if (spec.sliding_window != 0) {
    std::printf("window          %u positions, ", spec.sliding_window);
    if (spec.swa_global_every == 0) {
      std::printf("every layer, RoPE theta %g\n", static_cast<double>(spec.rope_theta_local));
    } else {
      std::printf("all but every %u-th layer, RoPE theta %g there\n", spec.swa_global_every,
                  static_cast<double>(spec.rope_theta_local));
    }
  }
  if (spec.sandwich_norm || spec.embed_scale || spec.fused_gate_up) {
    std::printf("block           %s%s%s\n", spec.sandwich_norm ? "norms after attention and ffn; " : "",
                spec.embed_scale ? "embedding x sqrt(dim); " : "", spec.fused_gate_up ? "fused gate/up" : "");
  }
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
  if (backend != MOTE_BACKEND_CPU) {
    session_options.kv_dtype = MOTE_KV_F32;
    session_options.backend = backend;
    std::printf("%s weights    %llu bytes (one device allocation per model)\n", backend_name.c_str(),
                static_cast<unsigned long long>(weight_bytes));
    std::printf("%s session    %llu bytes (one device allocation per session, f32 KV cache)\n", backend_name.c_str(),
                static_cast<unsigned long long>(session_bytes));
    std::printf("%s host arena %zu bytes\n", backend_name.c_str(), mote_arena_size(&loaded->model, &session_options));
  }
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
