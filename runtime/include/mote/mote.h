/* mote: a small, heap-free runtime for decoder-only transformer language models.
 *
 * Memory is exactly two caller-owned regions: the model bytes (read-only, used in place) and
 * one session arena (writable, 64-byte aligned, sized by mote_arena_size()). Nothing here
 * allocates, throws or performs I/O. Every call that can fail returns a mote_status and, where
 * the caller passes an error buffer, writes a one-line message into it.
 *
 * Every argument is checked: null pointers, sizes, token ids, and enum values and flags as the
 * integers a C caller may store (mote_enum_args.inc lists each enum and flags argument; a value
 * outside the enum is MOTE_ERR_INVALID_ARGUMENT, never undefined behaviour).
 *
 * Threads. A mote_model is immutable once opened: any number of threads may use it at once,
 * through sessions and through the calls that take only a model (info, check_values, tokenize,
 * detokenize, chat_tokenize, chat_end_of_turn, token_ends_generation). A session is one
 * sequence of calls: it may move between threads, but its calls must not overlap. A session call
 * that finds another one in progress on the same session (from another thread, or from inside
 * mote_generate's on_token callback) returns MOTE_ERR_BUSY at once and changes nothing, not even
 * the session's error message (which belongs to the call in progress). The getters
 * (mote_session_position, _context_length, _error, mote_logits) are not guarded: call them
 * between calls, or from on_token. mote_session_init and mote_session_release must not overlap
 * any other call on the session. Separate sessions (separate arenas) run in parallel freely.
 */
#ifndef MOTE_MOTE_H
#define MOTE_MOTE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum mote_status {
  MOTE_OK = 0,
  MOTE_ERR_INVALID_ARGUMENT = 1, /* a null pointer, a zero size, an option out of range */
  MOTE_ERR_BAD_MODEL = 2,        /* the model bytes failed validation */
  MOTE_ERR_UNSUPPORTED = 3,      /* a valid file this build cannot run */
  MOTE_ERR_ARENA_TOO_SMALL = 4,  /* the message states the bytes needed */
  MOTE_ERR_CONTEXT_FULL = 5,     /* no room left in the KV cache */
  MOTE_ERR_BUFFER_TOO_SMALL = 6, /* an output buffer cannot hold the result */
  MOTE_ERR_BAD_TOKEN = 7,        /* a token id outside the vocabulary */
  MOTE_ERR_DEVICE = 8,           /* a backend's device call failed (the message names it) */
  MOTE_ERR_NUMERIC = 9,          /* the model produced NaN or inf (e.g. corrupt weights) */
  MOTE_ERR_BUSY = 10,            /* another call is in progress on this session (see Threads above) */
  MOTE_ERR_ABORTED = 11,         /* the session's on_progress callback asked to stop; the session stays valid */
  MOTE_ERR_GRAMMAR = 12          /* a grammar that does not compile, or text or a token it cannot continue */
} mote_status;

/* The library's version. The macros are the headers' (what the caller compiled against);
 * mote_version() is the linked library's ("0.1.0"). */
#define MOTE_VERSION_MAJOR 0
#define MOTE_VERSION_MINOR 1
#define MOTE_VERSION_PATCH 0
const char *mote_version(void);

/* Returns a static, human-readable name for a status ("arena too small"). */
const char *mote_status_name(mote_status status);

/* The instruction set the kernels use on this CPU ("avx512_amx", "avx512_vnni",
   "avx512_vnni_ymm", "avx512", "avx2_vnni", "avx2", "neon", "mve", "scalar"): the fastest this CPU runs, or the one the
   environment variable MOTE_ISA names when this CPU runs it (read once, at the first use). */
const char *mote_isa_name(void);

/* 1 when this build threads the forward pass with OpenMP (n_threads is honoured), else 0. */
int mote_openmp_enabled(void);

/* The arena and every buffer inside it are aligned to this many bytes. */
#define MOTE_ARENA_ALIGNMENT 64

/* A loaded model: a validated, immutable view of the model bytes. Caller-owned storage; the
 * fields are private. One model serves any number of sessions, from any threads. */
typedef struct mote_model {
  uint64_t opaque_[64];
} mote_model;

/* The tokenizer a model file carries. */
typedef enum mote_tokenizer_kind {
  MOTE_TOKENIZER_SENTENCEPIECE = 1, /* SentencePiece BPE over code points with byte fallback (Llama 2, Gemma) */
  MOTE_TOKENIZER_BYTE_LEVEL = 2,    /* GPT-2-style byte-level BPE (SmolLM2, Qwen2.5, Llama 3) */
  MOTE_TOKENIZER_WORDPIECE = 3      /* BERT's WordPiece (all-MiniLM-L6-v2, nomic-embed-text) */
} mote_tokenizer_kind;

