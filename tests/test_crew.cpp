// The crew (runtime/src/model/parallel.hpp) on a model large enough for its helper threads to
// start: the unit tests' other models are below its thresholds (a pass starts threads only when
// its largest step has kMinPassWork multiply-adds, a prefill pass only at kMinPrefillWork in all,
// and a step is shared only from kMinParallelWork), so a claim that ran past a step's end, or one
// chunk too many, went unseen by every test but the SmolLM2 ones. Here a synthetic Llama (dim
// 512, 2 layers, FFN 1024), built in memory from seeded random weights, must give bit-identical
// logits for 1, 2 and 4 threads over a 24-token prefill and 20 decoding steps (DESIGN.md
// invariant 6), in f16 and in q8_0 (interleaved x8 rows).
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "loader_support.hpp"
#include "model/parallel.hpp"
#include "quant/dequant.hpp"
#include "test_support.hpp"

namespace {

using mote::convert::ModelData;
using mote::format::DType;

constexpr int64_t kDim = 512, kLayers = 2, kHeads = 8, kKvHeads = 4, kHeadDim = 64, kFfn = 1024, kContext = 64;
constexpr size_t kPrompt = 24, kSteps = 20;
const int64_t kVocab = static_cast<int64_t>(mote_loader_test::kVocab);  // the loader tests' tokenizer

// Multiply-adds of the passes (forward.cpp's accounting, attention aside): one decoded token's
// largest step, and a whole prefill pass over the prompt.
constexpr size_t kLargestDecodeStep = kFfn * kDim;
constexpr size_t kPrefillWork = kPrompt * kLayers * kDim * (2 * kHeads * kHeadDim + 2 * kKvHeads * kHeadDim + 3 * kFfn);
static_assert(kLargestDecodeStep >= mote::kMinPassWork, "decoding would never start the helpers");
static_assert(kPrefillWork >= mote::kMinPrefillWork, "the prefill pass would run on one thread");
static_assert(kKvHeads * kHeadDim * kDim >= mote::kMinParallelWork, "the smallest product would not be shared");

// Every tensor of the config from seeded uniform values (norms near 1), stored as dtype.
ModelData synthetic_model(DType dtype) {
  ModelData m;
  m.config = mote::convert::llama_config({kDim, kLayers, kHeads, kKvHeads, kHeadDim, kFfn, kVocab, kContext});
  m.config.flags = 0;  // an untied classifier: one more large product
  m.tokenizer = mote_loader_test::valid_model_data().tokenizer;
  m.config.bos_id = m.tokenizer.bos_id;
  m.config.eos_id = m.tokenizer.eos_id;
  std::mt19937 rng(20261203);
  std::uniform_real_distribution<float> weight(-0.06f, 0.06f), norm(0.8f, 1.2f);
  for (const mote::convert::TensorSlot &slot : mote::convert::tensor_slots(m.config)) {
    const bool vector = slot.cols == 0;
    std::vector<float> values(slot.rows * (vector ? 1 : slot.cols));
    for (float &v : values) v = vector ? norm(rng) : weight(rng);
    const uint32_t f32 = static_cast<uint32_t>(mote::convert::GgmlType::f32);
    std::string error;
    REQUIRE_MESSAGE(mote::convert::add_tensor(slot, {reinterpret_cast<const uint8_t *>(values.data()), f32}, dtype,
                                              mote::convert::BlockLayout::interleaved, &m, &error),
                    error);
  }
  return m;
}

// The logits after the prefill and after each decoding step (greedy), concatenated.
std::vector<float> logits_with(const mote_model &model, uint32_t threads) {
  mote_session_options options = mote_session_options_default();
  options.n_threads = threads;
  options.batch_size = kPrompt;  // the prompt in one pass
  options.context_length = kContext;
  auto s = mote_test::open_session(model, options);
  std::vector<int32_t> prompt(kPrompt);
  for (size_t i = 0; i < kPrompt; ++i) prompt[i] = static_cast<int32_t>((37 * i + 5) % kVocab);
  REQUIRE(mote_prefill(&s->session, prompt.data(), prompt.size()) == MOTE_OK);
  const float *logits = mote_logits(&s->session);
  REQUIRE(logits != nullptr);
  std::vector<float> all(logits, logits + kVocab);
  for (size_t step = 0; step < kSteps; ++step) {
    int32_t next = 0;
    for (int32_t i = 1; i < kVocab; ++i) next = logits[i] > logits[next] ? i : next;
    REQUIRE(mote_decode(&s->session, next, &logits) == MOTE_OK);
    all.insert(all.end(), logits, logits + kVocab);
  }
  return all;
}

}  // namespace

TEST_CASE("crew: a model large enough for helper threads gives bit-identical logits for 1, 2 and 4 threads") {
  for (const DType dtype : {DType::f16, DType::q8_0}) {
    CAPTURE(static_cast<int>(dtype));
    const ModelData data = synthetic_model(dtype);
    const mote_test::AlignedBuffer bytes = mote_test::AlignedBuffer::copy_of(mote::convert::serialize(data));
    mote_model model{};
    char message[256] = "";
    REQUIRE_MESSAGE(mote_model_open(bytes.data.get(), bytes.size, &model, message, sizeof message) == MOTE_OK, message);
    const std::vector<float> one = logits_with(model, 1);
    float largest = 0.0f;
    for (float x : one) {
      REQUIRE(std::isfinite(x));
      largest = std::fabs(x) > largest ? std::fabs(x) : largest;
    }
    CHECK(largest > 1e-3f);  // logits that carry the weights, not a degenerate zero model
    for (const uint32_t threads : {2u, 4u}) {
      CAPTURE(threads);
      const std::vector<float> many = logits_with(model, threads);
      REQUIRE(many.size() == one.size());
      size_t first_difference = one.size();
      for (size_t i = 0; i < one.size() && first_difference == one.size(); ++i) {
        if (std::memcmp(&one[i], &many[i], sizeof(float)) != 0) first_difference = i;
      }
      INFO("first difference at step " << first_difference / kVocab << ", logit " << first_difference % kVocab);
      CHECK(first_difference == one.size());
    }
  }
}
