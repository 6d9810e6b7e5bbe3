#include "cli_generate.hpp"

#include <unistd.h>

#include <algorithm>
#include <ctime>

#include "cli_terminal.hpp"

namespace mote::cli {

bool parse_draft_kind(const std::string &name, mote_draft_kind *kind) {
  static const struct {
    const char *name;
    mote_draft_kind kind;
  } kKinds[] = {
      {"none", MOTE_DRAFT_NONE}, {"auto", MOTE_DRAFT_AUTO}, {"lookup", MOTE_DRAFT_LOOKUP}, {"model", MOTE_DRAFT_MODEL}};
  for (const auto &k : kKinds) {
    if (name == k.name) {
      *kind = k.kind;
      return true;
    }
  }
  return false;
}

void GenerationSettings::use_chat_defaults() {
  // SmolLM2's model card suggests a low temperature for chat; flags still override these.
  sampler.temperature = 0.2f;
  sampler.top_p = 0.9f;
  // Without a penalty SmolLM2-135M loops on one sentence in 10 of 16 replies; 1.1 in 0 of 16,
  // 1.2 in 2 of 16 (bench/repeat_penalty.py: 8 prompts x 2 seeds, 200 tokens, docs/DESIGN.md).
  sampler.repetition_penalty = 1.1f;
}

void GenerationSettings::add_options(std::vector<Option> *options) {
  const std::vector<Option> mine = {
      {"-m|--model", Option::kString, &model_path, "FILE",
       "the model: a .mote file, or a GGUF file or Hugging Face folder converted once into ~/.cache/mote", nullptr,
       "SmolLM2-135M-Instruct from ~/.cache/mote (models/fetch_smollm2.sh)"},
      {"-n|--n-predict|--tokens", Option::kCount, &n_new, "N",
       "tokens to generate; -1: until the context is full or the end of the text/turn"},
      {"-c|--ctx-size|--ctx", Option::kU32, &context, "N", "context length in tokens", nullptr, "the model's maximum"},
      {"--temp", Option::kF32, &sampler.temperature, "T", "sampling temperature; 0: greedy"},
      {"--top-k", Option::kI32, &sampler.top_k, "K", "sample among the K most likely tokens; 0: off"},
      {"--top-p", Option::kF32, &sampler.top_p, "P",
       "sample among the most likely tokens whose probabilities sum to P; 1: off"},
      {"--min-p", Option::kF32, &sampler.min_p, "P",
       "drop tokens less likely than P times the most likely one; 0: off"},
      {"--repeat-penalty", Option::kF32, &sampler.repetition_penalty, "R",
       "penalize recently generated tokens by R; 1: off"},
      {"--repeat-last-n", Option::kI32, &sampler.repetition_last_n, "N",
       "how many recent tokens --repeat-penalty looks at"},
      {"-s|--seed", Option::kU64, &sampler.seed, "S", "the sampler's seed", &seed_given, "the current time"},
      {"--ignore-eos", Option::kSwitch, &ignore_eos, nullptr,
       "go on past end-of-text tokens (until -n or a full context)"},
      {"-r|--reverse-prompt", Option::kString, &stop, "TEXT", "stop once the output holds TEXT (TEXT is not printed)"},
      {"-t|--threads", Option::kU32, &threads, "N", "threads (the default: the CPUs this process may use)"},
      {"-b|--batch-size|--batch", Option::kU32, &batch, "N", "prompt tokens per forward pass"},
      {"--backend", Option::kString, &backend_name, "NAME",
       "cpu or cuda (cuda: a -DMOTE_CUDA=ON build and an NVIDIA GPU)"},
      {"--gpu", Option::kSwitch, &gpu, nullptr, "the same as --backend cuda"},
      {"--draft", Option::kString, &draft_kind, "MODE",
       "speculative decoding (the text stays the same, only the speed changes): none; auto (prompt lookup, "
       "grammar fast-forward and -md's model, each only while it pays); lookup or model (that drafter alone, "
       "always)"},
      {"-md|--model-draft", Option::kString, &draft_model_path, "FILE",
       "a draft model with the same vocabulary (e.g. Qwen2.5-Coder-0.5B for 1.5B)"},
      {"--draft-max", Option::kU32, &sampler.draft_max, "N", "drafted tokens per step at most"},
      {"--draft-min", Option::kU32, &sampler.draft_min, "N", "a shorter draft is not checked"},
      {"--draft-p-min", Option::kF32, &sampler.draft_p_min, "P",
       "the draft model stops drafting at a token it gives less probability"},
  };
  options->insert(options->end(), mine.begin(), mine.end());
  kv.add_options(options);
  load.add_options(options);
  grammar.add_options(options);
}

bool GenerationSettings::finish(std::string *error) {
  if (!kv.finish(error) || !grammar.check(error)) return false;
  if (!parse_backend(backend_name, gpu, &backend, error)) return false;
  if (threads == 0 || threads > kMaxThreads) {
    *error = "--threads must be in [1, " + std::to_string(kMaxThreads) + "]";
    return false;
  }
  if (!parse_draft_kind(draft_kind, &sampler.draft)) {
    *error = "--draft must be none, auto, lookup or model, not '" + draft_kind + "'";
    return false;
  }
  if (sampler.draft == MOTE_DRAFT_MODEL && draft_model_path.empty()) {
    *error = "--draft model needs a draft model (-md FILE)";
    return false;
  }
  if (sampler.draft_max > MOTE_MAX_DRAFT) {
    *error = "--draft-max must be at most " + std::to_string(MOTE_MAX_DRAFT);
    return false;
  }
  char message[256] = "";
  // The draft model's session is opened later (open_generation): checked above by its flag.
  mote_sampler_options checked = sampler;
  if (checked.draft == MOTE_DRAFT_MODEL) checked.draft = MOTE_DRAFT_AUTO;
  if (mote_sampler_options_validate(&checked, message, sizeof message) != MOTE_OK) {
    *error = message;
    return false;
  }
  if (!seed_given) sampler.seed = static_cast<uint64_t>(std::time(nullptr));
  if (model_path.empty()) model_path = default_model_path();
  return true;
}

mote_session_options GenerationSettings::session_options() const {
  mote_session_options o = mote_session_options_default();
  o.context_length = context;
  o.kv_dtype = kv.dtype;
  o.n_threads = threads;
  o.batch_size = batch;
  o.backend = backend;
  o.on_progress = report_progress;
  o.draft_capacity = sampler.draft == MOTE_DRAFT_NONE ? 0 : sampler.draft_max;
  return o;
}

bool open_generation(const GenerationSettings &settings, std::unique_ptr<LoadedModel> *loaded,
                     std::unique_ptr<SessionHolder> *holder, std::string *error) {
  if (settings.model_path == default_model_path() && access(settings.model_path.c_str(), R_OK) != 0) {
    *error = "no model given (-m MODEL) and the default model " + settings.model_path +
             " is not installed: run models/fetch_smollm2.sh";
    return false;
  }
  *loaded = load_model(settings.model_path, error, settings.load.load());
  if (!*loaded) return false;
  *holder = open_session((*loaded)->model, settings.session_options(), error);
  if (*holder == nullptr) return false;
  if (!settings.draft_model_path.empty() && settings.sampler.draft != MOTE_DRAFT_NONE) {
    auto draft = std::make_shared<GenerationSettings::DraftModel>();
    draft->model = load_model(settings.draft_model_path, error, settings.load.load());
    if (!draft->model) {
      *error = "draft model: " + *error;
      return false;
    }
    if (mote_models_share_vocabulary(&(*loaded)->model, &draft->model->model) == 0) {
      *error = "the draft model '" + settings.draft_model_path + "' has another vocabulary than '" +
               settings.model_path + "': it cannot draft for it";
      return false;
    }
    // The draft model follows the model's tokens: the same context, threads and cache type; it
    // never drafts itself.
    mote_session_options options = settings.session_options();
    options.context_length = mote_session_context_length(&(*holder)->session);
    options.draft_capacity = 0;
    draft->session = open_session(draft->model->model, options, error);
    if (!draft->session) {
      *error = "draft model: " + *error;
      return false;
    }
    settings.draft = draft;
  }
  return !settings.grammar.given() ||
         compile_grammar(settings.grammar, (*loaded)->model, &settings.compiled_grammar, error);
}

namespace {

size_t incomplete_utf8_tail(const std::string &text) {
  for (size_t back = 1; back <= 3 && back <= text.size(); ++back) {
    const auto c = static_cast<unsigned char>(text[text.size() - back]);
    if ((c & 0xC0) == 0x80) continue;  // a continuation byte: look further back for the lead
    const size_t length = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;
    return length > back ? back : 0;
  }
  return 0;
}

// The reply's text on its way to out: bytes that may still turn into the stop string, or that
// begin a UTF-8 character whose other bytes are still to come, are held back.
class ReplyWriter {
 public:
  ReplyWriter(FILE *out, const std::string &stop, std::string *printed) : out_(out), stop_(stop), printed_(printed) {}