/* What a model's blocks are made of (mote_model_info.block_flags). */
#define MOTE_BLOCK_NORM_BIAS (1u << 0)       /* LayerNorm with a bias */
#define MOTE_BLOCK_POST_NORM (1u << 1)       /* norms after each sub-block (BERT), no final norm */
#define MOTE_BLOCK_TIED_EMBEDDINGS (1u << 2) /* the classifier is the token embedding */
#define MOTE_BLOCK_GATED_FFN (1u << 3)       /* down(act(gate x) * up x): SwiGLU, GeGLU */
#define MOTE_BLOCK_FUSED_GATE_UP (1u << 4)   /* one gate/up matrix (Phi-3) */
#define MOTE_BLOCK_FUSED_QKV (1u << 5)       /* one q/k/v matrix (GPT-2, Phi-3) */
#define MOTE_BLOCK_QKV_BIAS (1u << 6)        /* q, k and v projections have biases */
#define MOTE_BLOCK_OUTPUT_BIAS (1u << 7)     /* the attention output projection has a bias */
#define MOTE_BLOCK_FFN_BIAS (1u << 8)        /* the FFN matrices have biases */
#define MOTE_BLOCK_QK_NORM (1u << 9)         /* per-head RMSNorm of q and k (Qwen3, Gemma 3) */
#define MOTE_BLOCK_SANDWICH_NORM (1u << 10)  /* norms on each sub-block's output too (Gemma 3) */
#define MOTE_BLOCK_EMBED_SCALE (1u << 11)    /* token embedding x sqrt(dim) (Gemma) */
#define MOTE_BLOCK_ROPE_FACTORS (1u << 12)   /* per-pair RoPE frequency factors (Llama 3 scaling) */
#define MOTE_BLOCK_ENCODER (1u << 13)        /* an embedder: bidirectional, no classifier (BERT) */
#define MOTE_BLOCK_EMBED_NORM (1u << 14)     /* the embeddings are normalized before the first block */
#define MOTE_BLOCK_TOKEN_TYPES (1u << 15)    /* a token-type (segment 0) vector is added to each token */

/* Architecture facts a caller may want (filled by mote_model_info_get). The strings are static. */
typedef struct mote_model_info {
  uint32_t dim, n_layers, n_heads, n_kv_heads, head_dim, ffn_dim, vocab_size, max_seq_len;
  int32_t bos_id, eos_id;
  uint64_t weight_bytes;  /* bytes of all tensors in the file */
  uint32_t chat_template; /* a mote_chat_template value */
  uint32_t tokenizer_kind; /* a mote_tokenizer_kind value */
  uint32_t add_bos;        /* 1: the model expects BOS before text (MOTE_TOKENIZE_ADD_BOS) */
  const char *family;      /* GGUF's architecture name: "llama", "gpt2", "qwen2", "gemma3", "qwen3", "phi3", "bert",
                              "nomic-bert" */
  const char *norm;        /* "rmsnorm" or "layernorm" */
  const char *activation;  /* "swiglu", "gelu" (tanh approximation), "gelu_erf", "relu", "geglu" */
  const char *positions;   /* "rope", "learned" or "sinusoidal" */
  const char *rope_layout; /* "interleaved" (pairs 2i, 2i+1), "split_half" (i, i + head_dim/2); "" without RoPE */
  float norm_eps;
  float rope_theta;       /* RoPE's base (0 without RoPE) */
  float attention_scale;  /* the q.k scale (1/sqrt(head_dim) unless the model sets its own) */
  uint32_t sliding_window;   /* 0: every layer sees the whole context; else windowed layers see this many */
  uint32_t swa_global_every; /* with a window: every this-th layer is global (0: none is) */
  float rope_theta_local;    /* with a window: the windowed layers' RoPE base */
  uint32_t block_flags;      /* MOTE_BLOCK_* bits */
  uint32_t n_tensors;        /* mote_model_tensor's indices are [0, n_tensors) */
  uint32_t n_vocab_tokens;   /* the tokenizer's entries (may be below vocab_size, the logits' length) */
  uint32_t n_merges;         /* the tokenizer's BPE merges (byte-level BPE; 0 for SentencePiece) */
  uint32_t format_version;   /* the .mote file's version */
  uint32_t pooling;          /* an encoder's own mote_pool for mote_embed (MOTE_POOL_MEAN otherwise) */
  uint32_t normalize_embeddings; /* 1: the model's embeddings are meant L2-normalized (sentence-transformers'
                                     Normalize; llama.cpp's default for embedders) */
} mote_model_info;

/* Validates the model bytes (every header field, offset, size, dtype, shape and tokenizer table)
 * and fills *model. The bytes must stay mapped and unchanged while the model is in use.
 * The bytes must be 64-byte aligned (an mmap or an aligned flash image is). */
mote_status mote_model_open(const void *bytes, size_t n_bytes, mote_model *model, char *err, size_t err_n);
void mote_model_info_get(const mote_model *model, mote_model_info *info);

/* One tensor of the model file (filled by mote_model_tensor). */
typedef struct mote_tensor_info {
  char name[48];     /* "blk.3.attn_q", "token_embd" (NUL-terminated) */
  const char *dtype; /* "f32", "f16", "q8_0", "q4_k", "q4_0x8", ... (static) */
  uint32_t n_dims;   /* 1 or 2 */
  uint32_t shape[2]; /* rows, columns; shape[1] is 0 for a vector */
  uint64_t offset;   /* of its first byte in the model bytes */
  uint64_t size;     /* bytes */
} mote_tensor_info;

/* Tensor index of the model file (0 .. mote_model_info.n_tensors - 1), in file order.
 * MOTE_ERR_INVALID_ARGUMENT for a null or unopened model, a null info or an index past the end. */
mote_status mote_model_tensor(const mote_model *model, uint32_t index, mote_tensor_info *info);

/* MOTE_OK when this build can run the model; else MOTE_ERR_UNSUPPORTED with the reason in err
 * (what mote_session_init would refuse it for, before any session options are looked at). */
mote_status mote_model_check_supported(const mote_model *model, char *err, size_t err_n);

/* Scans every tensor's stored numbers (float elements; quantized blocks' scales and minimums)
 * for NaN or inf: MOTE_ERR_NUMERIC with the first bad tensor and index ("tensor 'blk.0.attn_q'
 * holds nan at index 64"). Reads every weight once, so mote_model_open does not do it. */
mote_status mote_model_check_values(const mote_model *model, char *err, size_t err_n);

