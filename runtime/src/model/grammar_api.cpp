// The C API of grammars: arena size, compile, reset, accept and state (sampling with a grammar
// is in api.cpp, beside mote_sample).
#include "grammar/grammar.hpp"
#include "model/model.hpp"
#include "mote/mote.h"
#include "text/tokenizer.hpp"

using namespace mote;

namespace {

// The grammar object first, then its arrays and the matcher's: one layout for counting and for
// placing.
grammar::Grammar *plan_grammar(ArenaPlanner &planner, const grammar::Counts &counts, grammar::Arrays *arrays,
                               grammar::MatcherBuffers *buffers) {
  grammar::Grammar *g = planner.take<grammar::Grammar>(1);
  grammar::plan_arrays(planner, counts, arrays);
  grammar::plan_matcher(planner, buffers);
  return g;
}

Status check_text(const char *text, size_t text_n, ErrorSink err) {
  if (text == nullptr && text_n > 0) return fail(err, MOTE_ERR_INVALID_ARGUMENT, "grammar text is null");
  return MOTE_OK;
}

}  // namespace

namespace mote::grammar {

bool ends_generation(const Grammar &g, int32_t token) {
  if (token < 0 || static_cast<uint32_t>(token) >= g.tokenizer.n_tokens) return false;
  return token == g.bos_id || token == g.eos_id || g.tokenizer.types[token] == format::kTokenControl;
}

}  // namespace mote::grammar

extern "C" {

mote_status mote_grammar_arena_size(const char *text, size_t text_n, size_t *bytes, char *err, size_t err_n) {
  const ErrorSink sink{err, err_n};
  if (bytes == nullptr) return fail(sink, MOTE_ERR_INVALID_ARGUMENT, "bytes is null");
  *bytes = 0;
  Status status = check_text(text, text_n, sink);
  grammar::Counts counts;
  if (status == MOTE_OK) status = grammar::count_grammar(text, text_n, &counts, sink);
  if (status != MOTE_OK) return status;
  ArenaPlanner planner(nullptr, 0);
  grammar::Arrays arrays;
  grammar::MatcherBuffers buffers;
  plan_grammar(planner, counts, &arrays, &buffers);
  if (planner.overflowed()) return fail(sink, MOTE_ERR_GRAMMAR, "grammar: its arena exceeds the address space");
  *bytes = planner.used();
  return MOTE_OK;
}

mote_status mote_grammar_init(mote_grammar *grammar, const mote_model *model, const char *text, size_t text_n,
                              void *arena, size_t arena_n, char *err, size_t err_n) {
  const ErrorSink sink{err, err_n};
  if (grammar == nullptr) return fail(sink, MOTE_ERR_INVALID_ARGUMENT, "grammar is null");
  grammar->impl_ = nullptr;
  const Model *m = model_of(model);
  if (model != nullptr && m == nullptr) return fail(sink, MOTE_ERR_INVALID_ARGUMENT, "model was never opened");
  if (arena == nullptr) return fail(sink, MOTE_ERR_INVALID_ARGUMENT, "arena is null");
  if (reinterpret_cast<uintptr_t>(arena) % MOTE_ARENA_ALIGNMENT != 0) {
    return fail(sink, MOTE_ERR_INVALID_ARGUMENT, "arena is not %d-byte aligned", MOTE_ARENA_ALIGNMENT);
  }
  Status status = check_text(text, text_n, sink);
  grammar::Counts counts;
  if (status == MOTE_OK) status = grammar::count_grammar(text, text_n, &counts, sink);
  if (status != MOTE_OK) return status;
  ArenaPlanner planner(arena, arena_n);
  grammar::Arrays arrays;
  grammar::MatcherBuffers buffers;
  grammar::Grammar *g = plan_grammar(planner, counts, &arrays, &buffers);
  if (planner.overflowed() || planner.used() > arena_n) {
    return fail(sink, MOTE_ERR_ARENA_TOO_SMALL, "the grammar needs an arena of %llu bytes, not %llu",
                static_cast<unsigned long long>(planner.used()), static_cast<unsigned long long>(arena_n));
  }
  *g = grammar::Grammar{};
  g->buffers = buffers;
  status = grammar::compile_grammar(text, text_n, counts, arrays, g, sink);
  if (status != MOTE_OK) return status;
  if (m != nullptr) {
    g->has_tokenizer = true;
    g->tokenizer = m->view.tokenizer;
    g->vocab_size = m->view.config.vocab_size;
    g->bos_id = m->view.config.bos_id;
    g->eos_id = m->view.config.eos_id;
  }
  g->tag = grammar::kGrammarTag;
  grammar->impl_ = g;
  return MOTE_OK;
}

mote_status mote_grammar_reset(mote_grammar *grammar) {
  grammar::Grammar *g = grammar::grammar_of(grammar);
  if (g == nullptr) return MOTE_ERR_INVALID_ARGUMENT;
  return grammar::reset(*g, ErrorSink{});
}

mote_status mote_grammar_accept_bytes(mote_grammar *grammar, const char *bytes, size_t n, char *err, size_t err_n) {
  const ErrorSink sink{err, err_n};
  grammar::Grammar *g = grammar::grammar_of(grammar);
  if (g == nullptr) return fail(sink, MOTE_ERR_INVALID_ARGUMENT, "grammar is null or was never compiled");
  if (bytes == nullptr && n > 0) return fail(sink, MOTE_ERR_INVALID_ARGUMENT, "bytes are null");
  return grammar::accept_bytes(*g, bytes, n, sink);
}

mote_status mote_grammar_accept_token(mote_grammar *grammar, int32_t prev_token, int32_t token, char *err,
                                      size_t err_n) {
  const ErrorSink sink{err, err_n};
  grammar::Grammar *g = grammar::grammar_of(grammar);
  if (g == nullptr) return fail(sink, MOTE_ERR_INVALID_ARGUMENT, "grammar is null or was never compiled");
  if (!g->has_tokenizer) return fail(sink, MOTE_ERR_INVALID_ARGUMENT, "the grammar was compiled without a model");
  if (token < 0 || static_cast<uint32_t>(token) >= g->tokenizer.n_tokens) {
    return fail(sink, MOTE_ERR_BAD_TOKEN, "token %d is outside the vocabulary", static_cast<int>(token));
  }
  if (grammar::ends_generation(*g, token)) {
    return grammar::is_complete(*g) ? MOTE_OK
                                    : fail(sink, MOTE_ERR_GRAMMAR, "grammar: an end token before the grammar is complete");
  }
  char byte = 0;
  const char *bytes = nullptr;
  size_t n = 0;
  piece_for(g->tokenizer, prev_token, token, &byte, &bytes, &n);
  return grammar::accept_bytes(*g, bytes, n, sink);
}

uint32_t mote_grammar_state(const mote_grammar *grammar) {
  const grammar::Grammar *g = grammar::grammar_of(grammar);
  if (g == nullptr) return 0;
  return (grammar::is_complete(*g) ? MOTE_GRAMMAR_COMPLETE : 0u) |
         (grammar::can_continue(*g) ? MOTE_GRAMMAR_CAN_CONTINUE : 0u);
}

}  // extern "C"
