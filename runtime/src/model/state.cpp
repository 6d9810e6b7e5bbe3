// Rewinding a session and saving / restoring its whole state (models/FORMAT.md, "Session
// state"): header, token history, last logits and the KV rows [0, position) of every layer.
#include "model/state.hpp"

#include <cstring>

#include "format/format.hpp"

namespace mote {

namespace {

constexpr uint8_t kStateMagic[4] = {'M', 'O', 'T', 'S'};
// Version 2 records the attention mode (flag bit 1); a version 1 state may hold rows of either.
constexpr uint32_t kStateVersion = 3;  // 3: the cache head-major (2026-12-07)
constexpr uint32_t kHeaderSize = MOTE_SESSION_STATE_HEADER_SIZE;
constexpr size_t kChecksumOffset = 16;  // the checksum covers [kChecksummedFrom, total size)
constexpr size_t kChecksummedFrom = 24;
constexpr uint32_t kFlagLogits = 1u;         // the last logits are valid
constexpr uint32_t kFlagBidirectional = 2u;  // saved from a session whose tokens see the whole batch

// What the header holds, host-side.
struct StateHeader {
  uint64_t checksum, model_checksum, total_size;
  uint32_t n_layers, kv_dim, context_length, kv_dtype, backend, position, vocab_size, flags;
  uint64_t rng_state, rng_increment;
};

void put_u32(uint8_t *p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}
void put_u64(uint8_t *p, uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}
uint32_t get_u32(const uint8_t *p) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}
uint64_t get_u64(const uint8_t *p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

uint64_t padded(uint64_t n) { return (n + 7) / 8 * 8; }

// The file checksum of the open model (its header, validated by the reader, at offset 0).
uint64_t model_checksum(const Session &s) {
  return get_u64(s.model.view.bytes + offsetof(format::FileHeader, payload_checksum));
}

uint32_t kv_dim_of(const Session &s) { return s.model.view.config.n_kv_heads * s.model.view.config.head_dim; }

// The sections after the header, in order: one (source, bytes) run each, every run padded to 8.
// Visits history, logits, then per layer and key/value head (the cache's head-major order,
// forward.cpp's LayerCache) its keys, values, key scales, value scales.
template <typename Visit>
void for_each_section(const Session &s, uint32_t position, Visit visit) {
  const format::ModelConfig &c = s.model.view.config;
  visit(reinterpret_cast<uint8_t *>(s.history), uint64_t{position} * sizeof(int32_t));
  visit(reinterpret_cast<uint8_t *>(s.state.logits), uint64_t{c.vocab_size} * sizeof(float));
  const uint64_t row_bytes = uint64_t{c.head_dim} * s.cache.type->element_bytes;
  const uint64_t scale_stride = s.cache.type->block_scales ? s.cache.blocks_per_head : 0;  // a head's, a position
  for (uint64_t head = 0; head < uint64_t{c.n_layers} * c.n_kv_heads; ++head) {
    const uint64_t base = head * s.context_length;  // in positions
    visit(static_cast<uint8_t *>(s.cache.keys) + base * row_bytes, position * row_bytes);
    visit(static_cast<uint8_t *>(s.cache.values) + base * row_bytes, position * row_bytes);
    if (scale_stride > 0) {
      const uint64_t scale_base = base * scale_stride;
      visit(reinterpret_cast<uint8_t *>(s.cache.key_scales + scale_base), position * scale_stride * sizeof(float));
      visit(reinterpret_cast<uint8_t *>(s.cache.value_scales + scale_base), position * scale_stride * sizeof(float));
    }
  }
}

uint64_t state_bytes(const Session &s, uint32_t position) {
  uint64_t total = kHeaderSize;
  for_each_section(s, position, [&](uint8_t *, uint64_t n) { total += padded(n); });
  return total;
}

void write_header(uint8_t *out, const StateHeader &h) {
  std::memset(out, 0, kHeaderSize);
  std::memcpy(out, kStateMagic, 4);
  put_u32(out + 4, kStateVersion);
  put_u32(out + 8, kHeaderSize);
  put_u64(out + kChecksumOffset, h.checksum);
  put_u64(out + 24, h.model_checksum);
  put_u64(out + 32, h.total_size);
  const uint32_t fields[] = {h.n_layers, h.kv_dim,   h.context_length, h.kv_dtype,
                             h.backend,  h.position, h.vocab_size,     h.flags};
  for (size_t i = 0; i < sizeof fields / sizeof fields[0]; ++i) put_u32(out + 40 + 4 * i, fields[i]);
  put_u64(out + 72, h.rng_state);
  put_u64(out + 80, h.rng_increment);
}

StateHeader read_header(const uint8_t *in) {
  StateHeader h{};
  h.checksum = get_u64(in + kChecksumOffset);
  h.model_checksum = get_u64(in + 24);
  h.total_size = get_u64(in + 32);
  uint32_t *fields[] = {&h.n_layers, &h.kv_dim,   &h.context_length, &h.kv_dtype,
                        &h.backend,  &h.position, &h.vocab_size,     &h.flags};
  for (size_t i = 0; i < sizeof fields / sizeof fields[0]; ++i) *fields[i] = get_u32(in + 40 + 4 * i);
  h.rng_state = get_u64(in + 72);
  h.rng_increment = get_u64(in + 80);
  return h;
}

// The session's own header (what a state saved from it now says).
StateHeader header_of(const Session &s) {
  const format::ModelConfig &c = s.model.view.config;
  StateHeader h{};
  h.model_checksum = model_checksum(s);
  h.total_size = state_bytes(s, s.position);
  h.n_layers = c.n_layers;
  h.kv_dim = kv_dim_of(s);
  h.context_length = s.context_length;
  h.kv_dtype = s.cache.type->dtype;
  h.backend = MOTE_BACKEND_CPU;
  h.position = s.position;
  h.vocab_size = c.vocab_size;
  h.flags = (s.has_logits ? kFlagLogits : 0) | (s.causal ? 0 : kFlagBidirectional);
  h.rng_state = s.rng.state;
  h.rng_increment = s.rng.increment;
  return h;
}

const char *kv_name(uint32_t dtype) {
  const KvType *type = kv_type(dtype);
  return type != nullptr ? type->name : "unknown";
}

bool on_cpu(const Session &s) { return s.backend == find_backend(MOTE_BACKEND_CPU); }

Status refuse_other_backend(const Session &s, ErrorSink err) {
  return fail(err, MOTE_ERR_UNSUPPORTED,
              "session state is saved and restored on the CPU backend only (this session: %s)", s.backend->name);
}

const char *attention_name(bool bidirectional) { return bidirectional ? "bidirectional" : "causal"; }

// What makes bytes a state of this build at all: not empty, the magic (checked on what there is,
// so a short text file is not a "truncated" state), the whole header, its version and sizes.
Status check_identity(const uint8_t *in, size_t size, ErrorSink err) {
  if (size == 0) return fail(err, MOTE_ERR_INVALID_ARGUMENT, "session state is empty (0 bytes)");
  if (in == nullptr) return fail(err, MOTE_ERR_INVALID_ARGUMENT, "session state buffer is null");
  if (std::memcmp(in, kStateMagic, size < 4 ? size : 4) != 0)
    return fail(err, MOTE_ERR_INVALID_ARGUMENT, "not a mote session state (bad magic)");
  if (size < kHeaderSize) {
    return fail(err, MOTE_ERR_INVALID_ARGUMENT, "session state is truncated: %llu bytes, its header alone is %u",
                static_cast<unsigned long long>(size), static_cast<unsigned>(kHeaderSize));
  }
  if (get_u32(in + 4) != kStateVersion) {
    return fail(err, MOTE_ERR_UNSUPPORTED, "session state version %u; this build reads version %u",
                static_cast<unsigned>(get_u32(in + 4)), static_cast<unsigned>(kStateVersion));
  }
  if (get_u32(in + 8) != kHeaderSize) {
    return fail(err, MOTE_ERR_INVALID_ARGUMENT, "session state header size %u is not %u",
                static_cast<unsigned>(get_u32(in + 8)), static_cast<unsigned>(kHeaderSize));
  }
  if (get_u32(in + 12) != 0) return fail(err, MOTE_ERR_INVALID_ARGUMENT, "session state's reserved word is not 0");
  const uint64_t total = read_header(in).total_size;
  if (total < kHeaderSize || total % 8 != 0) {
    return fail(err, MOTE_ERR_INVALID_ARGUMENT, "session state's size field says %llu bytes, %s: it is corrupt",
                static_cast<unsigned long long>(total),
                total < kHeaderSize ? "less than its header" : "not a multiple of 8");
  }
  return MOTE_OK;
}

// The header against the session: the same model, shape and attention, a position within the
// context and the size that position needs (so never more than the session can hold).
Status check_header(const Session &s, const StateHeader &h, ErrorSink err) {
  const StateHeader own = header_of(s);
  if (h.model_checksum != own.model_checksum) {
    return fail(err, MOTE_ERR_INVALID_ARGUMENT,
                "session state is from another model (checksum %016llx; this model's is %016llx)",
                static_cast<unsigned long long>(h.model_checksum), static_cast<unsigned long long>(own.model_checksum));
  }
  if (h.n_layers != own.n_layers || h.kv_dim != own.kv_dim || h.vocab_size != own.vocab_size) {
    return fail(
        err, MOTE_ERR_INVALID_ARGUMENT, "session state's shape (%u layers, KV width %u, vocab %u) is not this model's",
        static_cast<unsigned>(h.n_layers), static_cast<unsigned>(h.kv_dim), static_cast<unsigned>(h.vocab_size));
  }
  if (h.context_length != own.context_length) {
    return fail(err, MOTE_ERR_INVALID_ARGUMENT, "session state's context length %u is not this session's %u",
                static_cast<unsigned>(h.context_length), static_cast<unsigned>(own.context_length));
  }
  if (h.kv_dtype != own.kv_dtype) {
    return fail(err, MOTE_ERR_INVALID_ARGUMENT, "session state's KV cache is %s; this session's is %s",
                kv_name(h.kv_dtype), kv_name(own.kv_dtype));
  }
  if (h.backend != own.backend) {
    return fail(err, MOTE_ERR_INVALID_ARGUMENT, "session state is from backend %u; this session runs on the CPU",
                static_cast<unsigned>(h.backend));
  }
  if ((h.flags & ~(kFlagLogits | kFlagBidirectional)) != 0) {
    return fail(err, MOTE_ERR_INVALID_ARGUMENT, "session state has unknown flags 0x%x",
                static_cast<unsigned>(h.flags & ~(kFlagLogits | kFlagBidirectional)));
  }
  // Rows of one attention mode continued under the other are rows no pass of it makes.
  const bool bidirectional = (h.flags & kFlagBidirectional) != 0;
  if (bidirectional != ((own.flags & kFlagBidirectional) != 0)) {
    return fail(err, MOTE_ERR_INVALID_ARGUMENT, "session state is from a %s session; this one is %s",
                attention_name(bidirectional), attention_name(!bidirectional));
  }
  if (h.position > own.context_length) {
    return fail(err, MOTE_ERR_INVALID_ARGUMENT, "session state's position %u is beyond the context of %u",
                static_cast<unsigned>(h.position), static_cast<unsigned>(own.context_length));
  }
  const uint64_t needed = state_bytes(s, h.position);
  if (h.total_size != needed) {
    return fail(err, MOTE_ERR_INVALID_ARGUMENT,
                "session state's size field says %llu bytes; its position %u needs %llu",
                static_cast<unsigned long long>(h.total_size), static_cast<unsigned>(h.position),
                static_cast<unsigned long long>(needed));
  }
  return MOTE_OK;
}

// Every check a state must pass before it may replace the session's: what it is, its size
// against the bytes there, the checksum, the header against the session and the tokens. The
// checksum comes before the header's fields so that a corrupt state is called corrupt. Touches
// nothing.
Status check_state(const Session &s, const uint8_t *in, size_t size, ErrorSink err) {
  Status status = check_identity(in, size, err);
  if (status != MOTE_OK) return status;
  const StateHeader h = read_header(in);
  if (h.total_size > size) {
    return fail(err, MOTE_ERR_INVALID_ARGUMENT, "session state is truncated: %llu bytes of the %llu its header says",
                static_cast<unsigned long long>(size), static_cast<unsigned long long>(h.total_size));
  }
  const uint64_t checksum = format::payload_checksum(in + kChecksummedFrom, h.total_size - kChecksummedFrom);
  if (checksum != h.checksum) {
    return fail(err, MOTE_ERR_INVALID_ARGUMENT,
                "session state checksum mismatch (%016llx, header says %016llx): it is corrupt",
                static_cast<unsigned long long>(checksum), static_cast<unsigned long long>(h.checksum));
  }
  status = check_header(s, h, err);
  if (status != MOTE_OK) return status;
  for (uint32_t i = 0; i < h.position; ++i) {
    const uint32_t token = get_u32(in + kHeaderSize + 4 * i);
    if (token >= h.vocab_size) {
      return fail(err, MOTE_ERR_BAD_TOKEN, "session state's token %u at position %u is outside the vocabulary of %u",
                  static_cast<unsigned>(token), static_cast<unsigned>(i), static_cast<unsigned>(h.vocab_size));
    }
  }
  return MOTE_OK;
}

}  // namespace

Status truncate_session(Session &s, uint32_t n_tokens, ErrorSink err) {
  if (n_tokens > s.position) {
    return fail(err, MOTE_ERR_INVALID_ARGUMENT, "cannot truncate to %u tokens: the session holds %u",
                static_cast<unsigned>(n_tokens), static_cast<unsigned>(s.position));
  }
  // The cache is indexed by position: rows past n are simply overwritten by the next tokens.
  s.position = n_tokens;
  s.has_logits = false;
  return MOTE_OK;
}

size_t state_size(const Session &s) {
  if (!on_cpu(s)) return 0;
  const uint64_t n = state_bytes(s, s.position);
  return n > SIZE_MAX ? 0 : static_cast<size_t>(n);
}

// The host is little-endian (the model's weights are used in place, FORMAT.md), so the history,
// logits and cache rows are copied as they lie in memory.
Status save_state(const Session &s, void *buffer, size_t size, size_t *written, ErrorSink err) {
  if (written != nullptr) *written = 0;
  if (!on_cpu(s)) return refuse_other_backend(s, err);
  StateHeader h = header_of(s);
  if (buffer == nullptr || size < h.total_size) {
    if (written != nullptr) *written = static_cast<size_t>(h.total_size);
    return fail(err, MOTE_ERR_BUFFER_TOO_SMALL, "session state needs %llu bytes; the buffer has %llu",
                static_cast<unsigned long long>(h.total_size),
                static_cast<unsigned long long>(buffer == nullptr ? 0 : size));
  }
  uint8_t *out = static_cast<uint8_t *>(buffer);
  uint8_t *at = out + kHeaderSize;
  for_each_section(s, s.position, [&](uint8_t *section, uint64_t n) {
    if (n > 0) std::memcpy(at, section, n);
    std::memset(at + n, 0, padded(n) - n);
    at += padded(n);
  });
  write_header(out, h);
  h.checksum = format::payload_checksum(out + kChecksummedFrom, h.total_size - kChecksummedFrom);
  put_u64(out + kChecksumOffset, h.checksum);
  if (written != nullptr) *written = static_cast<size_t>(h.total_size);
  return MOTE_OK;
}

Status check_state_header(const Session &s, const void *buffer, size_t size, uint64_t *total_size, ErrorSink err) {
  *total_size = 0;
  if (!on_cpu(s)) return refuse_other_backend(s, err);
  const uint8_t *in = static_cast<const uint8_t *>(buffer);
  Status status = check_identity(in, size, err);
  if (status == MOTE_OK) status = check_header(s, read_header(in), err);
  if (status == MOTE_OK) *total_size = read_header(in).total_size;
  return status;
}

Status load_state(Session &s, const void *buffer, size_t size, ErrorSink err) {
  if (!on_cpu(s)) return refuse_other_backend(s, err);
  const uint8_t *in = static_cast<const uint8_t *>(buffer);
  const Status status = check_state(s, in, size, err);
  if (status != MOTE_OK) return status;
  const StateHeader h = read_header(in);
  const uint8_t *at = in + kHeaderSize;
  for_each_section(s, h.position, [&](uint8_t *section, uint64_t n) {
    if (n > 0) std::memcpy(section, at, n);
    at += padded(n);
  });
  s.position = h.position;
  s.has_logits = (h.flags & kFlagLogits) != 0;
  s.rng.state = h.rng_state;
  s.rng.increment = h.rng_increment;
  return MOTE_OK;
}

}  // namespace mote
