/* Opens a model given on the command line through the installed C API and decodes one token. */
#include <mote/mote.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv) {
  if (argc != 2) return 2;
  FILE *f = fopen(argv[1], "rb");
  if (f == NULL) return 2;
  fseek(f, 0, SEEK_END);
  const long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  unsigned char *bytes = aligned_alloc(64, (size_t)(n + 63) / 64 * 64);
  if (bytes == NULL || fread(bytes, 1, (size_t)n, f) != (size_t)n) return 2;
  fclose(f);

  mote_model model;
  char err[256];
  if (mote_model_open(bytes, (size_t)n, &model, err, sizeof err) != MOTE_OK) {
    fprintf(stderr, "consumer: %s\n", err);
    return 1;
  }
  mote_session_options options = mote_session_options_default();
  const size_t arena_n = mote_arena_size(&model, &options);
  void *arena = aligned_alloc(64, (arena_n + 63) / 64 * 64);
  mote_session session;
  if (mote_session_init(&session, &model, &options, arena, arena_n, err, sizeof err) != MOTE_OK) {
    fprintf(stderr, "consumer: %s\n", err);
    return 1;
  }
  const float *logits = NULL;
  if (mote_decode(&session, 1, &logits) != MOTE_OK || logits == NULL) return 1;
  printf("consumer ok: isa %s, arena %zu bytes\n", mote_isa_name(), arena_n);
  free(arena);
  free(bytes);
  return 0;
}