/* The KV cache's element type; F16 is the default (half of f32's memory; perplexity within the
 * error of f32's, README.md's KV cache table). Q8_0 keeps each head's keys and values per
 * position in 8-bit blocks of 32 (a shorter last block when head_dim is not a multiple of 32)
 * with a float scale: a quarter of f32's memory, logits within a small tolerance of f32's (a
 * model's perplexity may still suffer: +9% on Qwen2.5-0.5B, the same table). */
typedef enum mote_kv_dtype { MOTE_KV_F32 = 0, MOTE_KV_F16 = 1, MOTE_KV_Q8_0 = 2 } mote_kv_dtype;

/* Upper limits of mote_session_options.n_threads, .batch_size and .draft_capacity. */
#define MOTE_MAX_THREADS 1024
#define MOTE_MAX_BATCH 256
#define MOTE_MAX_DRAFT 64

/* Where a session's forward pass runs. CUDA needs a build with -DMOTE_CUDA=ON (linking
 * mote::mote_cuda) and an NVIDIA GPU; elsewhere mote_session_init says which is missing. */
typedef enum mote_backend { MOTE_BACKEND_CPU = 0, MOTE_BACKEND_CUDA = 1 } mote_backend;

/* Progress of a long call, and the way to stop it (mote_session_options.on_progress). Called
 * with the call's progress so far: by mote_prefill and mote_prefill_logits after each batch of
 * prompt tokens (done = the call's tokens now in the cache, total = the call's n_tokens), and by
 * mote_generate, first so for its prompt, then after each generated token is decoded (done =
 * tokens generated, total = max_new_tokens). Return 0 to go on; non-zero stops the call with
 * MOTE_ERR_ABORTED, the session valid and consistent at that point: a prefill keeps every batch
 * already run (mote_session_position counts them; prefilling the rest later gives the same logits
 * as an uninterrupted prefill), mote_generate keeps every token it reported. mote_decode does not
 * call it. It runs inside the call: a call on the same session from it returns MOTE_ERR_BUSY
 * (the getters answer). A signal handler may set a flag the callback reads (Ctrl-C). */
typedef int (*mote_on_progress)(void *user, uint32_t done, uint32_t total);

typedef struct mote_session_options {
  uint32_t context_length; /* tokens the KV cache holds; 0 = the model's max_seq_len */
  mote_kv_dtype kv_dtype;
  uint32_t n_threads; /* 0 or 1 = serial, at most MOTE_MAX_THREADS; ignored without OpenMP */
  /* Prompt tokens run through the weights together (1..MOTE_MAX_BATCH; 0 = 64). Larger batches prefill
   * faster and take more arena; the logits do not depend on it. */
  uint32_t batch_size;
  /* 0: causal attention (a decoder: each token sees itself and the tokens before it). 1: encoder
   * mode, no causal mask: each token also sees the later tokens of its own prefill step (prefill
   * a text in one step, batch_size >= its length, for every token to see the whole text). */
  uint32_t bidirectional;
  mote_backend backend; /* MOTE_BACKEND_CPU by default */
  /* CUDA only: weights already on the device (a mote_cuda_model from mote_cuda_model_upload),
   * shared by every session given it; null: the session uploads its own copy. */
  const void *device_model;
  /* Called between prefill batches and generation steps (see mote_on_progress); null: never. */
  mote_on_progress on_progress;
  void *progress_user; /* passed to on_progress as user */
  /* Drafted tokens one generation step of mote_generate may check besides the sampled one
   * (0..MOTE_MAX_DRAFT; the default 8): the arena holds their logits, (draft_capacity + 1) x
   * vocab_size floats. 0: mote_generate never drafts. See mote_draft_kind. */
  uint32_t draft_capacity;
} mote_session_options;

/* The default options: the model's full context, f16 KV cache, one thread, batches of 64. */
mote_session_options mote_session_options_default(void);

/* Exact number of arena bytes mote_session_init needs for these options; 0 if the options are
 * invalid for the model (mote_session_init then says why). */
size_t mote_arena_size(const mote_model *model, const mote_session_options *options);

/* Device memory a session on options->backend takes besides the host arena, each in one
 * allocation: *weight_bytes for the model's weights (once per uploaded model), *session_bytes
 * for the session's KV cache and activations. Both 0 for the CPU. MOTE_ERR_UNSUPPORTED (with a
 * one-line reason) when this build has no such backend or the model cannot run on it. */
mote_status mote_backend_memory(const mote_model *model, const mote_session_options *options, uint64_t *weight_bytes,
                                uint64_t *session_bytes, char *err, size_t err_n);

/* The backend's name ("cpu", "cuda"), or null when this build lacks it. */
const char *mote_backend_name(mote_backend backend);

typedef struct mote_session {
  void *impl_; /* lives at the start of the arena */
} mote_session;

/* Carves the session out of arena (64-byte aligned, at least mote_arena_size() bytes). The
 * session keeps its own copy of what it needs from *model: the mote_model may be moved or
 * dropped afterwards, but the model bytes must stay mapped for the session's life. */
mote_status mote_session_init(mote_session *session, const mote_model *model, const mote_session_options *options,
                              void *arena, size_t arena_n, char *err, size_t err_n);
/* Frees what the session holds outside its arena (a CUDA session's device memory and graph);
 * nothing for the CPU. The session is unusable afterwards; the arena may be reused.
 * MOTE_ERR_INVALID_ARGUMENT for a null or released session; MOTE_ERR_BUSY (nothing freed)
 * inside a call on it. */