  // Appends a piece; true when the text now holds the stop string (cut there, not printed).
  bool write(const char *piece, size_t n) {
    held_.append(piece, n);
    const size_t stop_at = stop_.empty() ? std::string::npos : held_.find(stop_);
    if (stop_at != std::string::npos) {
      emit(stop_at);
      held_.clear();
      return true;
    }
    size_t keep = incomplete_utf8_tail(held_);
    for (size_t k = std::min(stop_.size() - (stop_.empty() ? 0 : 1), held_.size()); k > keep; --k) {
      if (held_.compare(held_.size() - k, k, stop_, 0, k) == 0) {
        keep = k;
        break;
      }
    }
    emit(held_.size() - keep);
    return false;
  }

  // The end of the reply: what was held as a possible stop string is text after all; a
  // character cut off by the token limit is dropped, so the output stays valid UTF-8.
  void finish() {
    emit(held_.size() - incomplete_utf8_tail(held_));
    held_.clear();
  }

 private:
  void emit(size_t n) {
    if (n == 0) return;
    if (out_ == stdout)
      print_on_reply_line(held_.data(), n);  // the terminal's line state follows what stdout got
    else
      std::fwrite(held_.data(), 1, n, out_);
    printed_->append(held_, 0, n);
    std::fflush(out_);
    held_.erase(0, n);
  }

