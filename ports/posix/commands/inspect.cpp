// `mote inspect`: what a .mote file holds and the arena a session needs.
#include <cstdio>
#include <cstring>

#include "cli_model.hpp"
#include "cli_options.hpp"
#include "commands.hpp"

namespace mote::cli {
namespace {

const char *activation_text(const char *activation) {
  if (std::strcmp(activation, "gelu") == 0) return "gelu (tanh approximation)";
  if (std::strcmp(activation, "gelu_erf") == 0) return "gelu (erf)";
  if (std::strcmp(activation, "geglu") == 0) return "geglu (gated gelu, tanh approximation)";
  return activation;
}

const char *positions_text(const mote_model_info &info) {
  if (std::strcmp(info.positions, "rope") != 0) return info.positions;
  return std::strcmp(info.rope_layout, "split_half") == 0 ? "rope (split halves)" : "rope (interleaved pairs)";
}

// The architecture lines: what the blocks are made of.
void print_architecture(const mote_model_info &info) {
  const uint32_t f = info.block_flags;
  std::printf("family          %s\n", info.family);
  std::printf("dim             %u\nlayers          %u\nheads           %u\nkv heads        %u\n", info.dim,
              info.n_layers, info.n_heads, info.n_kv_heads);
  std::printf("head dim        %u\nffn dim         %u\nvocabulary      %u\nmax context     %u\n", info.head_dim,
              info.ffn_dim, info.vocab_size, info.max_seq_len);
  std::printf("norm            %s%s, eps %g, %s\n", info.norm, (f & MOTE_BLOCK_NORM_BIAS) ? " with bias" : "",
              static_cast<double>(info.norm_eps), (f & MOTE_BLOCK_POST_NORM) ? "post-norm" : "pre-norm");
  if (info.rope_theta != 0.0f) {
    std::printf("positions       %s, theta %g%s\n", positions_text(info), static_cast<double>(info.rope_theta),
                (f & MOTE_BLOCK_ROPE_FACTORS) ? ", frequency factors (rope_freqs)" : "");
  } else {
    std::printf("positions       %s\n", positions_text(info));
  }
  std::printf("activation      %s\n", activation_text(info.activation));
  std::printf("attention       %s q/k/v%s%s%s, scale %g\n", (f & MOTE_BLOCK_FUSED_QKV) ? "fused" : "separate",
              (f & MOTE_BLOCK_QKV_BIAS) ? ((f & MOTE_BLOCK_OUTPUT_BIAS) ? ", biases" : ", q/k/v biases") : "",
              (f & MOTE_BLOCK_QK_NORM) ? ", per-head q/k rmsnorm" : "", (f & MOTE_BLOCK_FFN_BIAS) ? "; ffn biases" : "",
              static_cast<double>(info.attention_scale));
  if (info.sliding_window != 0) {
    std::printf("window          %u positions, ", info.sliding_window);
    if (info.swa_global_every == 0) {
      std::printf("every layer, RoPE theta %g\n", static_cast<double>(info.rope_theta_local));
    } else {
      std::printf("all but every %u-th layer, RoPE theta %g there\n", info.swa_global_every,
                  static_cast<double>(info.rope_theta_local));
    }
  }
  if (f & (MOTE_BLOCK_SANDWICH_NORM | MOTE_BLOCK_EMBED_SCALE | MOTE_BLOCK_FUSED_GATE_UP)) {
    std::printf("block           %s%s%s\n", (f & MOTE_BLOCK_SANDWICH_NORM) ? "norms after attention and ffn; " : "",
                (f & MOTE_BLOCK_EMBED_SCALE) ? "embedding x sqrt(dim); " : "",
                (f & MOTE_BLOCK_FUSED_GATE_UP) ? "fused gate/up" : "");
  }
  if (f & MOTE_BLOCK_ENCODER) {
    static const char *const kPools[] = {"mean", "last token", "first token ([CLS])"};
    std::printf("embeddings      encoder, no classifier%s%s; pooling %s%s\n",
                (f & MOTE_BLOCK_TOKEN_TYPES) ? ", token types" : "", (f & MOTE_BLOCK_EMBED_NORM) ? ", normalized" : "",
                info.pooling < 3 ? kPools[info.pooling] : "?", info.normalize_embeddings ? ", then L2-normalized" : "");
  } else {
    std::printf("embeddings      %s\n", (f & MOTE_BLOCK_TIED_EMBEDDINGS) ? "tied" : "separate classifier");
  }
  std::printf("bos / eos       %d / %d\n", info.bos_id, info.eos_id);
  std::printf("tokenizer       %s, %u tokens, %u merges%s\n",
              info.tokenizer_kind == MOTE_TOKENIZER_SENTENCEPIECE ? "sentencepiece bpe"
              : info.tokenizer_kind == MOTE_TOKENIZER_WORDPIECE   ? "wordpiece"
                                                                  : "byte-level bpe",
              info.n_vocab_tokens, info.n_merges, info.add_bos ? ", adds bos" : "");
  const char *chat_template = mote_chat_template_name(static_cast<mote_chat_template>(info.chat_template));
  std::printf("chat template   %s\n", chat_template != nullptr ? chat_template : "?");
}

void print_tensors(const mote_model &model, const mote_model_info &info) {
  std::printf("\n%-24s %-8s %-16s %12s\n", "tensor", "dtype", "shape", "bytes");
  for (uint32_t i = 0; i < info.n_tensors; ++i) {
    mote_tensor_info t;
    if (mote_model_tensor(&model, i, &t) != MOTE_OK) break;
    char shape[32];
    if (t.n_dims == 2)
      std::snprintf(shape, sizeof shape, "(%u, %u)", t.shape[0], t.shape[1]);
    else
      std::snprintf(shape, sizeof shape, "(%u)", t.shape[0]);
    std::printf("%-24s %-8s %-16s %12llu\n", t.name, t.dtype, shape, static_cast<unsigned long long>(t.size));
  }
  std::printf("%-24s %-8s %-16s %12llu\n", "total", "", "", static_cast<unsigned long long>(info.weight_bytes));
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
                      "A GGUF model or Hugging Face folder is converted once into ~/.cache/mote first.",
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

  mote_model_info info;
  mote_model_info_get(&loaded->model, &info);
  std::printf("file            %s (%zu bytes)\n", loaded->path.c_str(), loaded->file.size());
  print_architecture(info);
  print_tensors(loaded->model, info);

  mote_session_options session_options = mote_session_options_default();
  session_options.context_length = context;
  session_options.kv_dtype = MOTE_KV_F32;  // both types' arenas, whichever is the default
  const size_t f32_bytes = mote_arena_size(&loaded->model, &session_options);
  session_options.kv_dtype = MOTE_KV_F16;
  const size_t f16_bytes = mote_arena_size(&loaded->model, &session_options);
  if (f32_bytes == 0)
    return report("inspect", "invalid --ctx for this model (at most " + std::to_string(info.max_seq_len) + ")",
                  kExitUsage);
  const unsigned shown_context = context == 0 ? info.max_seq_len : context;
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
  if (mote_model_check_supported(&loaded->model, message, sizeof message) != MOTE_OK) {
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
