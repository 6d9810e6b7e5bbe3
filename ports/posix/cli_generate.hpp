// What the generating commands (run, chat) share: their settings, the model and session they
// open, and generate(), which writes the reply as it comes.
#pragma once

#include <csignal>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "cli_grammar.hpp"
#include "cli_model.hpp"
#include "cli_options.hpp"
#include "mote/mote.h"

namespace mote::cli {

// --draft's names (none, auto, lookup, model); false for another.
bool parse_draft_kind(const std::string &name, mote_draft_kind *kind);

// What generating commands (run, chat) share: the model, the sampler, threads and context.
struct GenerationSettings {
  std::string model_path;
  KvCacheOptions kv;
  ModelLoadOptions load;  // --no-mmap (the draft model too)
  uint32_t n_new = 256;  // UINT32_MAX (-n -1): until the context is full or the end of the turn
  uint32_t threads = available_cpus();
  uint32_t context = 0;
  uint32_t batch = mote_session_options_default().batch_size;
  mote_sampler_options sampler = mote_sampler_options_default();
  bool seed_given = false;
  bool ignore_eos = false;
  std::string stop;  // -r: generation stops once the output ends with it (not printed)
  std::string backend_name = "cpu";
  bool gpu = false;                         // --gpu: --backend cuda
  mote_backend backend = MOTE_BACKEND_CPU;  // backend_name, parsed by finish()
  std::string draft_kind = "auto";  // --draft: none, auto, lookup or model
  std::string draft_model_path;     // -md: a draft model with the same vocabulary
  GrammarOptions grammar;
  // The compiled grammar (open_generation fills it when one is given): each reply starts it anew
  // and ends once it is complete and can take nothing more.
  mutable std::shared_ptr<GrammarHolder> compiled_grammar;
  // The draft model and its session (open_generation opens them when -md is given).
  struct DraftModel {
    std::unique_ptr<LoadedModel> model;
    std::unique_ptr<SessionHolder> session;
  };
  mutable std::shared_ptr<DraftModel> draft;

  // Chat's sampling defaults, shared by `mote chat` and `mote run --chat`.
  void use_chat_defaults();
  void add_options(std::vector<Option> *options);
  // Checks the values (a usage error) and fills in the default model and the seed.
  bool finish(std::string *error);
  mote_session_options session_options() const;
};

// Loads the model and opens a session for settings; false with a reason.
bool open_generation(const GenerationSettings &settings, std::unique_ptr<LoadedModel> *loaded,
                     std::unique_ptr<SessionHolder> *holder, std::string *error);

// Samples and decodes after a prefill until settings.n_new tokens, an end-of-generation token
// (unless --ignore-eos), the stop string, a full context (MOTE_ERR_CONTEXT_FULL) or *interrupt
// (when given and set, e.g. by Ctrl-C). Text goes to out as it comes, never split inside a UTF-8
// character and without the stop string. Every generated token is in the KV cache.
struct Generated {
  uint32_t tokens = 0;
  double first_token_seconds = 0;  // from the call to the first piece
  double seconds = 0;
  std::string text;   // what was printed
  std::string error;  // why it failed (a status other than MOTE_OK or MOTE_ERR_CONTEXT_FULL)
  mote_generation_stats drafting{};  // forward passes, drafted and kept tokens
};
// " | drafts: K of D kept, T tokens/pass" for the stats line when any token was drafted; "" otherwise.
std::string draft_stats(const Generated &generated);
// mote_generate_constrained (the library's loop, no copy of it here) with the text printed from its
// callback.
mote_status generate(mote_session *session, const GenerationSettings &settings, FILE *out, Generated *generated,
                     const volatile std::sig_atomic_t *interrupt = nullptr);

}  // namespace mote::cli