  FILE *out_;
  const std::string &stop_;
  std::string *printed_;
  std::string held_;
};

// What mote_generate's on_token callback writes a reply through.
struct ReplySink {
  ReplyWriter *writer;
  Generated *generated;
  double start;
  const volatile std::sig_atomic_t *interrupt;
};

int write_reply_token(void *user, int32_t, const char *piece, size_t n) {
  ReplySink &sink = *static_cast<ReplySink *>(user);
  // The token and its text came from the model file: if it was written meanwhile, stop before
  // printing them (a write moves ctime before its data lands).
  exit_if_model_changed();
  if (sink.generated->tokens++ == 0) sink.generated->first_token_seconds = now_seconds() - sink.start;
  const bool stop = sink.writer->write(piece, n);
  return stop || (sink.interrupt != nullptr && *sink.interrupt != 0) ? 1 : 0;
}

}  // namespace

mote_status generate(mote_session *session, const GenerationSettings &settings, FILE *out, Generated *generated,
                     const volatile std::sig_atomic_t *interrupt) {
  *generated = Generated{};
  const double start = now_seconds();
  ReplyWriter writer(out, settings.stop, &generated->text);
  mote_grammar *grammar = settings.compiled_grammar ? &settings.compiled_grammar->grammar : nullptr;
  if (grammar != nullptr) mote_grammar_reset(grammar);
  mote_sampler_options options = settings.sampler;
  options.ignore_eos = settings.ignore_eos ? 1 : 0;
  options.draft_session = settings.draft ? &settings.draft->session->session : nullptr;
  ReplySink sink{&writer, generated, start, interrupt};
  mote_status status = MOTE_OK;
  if (interrupt == nullptr || *interrupt == 0) {
    // The prompt is in the cache already (prefill_with_progress): mote_generate samples from its logits.
    status = mote_generate_constrained(session, nullptr, 0, settings.n_new, &options, grammar, write_reply_token, &sink,
                                       nullptr);
  }
  // Ctrl-C between steps reaches mote_generate through the sessions' on_progress: the reply so far stands.
  if (status == MOTE_ERR_ABORTED) status = MOTE_OK;
  writer.finish();
  generated->seconds = now_seconds() - start;
  mote_generate_stats(session, &generated->drafting);
  if (status != MOTE_OK && status != MOTE_ERR_CONTEXT_FULL) generated->error = mote_session_error(session);
  return status;
}

std::string draft_stats(const Generated &generated) {
  const mote_generation_stats &d = generated.drafting;
  if (d.drafted == 0 || d.passes == 0) return "";
  char text[96];
  std::snprintf(text, sizeof text, " | drafts: %llu of %llu kept, %.2f tokens/pass",
                static_cast<unsigned long long>(d.accepted), static_cast<unsigned long long>(d.drafted),
                static_cast<double>(d.generated) / static_cast<double>(d.passes));
  return text;
}

}  // namespace mote::cli