mote_status mote_session_release(mote_session *session);
/* Forgets every token: the next prefill starts at position 0. */
mote_status mote_session_reset(mote_session *session);
/* Keeps the first n_tokens positions (the KV rows and the token history behind the repetition
 * penalty), in O(1): the next prefill or decode continues from there. Afterwards the session has
 * no logits (mote_logits returns NULL) until the next prefill or decode, as after
 * mote_session_reset. n_tokens above the position is MOTE_ERR_INVALID_ARGUMENT. */
mote_status mote_session_truncate(mote_session *session, uint32_t n_tokens);

/* Session state (models/FORMAT.md, "Session state"): the position, the token history, the KV
 * rows [0, position) in the session's KV type, the sampler's RNG and the last logits, after a
 * versioned, checksummed header naming the model (its payload checksum) and the session's shape
 * (context length, KV type, backend). A restored session samples and continues exactly as the
 * saved one would. CPU backend only (MOTE_ERR_UNSUPPORTED otherwise); the caller owns the buffer.
 *
 * mote_session_state_size: the bytes a save needs now (it grows with the position); 0 for a
 * null session or another backend. */
size_t mote_session_state_size(const mote_session *session);
/* Writes the state into buffer[0, size) and its length into *written (may be NULL). A buffer
 * below mote_session_state_size is MOTE_ERR_BUFFER_TOO_SMALL, *written set to the bytes needed
 * and the message (mote_session_error) saying so. */
mote_status mote_session_state_save(const mote_session *session, void *buffer, size_t size, size_t *written);
/* Replaces the session's state with a saved one (size may exceed the state: a flash sector).
 * Everything is validated first (magic, version, checksum, same model, same context length, KV
 * type, backend and attention (bidirectional or causal), position within the context, the size
 * that position needs, tokens in the vocabulary): a refused state leaves the session as it was
 * and gets one line in err (and mote_session_error). */
mote_status mote_session_state_load(mote_session *session, const void *buffer, size_t size, char *err, size_t err_n);
/* The bytes of a state's header. */
#define MOTE_SESSION_STATE_HEADER_SIZE 88u
/* Checks a state by its header alone (buffer[0, size), size at least the header's; the rest need
 * not be there) as mote_session_state_load does, all but the checksum and the tokens; *total_size
 * gets the whole state's size (0 when refused), never above what this session's context holds.
 * For a reader of files: one that is not a state of this model and session shape, or larger than
 * the session can hold, is refused before it is read. Touches nothing; one line in err (and
 * mote_session_error) when refused. */
mote_status mote_session_state_check_header(mote_session *session, const void *buffer, size_t size,
                                            uint64_t *total_size, char *err, size_t err_n);

/* Tokens currently in the KV cache, and how many it holds. */
uint32_t mote_session_position(const mote_session *session);
uint32_t mote_session_context_length(const mote_session *session);
/* Copies the tokens in the KV cache (positions 0 .. position - 1) into tokens and the count into
 * *n_tokens: after mote_session_state_load, the tokens the state was saved with (what a prompt
 * cache compares a new prompt with). A capacity below the count is MOTE_ERR_BUFFER_TOO_SMALL
 * with *n_tokens set to it and nothing copied; null session or n_tokens, or null tokens with a
 * capacity, is MOTE_ERR_INVALID_ARGUMENT; MOTE_ERR_BUSY inside another call on the session. */
mote_status mote_session_tokens(const mote_session *session, int32_t *tokens, size_t capacity, size_t *n_tokens);
/* The message of the last failing call on this session ("" when none). */
const char *mote_session_error(const mote_session *session);

/* Tokenization flags (any other bit is MOTE_ERR_INVALID_ARGUMENT). ADD_BOS: the model's BOS
 * first; WordPiece: BERT's special tokens, [CLS] first and [SEP] last (the tokenizer's bos and
 * eos ids), as Hugging Face's BERT post-processor adds them. */
#define MOTE_TOKENIZE_ADD_BOS 1u
/* The literal text of control tokens ("<|im_end|>", "<start_of_turn>") becomes those tokens
 * (the longest one at the leftmost position); byte-level BPE: user-defined ones too. Without it
 * such text is ordinary text, which is what untrusted input should get. SentencePiece always
 * matches user-defined tokens (Gemma's "\n" and whitespace runs), as llama.cpp does. */
#define MOTE_TOKENIZE_SPECIAL 2u

/* Encodes UTF-8 text into token ids. Invalid UTF-8 is never rejected as such: each byte that
 * is not part of a valid sequence is encoded as its own byte token, so detokenizing returns the
 * input bytes unchanged (a byte-level vocabulary may lack some bytes' tokens: SmolLM2 has none
 * for 0x04 0x06 0x13 0x14 0x16 0x1D 0xC0 0xC1 0xF1 0xF2 0xF5..0xFF; see MOTE_ERR_UNSUPPORTED).
 * Merging happens in place, so tokens needs room for the pieces before merging:
 * text_n + 2 entries always suffice (SentencePiece needs the pieces before merging,
 * byte-level BPE exactly text_n plus one for BOS, whatever the text). Words of any length merge
 * exactly (nothing is cut) in O(n log n), using only those entries. On
 * MOTE_ERR_BUFFER_TOO_SMALL, *n_tokens holds the capacity needed. Byte-level BPE gives the ids
 * Hugging Face tokenizers gives (SmolLM2's pre-tokenizer: digits split, then the GPT-2 regex).
 * WordPiece gives Hugging Face's ids for BERT's normalizer (the file's lowercase, strip-accents,
 * CJK and clean-text options), pre-tokenizer and "##" pieces: a word without pieces, or of more
 * than 100 code points, is [UNK]; invalid UTF-8 bytes count as U+FFFD (which clean-text drops);
 * user-defined tokens spelled in the text are always matched, control ones ("[SEP]") only with
 * MOTE_TOKENIZE_SPECIAL. text_n + 2 entries always suffice (the ids, [CLS] and [SEP]); with
 * fewer, tokens are written as far as they fit.
 * MOTE_ERR_UNSUPPORTED: the vocabulary can represent neither a code point nor its bytes (no
 * byte tokens, no <unk>; byte-level: a byte without its single-byte token), or the tokenizer
 * kind is not implemented by this build. */
