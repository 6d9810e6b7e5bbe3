/* The llama.cpp peer's view of a GGUF, for gen_real_family_goldens.py: its tokenizer's ids for a
 * text, and its greedy continuation / per-position argmax for given ids (a second opinion, not the
 * oracle). Built against the peer's libllama (see gen_real_family_goldens.py for the command):
 *   peer_second_opinion tokenize MODEL < text        ids (BOS per the GGUF, special tokens parsed)
 *   peer_second_opinion greedy MODEL N ID...         the N greedy ids after ID...
 *   peer_second_opinion argmax MODEL ID...           the argmax after each of ID... */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "llama.h"

static void quiet(enum ggml_log_level level, const char *text, void *data) { (void)level, (void)text, (void)data; }

static int argmax_of(const float *logits, int n) {
  int best = 0;
  for (int i = 1; i < n; ++i) best = logits[i] > logits[best] ? i : best;
  return best;
}

static int decode_one(struct llama_context *ctx, llama_token token) {
  return llama_decode(ctx, llama_batch_get_one(&token, 1));
}

int main(int argc, char **argv) {
  if (argc < 3) return fprintf(stderr, "usage: %s tokenize|greedy|argmax MODEL ...\n", argv[0]), 2;
  llama_log_set(quiet, NULL);
  llama_backend_init();
  struct llama_model_params mp = llama_model_default_params();
  struct llama_model *model = llama_model_load_from_file(argv[2], mp);
  if (!model) return fprintf(stderr, "cannot load %s\n", argv[2]), 1;
  const struct llama_vocab *vocab = llama_model_get_vocab(model);
  const int n_vocab = llama_vocab_n_tokens(vocab);
  if (strcmp(argv[1], "tokenize") == 0) {
    static char text[1 << 16];
    size_t n = fread(text, 1, sizeof text - 1, stdin);
    static llama_token ids[1 << 14];
    int count = llama_tokenize(vocab, text, (int32_t)n, ids, 1 << 14, true, true);
    for (int i = 0; i < count; ++i) printf("%d%s", ids[i], i + 1 < count ? " " : "\n");
    return 0;
  }
  struct llama_context_params cp = llama_context_default_params();
  cp.n_ctx = 512;
  cp.n_batch = 512;
  cp.n_threads = 1;
  cp.n_threads_batch = 1;
  struct llama_context *ctx = llama_init_from_model(model, cp);
  const int greedy = strcmp(argv[1], "greedy") == 0;
  const int first = greedy ? 4 : 3;
  int next = 0;
  for (int i = first; i < argc; ++i) {
    if (decode_one(ctx, atoi(argv[i])) != 0) return fprintf(stderr, "decode failed\n"), 1;
    next = argmax_of(llama_get_logits_ith(ctx, -1), n_vocab);
    if (!greedy) printf("%d%s", next, i + 1 < argc ? " " : "\n");
  }
  for (int step = 0; greedy && step < atoi(argv[3]); ++step) {
    printf("%d%s", next, step + 1 < atoi(argv[3]) ? " " : "\n");
    if (decode_one(ctx, next) != 0) return fprintf(stderr, "decode failed\n"), 1;
    next = argmax_of(llama_get_logits_ith(ctx, -1), n_vocab);
  }
  llama_free(ctx);
  llama_model_free(model);
  return 0;
}