mote_status mote_tokenize(const mote_model *model, const char *text, size_t text_n, uint32_t flags, int32_t *tokens,
                          size_t capacity, size_t *n_tokens);

/* A vocabulary entry's kind, numbered as GGUF numbers them. */
typedef enum mote_token_type {
  MOTE_TOKEN_NORMAL = 1,
  MOTE_TOKEN_UNKNOWN = 2,      /* <unk> */
  MOTE_TOKEN_CONTROL = 3,      /* BOS, EOS, <|im_end|>...: printed as nothing by SentencePiece */
  MOTE_TOKEN_USER_DEFINED = 4, /* matched whole in text (Gemma's "\n" and whitespace runs) */
  MOTE_TOKEN_UNUSED = 5,
  MOTE_TOKEN_BYTE = 6          /* SentencePiece's <0xAB> byte fallback */
} mote_token_type;

/* The token's kind (a mote_token_type value), or 0 for a null model or an id outside the vocabulary. */
int mote_token_type_of(const mote_model *model, int32_t token);

/* The token's piece as the vocabulary stores it (SentencePiece: with its U+2581 spaces and
 * "<0x0A>" byte names; byte-level BPE: the raw bytes), not NUL-terminated; *n_bytes gets the
 * length. MOTE_ERR_BAD_TOKEN outside the vocabulary; MOTE_ERR_BUFFER_TOO_SMALL with *n_bytes set
 * to the length when it does not fit. mote_detokenize gives the text a token prints instead. */
mote_status mote_token_text(const mote_model *model, int32_t token, char *out, size_t capacity, size_t *n_bytes);

/* The bytes that token prints after prev_token (-1 at the start). SentencePiece: byte tokens
 * become their byte, control tokens print nothing, the space that follows BOS is dropped.
 * Byte-level BPE: the token's raw bytes, always (control tokens their literal text). WordPiece,
 * as Hugging Face's WordPiece decoder joins pieces: a "##" piece continues the previous word
 * without its "##", any other (special tokens too, as their text: "[CLS]") prints " " first
 * unless prev_token is -1 or the piece is a lone . ? ! or , (Hugging Face's per-token cleanup).
 * Writes up to
 * capacity bytes (not NUL-terminated); *n_bytes gets the length. When the piece does not fit,
 * returns MOTE_ERR_BUFFER_TOO_SMALL with *n_bytes set to the capacity needed (real vocabularies'
 * pieces are a few dozen bytes; 256 covers them). */
mote_status mote_detokenize(const mote_model *model, int32_t prev_token, int32_t token, char *out, size_t capacity,
                            size_t *n_bytes);

/* Runs tokens through the model, appending them to the KV cache, batch_size tokens at a time
 * (on_progress is called after each batch). */
mote_status mote_prefill(mote_session *session, const int32_t *tokens, size_t n_tokens);
/* Appends one token and returns the logits of the next (vocab_size floats, valid until the
 * next call on this session). */
mote_status mote_decode(mote_session *session, int32_t token, const float **logits);
/* mote_prefill that also writes the logits of every position from first on: the logits after
 * tokens[first], tokens[first + 1], ..., tokens[n_tokens - 1] (each what mote_decode of that
 * token would return, bit for bit), (n_tokens - first) * vocab_size floats into out, position
 * after position. Costs one classifier product per such position (run a batch at a time).
 * first > n_tokens is MOTE_ERR_INVALID_ARGUMENT; out_n below (n_tokens - first) * vocab_size is
 * MOTE_ERR_BUFFER_TOO_SMALL (nothing runs). mote_logits is the last position's afterwards. An
 * abort (on_progress) leaves out's rows of the batches that ran written. The CUDA backend does
 * not have it (MOTE_ERR_UNSUPPORTED). */
mote_status mote_prefill_logits(mote_session *session, const int32_t *tokens, size_t n_tokens, size_t first,
                                float *out, size_t out_n);
/* The logits after the last prefilled or decoded token (null before any). */
const float *mote_logits(const mote_session *session);

/* ---- Embeddings -------------------------------------------------------------------------- */

typedef enum mote_pool {
  MOTE_POOL_MEAN = 0, /* the mean over the tokens */
  MOTE_POOL_LAST = 1, /* the last token's */
  MOTE_POOL_CLS = 2   /* the first token's (BERT's [CLS] position) */
} mote_pool;

/* Forgets the session's tokens, runs tokens (1..batch_size of the session's options) through the
 * model in one step and writes their final hidden states (after the final norm, where the model
 * has one), pooled, into out (dim floats; MOTE_ERR_BUFFER_TOO_SMALL below that). normalize != 0
 * scales the vector to unit length. Open the session with bidirectional = 1 for encoder
 * embeddings (every token sees the whole text), 0 for a decoder's causal ones. The KV cache holds
 * the tokens afterwards; there are no logits. The vectors pass through the KV cache's type: an
 * f32 cache (kv_dtype = MOTE_KV_F32, as `mote embed` opens) keeps f32's precision, the f16
 * default rounds keys and values to 11 significant bits. A NaN or inf in a pooled vector is
 * MOTE_ERR_NUMERIC (the message names the embedding and the index; out's contents are then
 * unspecified). */
mote_status mote_embed(mote_session *session, const int32_t *tokens, size_t n_tokens, mote_pool pool, int normalize,
                       float *out, size_t out_n);

/* mote_embed for n_texts texts in one step, so the weights are read once for all of them: tokens
 * holds the texts one after another, lengths[i] tokens each (every length >= 1, their sum
 * 1..batch_size of the session's options). Each text sees only its own tokens (causally in a
 * decoder session, all of them in an encoder's) and its positions start at 0, so a text's
 * embedding does not depend on the others beside it. out receives n_texts x dim floats, text
 * after text (MOTE_ERR_BUFFER_TOO_SMALL below that). Not on a model with sliding windows. */
mote_status mote_embed_batch(mote_session *session, const int32_t *tokens, const uint32_t *lengths, size_t n_texts,
                             mote_pool pool, int normalize, float *out, size_t out_n);

/* Speculative decoding in mote_generate: a drafter proposes the tokens that may follow, one
 * forward pass checks them all (reading each weight once for several tokens), and every drafted
 * token the sampler would have picked itself is kept. The sampler draws each token from the
 * target model's own logits, in order, with the same random numbers as without drafting (a
 * drafted token is kept only when the draw equals it), and the logits are bit-identical for any
 * batch size: so the text is byte for byte the text of plain decoding, greedy or sampled, for
 * the same seed; drafting changes only the speed. (For these one-hot drafters this is the
 * speculative-sampling rule: a draft d is kept with probability p(d), otherwise the token is
 * drawn from p without d.) Rejected tokens leave the cache as mote_session_truncate leaves it. */
typedef enum mote_draft_kind {
  MOTE_DRAFT_NONE = 0, /* one forward pass per token */
  /* MOTE_DRAFT_AUTO: prompt lookup, grammar fast-forward (the bytes a grammar forces, in
   * mote_generate_constrained) and the draft model (draft_session, when given), each used only
   * while its measured acceptance makes checking pay; otherwise a step decodes one token, as
   * plain decoding does. The default. */
  MOTE_DRAFT_AUTO = 1,
  /* One drafter alone, drafting whenever it has a proposal, whether or not it pays (for measuring
   * it, or where the caller knows it pays): prompt lookup (what followed the latest earlier
   * occurrence of the last tokens), or the draft model (draft_session, required). */
  MOTE_DRAFT_LOOKUP = 2,
  MOTE_DRAFT_MODEL = 3
} mote_draft_kind;

typedef struct mote_sampler_options {
  float temperature;        /* 0 = greedy (argmax) */
  int32_t top_k;            /* 0 = off */
  float top_p;              /* 1 = off */
  float min_p;              /* 0 = off */
  float repetition_penalty; /* 1 = off; applied to tokens among the last repetition_last_n */
  int32_t repetition_last_n;
  uint64_t seed;
  int32_t ignore_eos; /* 1: mote_generate samples past end tokens, passing each to on_token like any
                         other (llama.cpp's --ignore-eos; a grammar still ends at one); 0: they end it */
  mote_draft_kind draft; /* MOTE_DRAFT_AUTO by default; 0 (a zeroed struct): none */
  uint32_t draft_max;    /* drafted tokens per step at most (also capped by the session's draft_capacity); 8 */
  uint32_t draft_min;    /* a shorter draft is not checked (llama.cpp's --draft-min); 1 */
  float draft_p_min;     /* the draft model stops drafting at a token it gives less probability (among
                            the tokens it drafts from: see draft_session); 0.5 */
  /* A draft model's session (its own arena, a smaller model with the same vocabulary, e.g.
   * Qwen2.5-Coder-0.5B for 1.5B): mote_generate keeps its cache in step with this session's
   * tokens and drafts greedily with it. Null: none. Another vocabulary is refused in one line.
   * While it drafts, its classifier computes only its first 16384 token ids and the tokens in its
   * cache (the text does not change: every draft is checked with the whole classifier); after
   * the call it classifies in full again and has no logits until it runs a token. */
  mote_session *draft_session;
} mote_sampler_options;

mote_sampler_options mote_sampler_options_default(void);

/* Checks every option's range (what mote_sample and mote_generate accept); on failure writes
 * a one-line reason ("top-p must be in (0, 1]"). */
mote_status mote_sampler_options_validate(const mote_sampler_options *options, char *err, size_t err_n);

/* Seeds the session's random number generator (mote_generate does this itself). */
mote_status mote_sampler_seed(mote_session *session, uint64_t seed);
/* Picks the next token from the current logits (which it modifies in place). A NaN or inf
 * logit is MOTE_ERR_NUMERIC (never a token): the message names the logit and the position. */
mote_status mote_sample(mote_session *session, const mote_sampler_options *options, int32_t *token);

/* Called once per generated token; return non-zero to stop. It runs inside mote_generate: a call
 * on the same session from it returns MOTE_ERR_BUSY (the getters answer). */
typedef int (*mote_on_token)(void *user, int32_t token, const char *piece, size_t piece_n);

/* 1 when token ends generation (EOS, BOS, or another control token such as ChatML's <|im_end|>):
 * the tokens at which mote_generate stops; 0 otherwise (and for ids outside the vocabulary). */
int mote_token_ends_generation(const mote_model *model, int32_t token);

/* Prefills prompt tokens, then samples and decodes up to max_new_tokens, calling on_token for
 * each; stops early at a control token (EOS, BOS, ChatML's <|im_end|>: the stop token is not
 * passed to on_token nor decoded into the cache), when the callback asks, or when
 * the context is full (reported as MOTE_ERR_CONTEXT_FULL after the tokens that fit). A NaN or inf
 * logit stops it with MOTE_ERR_NUMERIC, naming the generation step and the position.
 * *n_generated (may be null) receives the number of tokens produced. */
mote_status mote_generate(mote_session *session, const int32_t *prompt, size_t n_prompt, uint32_t max_new_tokens,
                          const mote_sampler_options *options, mote_on_token on_token, void *user,
                          uint32_t *n_generated);

/* 1 when draft can draft for target (mote_sampler_options.draft_session): the same vocabulary,
 * every token's bytes and kind; 0 otherwise (or for a null model). */
int mote_models_share_vocabulary(const mote_model *target, const mote_model *draft);

/* What the last mote_generate (or mote_generate_constrained) on the session did: tokens passed
 * to on_token, forward passes of the model it took, drafted tokens checked and kept. Plain
 * decoding takes one pass per token; generated / passes is the mean tokens per pass. */
typedef struct mote_generate_stats {
  uint64_t generated;
  uint64_t passes;
  uint64_t drafted;
  uint64_t accepted;
} mote_generation_stats;
/* MOTE_ERR_INVALID_ARGUMENT for a null session or stats; MOTE_ERR_BUSY inside a call on it. */
mote_status mote_generate_stats(const mote_session *session, mote_generation_stats *stats);

/* ---- Chat ------------------------------------------------------------------------------ */

/* The conversation format a model was trained with (recorded in the model file). */
typedef enum mote_chat_template {
  MOTE_CHAT_NONE = 0,
  MOTE_CHAT_CHATML = 1,      /* <|im_start|>role\n...<|im_end|>\n (SmolLM2) */
  MOTE_CHAT_LLAMA2 = 2,      /* <s>[INST] ... [/INST] ... </s> */
  MOTE_CHAT_CHATML_QWEN = 3, /* ChatML, Qwen2.5's default system message when none is given */
  MOTE_CHAT_GEMMA = 4,       /* <bos><start_of_turn>user\n...<end_of_turn>\n, assistant = "model" */
  MOTE_CHAT_LLAMA3 = 5,      /* <|begin_of_text|><|start_header_id|>role<|end_header_id|>\n\n...<|eot_id|> */
  MOTE_CHAT_PHI3 = 6,        /* <|user|>\n...<|end|>\n */
  MOTE_CHAT_LLAMA3_DATED = 7 /* Llama 3.1-3.3: LLAMA3 with a system block "Cutting Knowledge Date: ..." */
} mote_chat_template;

/* A template's name ("chatml", "gemma", "llama3"), or null outside the enum. */
const char *mote_chat_template_name(mote_chat_template chat_template);

typedef enum mote_chat_role { MOTE_ROLE_SYSTEM = 0, MOTE_ROLE_USER = 1, MOTE_ROLE_ASSISTANT = 2 } mote_chat_role;

typedef struct mote_chat_message {
  mote_chat_role role;
  const char *content; /* UTF-8; never parsed for special tokens */
  size_t content_n;
} mote_chat_message;

/* Chat tokenization flags (any other bit is MOTE_ERR_INVALID_ARGUMENT). */
#define MOTE_CHAT_ADD_ASSISTANT_PROMPT 1u
/* The messages continue a conversation already in the KV cache: nothing that opens one is added
 * (BOS, Qwen2.5's default system message, Llama 3.1's dated system block). */
#define MOTE_CHAT_CONTINUE 2u

/* Tokenizes messages through the model's chat template, then (MOTE_CHAT_ADD_ASSISTANT_PROMPT)
 * the tokens that open the assistant's reply. Special tokens come only from the template.
 * For a multi-turn session that keeps its KV cache, pass only the new messages each turn,
 * after closing the previous reply with mote_chat_end_of_turn. On MOTE_ERR_BUFFER_TOO_SMALL,
 * *n_tokens holds the capacity needed. MOTE_ERR_UNSUPPORTED: the model has no chat template
 * (or its template tokens are missing). */
mote_status mote_chat_tokenize(const mote_model *model, const mote_chat_message *messages, size_t n_messages,
                               uint32_t flags, int32_t *tokens, size_t capacity, size_t *n_tokens);

/* The tokens that close an assistant reply already in the KV cache (ChatML: <|im_end|> and
 * a newline). The first one is the token that ends a reply: mote_generate stops at it. */
mote_status mote_chat_end_of_turn(const mote_model *model, int32_t *tokens, size_t capacity, size_t *n_tokens);

/* ---- Grammar ---------------------------------------------------------------------------- */

/* Constrained output: a GBNF grammar (llama.cpp's format: rules `name ::= ...`, alternatives |,
 * groups ( ), repetition * + ? {m} {m,} {m,n}, character classes [a-z] [^"\\] with escapes
 * \x.. \u.... \U........ \t \n \r, string literals, `.` for any character, rule references,
 * # comments, and a rule named root) compiled into a caller's arena, no heap:
 *
 *   size_t n = 0;  mote_grammar_arena_size(text, text_n, &n, err, sizeof err);
 *   mote_grammar_init(&grammar, &model, text, text_n, arena, n, err, sizeof err);
 *   mote_generate_constrained(&session, prompt, n_prompt, 256, &options, &grammar, on_token, 0, 0);
 *
 * The grammar matches UTF-8 bytes (a token may end inside a character); invalid UTF-8 (overlong
 * forms, surrogates, code points above U+10FFFF, stray bytes) is no character and never matches.
 * A grammar is mutable state, like a session: one call at a time; it may be reset and used again.
 * Bounds keep hostile grammars finite (each exceeded one is MOTE_ERR_GRAMMAR with a one-line
 * message, never a crash or a hang): 262,144 compiled elements (repetition {m,n} is expanded),
 * groups nested 128 deep, 8,192 words of stacks while matching (deeply nested text, e.g. JSON,
 * runs out there), 8,192 rule expansions a character, and 2^27 matcher steps (stack words moved,
 * about a second) to check the vocabulary for one sampled token. Left recursion (a ::= a "x") is
 * refused at compile time, as llama.cpp does. */
typedef struct mote_grammar {
  void *impl_; /* lives at the start of the grammar's arena */
} mote_grammar;

/* The exact arena bytes mote_grammar_init needs for text (64-byte aligned arena). Checks the
 * syntax (MOTE_ERR_GRAMMAR with the line); mote_grammar_init checks the rest. */
mote_status mote_grammar_arena_size(const char *text, size_t text_n, size_t *bytes, char *err, size_t err_n);

/* Compiles text into arena and resets the matcher. MOTE_ERR_GRAMMAR, with one line in err, for a
 * syntax error, an undefined or twice-defined rule, no root rule, left recursion, or a grammar
 * that allows nothing (root can never complete). model: the vocabulary whose tokens the grammar
 * masks (its bytes must stay mapped while the grammar is used); null for a grammar that only
 * matches bytes (mote_grammar_accept_bytes). The text is not needed afterwards. */
mote_status mote_grammar_init(mote_grammar *grammar, const mote_model *model, const char *text, size_t text_n,
                              void *arena, size_t arena_n, char *err, size_t err_n);

/* Forgets every accepted byte. */
mote_status mote_grammar_reset(mote_grammar *grammar);

/* Accepts bytes, all or nothing: MOTE_ERR_GRAMMAR when they cannot continue the grammar (the
 * grammar is unchanged). */
mote_status mote_grammar_accept_bytes(mote_grammar *grammar, const char *bytes, size_t n, char *err, size_t err_n);

/* Accepts the bytes token prints after prev_token (-1 at the start); a token that ends
 * generation is accepted only when the grammar is complete (and changes nothing). Needs a
 * grammar compiled with a model: MOTE_ERR_INVALID_ARGUMENT otherwise. */
mote_status mote_grammar_accept_token(mote_grammar *grammar, int32_t prev_token, int32_t token, char *err,
                                      size_t err_n);

/* mote_grammar_state's bits. */
#define MOTE_GRAMMAR_COMPLETE 1u     /* the bytes accepted so far are a whole sentence of the grammar */
#define MOTE_GRAMMAR_CAN_CONTINUE 2u /* some byte may still follow */
/* MOTE_GRAMMAR_* bits of the grammar's state (0 for a null or uninitialized grammar). */
uint32_t mote_grammar_state(const mote_grammar *grammar);

/* mote_sample with every token that cannot continue the grammar masked (its logit set to -inf;
 * a token that ends generation is allowed only when the grammar is complete), then accepts the
 * token into the grammar (a token that ends generation is not accepted: nothing follows it).
 * Greedy and top-k sampling check tokens in order of logit until they have the one or k they
 * need (1,024 at most); otherwise every token is checked, in byte order so that tokens sharing a
 * prefix share its work. The grammar must have been compiled with the session's model.
 * MOTE_ERR_GRAMMAR when no token can continue it or the check needs more than its steps. */
mote_status mote_sample_grammar(mote_session *session, const mote_sampler_options *options, mote_grammar *grammar,
                                int32_t *token);

/* mote_generate through mote_sample_grammar: also stops once the grammar is complete and can take
 * no more bytes (an end token sampled when it is complete stops it as in mote_generate).
 * grammar null: mote_generate. The grammar continues from its current state (reset it first
 * for a new reply). */
mote_status mote_generate_constrained(mote_session *session, const int32_t *prompt, size_t n_prompt,
                                      uint32_t max_new_tokens, const mote_sampler_options *options,
                                      mote_grammar *grammar, mote_on_token on_token, void *user,
                                      uint32_t *n_generated);

/* Translates a JSON schema into a GBNF grammar (NUL-terminated) in out: objects with properties
 * (in the schema's order; the ones in "required" always present, the others optional), arrays
 * (items, minItems, maxItems), strings (minLength, maxLength), numbers, integers, booleans, null,
 * enum, const, anyOf/oneOf, type lists, nesting, and $ref to "#/definitions/NAME" or
 * "#/$defs/NAME". An empty schema {} is any JSON value. The output is compact JSON with optional
 * whitespace between tokens. *written (may be null) gets the bytes the grammar needs (without the
 * NUL): on MOTE_ERR_BUFFER_TOO_SMALL that is the capacity to retry with, plus one. The schema
 * parser is bounded: nesting 64 deep, 1,024 properties an object, 128 definitions. Annotations
 * (title, description, default, examples, $comment, $schema, $id, ...) are accepted; a keyword the
 * output could violate and mote cannot honour (pattern, format, minimum, allOf, uniqueItems, ...),
 * a malformed schema, a $ref loop, or a grammar past the compiler's bounds is MOTE_ERR_GRAMMAR with
 * one line in err naming the keyword and where it is ("JSON schema: keyword "pattern" is not
 * supported (at /properties/name)"). A grammar it returns compiles. */
mote_status mote_grammar_from_json_schema(const char *schema, size_t schema_n, char *out, size_t capacity,
                                          size_t *written, char *err, size_t err_n);

#ifdef __cplusplus
}
#endif

#endif /* MOTE_MOTE_H */
