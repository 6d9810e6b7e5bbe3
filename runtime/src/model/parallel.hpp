// The threads of one forward pass. The calling thread leads the pass from top to bottom; when
// it reaches a step worth sharing (a matrix product, the attention heads) it publishes the step
// and every thread, the leader included, claims runs of its chunks from one shared counter
// until none are left (guided: each run a share of what is left, down to single chunks).
// Nobody waits for a thread that has not started: on a busy machine a descheduled helper
// simply takes no chunks, and the leader finishes the step alone, instead of the whole pass
// stalling at a barrier for it (hundreds of barriers a token made -t 2 collapse under load).
// The leader waits only for chunks already claimed, so chunks are kept small.
//
// When another process takes a core, a helper can still be descheduled holding a chunk, and
// the leader then waits a time slice for it. So the crew also times its decoding passes (one
// token each, alike from one to the next): every kProbeEvery passes it runs one pass the other
// way (on the leader alone, or with helpers; less often while probes keep losing), and keeps
// whichever was faster. On an idle machine
// that keeps the threads; under load, or for a model too small to share, it falls back to one
// thread instead of decoding slower than one thread would. Prefill passes (many tokens, few
// passes: too few to probe) always share their steps.
//
// Each chunk is computed by exactly one thread with the same code whoever runs it, so results
// do not depend on the number of threads (DESIGN.md invariant 6). One OpenMP parallel region
// spans the pass; between steps the helpers spin on the counter with a pause hint (no OS calls
// in runtime/), and between passes OpenMP's own spin-then-sleep policy parks them.
#pragma once

#include <cstddef>
#include <cstdint>

#if defined(MOTE_OPENMP)
#include <atomic>
#endif

namespace mote {

// Multiply-accumulates below which a step runs on the leader alone (for less, handing it out and
// moving its data between cores cost more than the second core gives), the largest step below
// which a pass starts no threads at all (tiny models), and roughly the work of one chunk.
constexpr size_t kMinParallelWork = 64 * 1024;
constexpr size_t kMinPassWork = 256 * 1024;
// Prefill passes (one per prompt: nothing to amortize over, nothing to probe) start threads only
// for at least this much work in all: waking a parked helper, or creating it on the first pass,
// costs tens of microseconds on a bare machine and up to milliseconds in a VM whose idle vCPU
// the host has descheduled, and the pass waits for it at the end (bench/README.md, "Tuning decisions").
constexpr size_t kMinPrefillWork = 64u << 20;
constexpr size_t kChunkWork = 24 * 1024;
// A prefill chunk holds at least this many bytes of weight rows: each thread then streams long
// runs of its own rows. (Chunks of kChunkWork are a kernel tile's dozen rows there, alternating
// between the threads, and a tile's prefetch past its chunk's end fetches rows the other thread
// computes: bench/README.md, "Tuning decisions".)
constexpr size_t kPrefillChunkBytes = 128 * 1024;
// One decoding pass in this many runs the other way (serial or parallel) to see which is
// faster now; each probe that loses doubles the interval (a parallel probe on a busy machine
// is a slow pass), up to kProbeEveryMax.
constexpr uint32_t kProbeEvery = 32;
constexpr uint32_t kProbeEveryMax = 512;

class Crew {
 public:
  // Runs fn(i) for i in [0, n), each i once; work is the multiply-accumulates of the whole step.
  template <class Fn>
  void parallel_for(size_t n, size_t work, Fn &&fn) {
#if defined(MOTE_OPENMP)
    if (helpers_ > 0 && n > 1 && work >= kMinParallelWork) {
      publish(
          n, [](void *context, size_t i) { (*static_cast<Fn *>(context))(i); }, &fn);
      return;
    }
#endif
    (void)work;
    for (size_t i = 0; i < n; ++i) fn(i);
  }

  // The thread running the caller of a parallel_for step, 0 .. n_threads - 1 (0 outside a
  // shared pass, whatever OpenMP team the caller itself runs in): an index into per-thread scratch.
#if defined(MOTE_OPENMP)
  size_t worker() const;
#else
  size_t worker() const { return 0; }
#endif

  // Items per chunk of about kChunkWork, a multiple of align (all of them when work is free).
  static size_t items_per_chunk(size_t total, size_t work_per_item, size_t align) {
    const size_t items = work_per_item == 0 ? total : (kChunkWork + work_per_item - 1) / work_per_item;
    return (items + align - 1) / align * align;
  }

  // Runs pass() (a forward pass over n_tokens tokens whose largest step is largest_step
  // multiply-adds, total_work in all) on the calling thread, with up to n_threads - 1 helpers
  // joining its steps when some step is worth sharing and sharing has proven faster (decoding)
  // or the pass is large enough to pay for waking them (prefill).
  template <class Pass>
  void run(uint32_t n_threads, size_t n_tokens, size_t largest_step, size_t total_work, Pass &&pass) {
#if defined(MOTE_OPENMP)
    if (n_threads > 1 && largest_step >= kMinPassWork && (n_tokens == 1 || total_work >= kMinPrefillWork)) {
      const auto call = [](void *context) { (*static_cast<Pass *>(context))(); };
      if (n_tokens == 1) {
        run_decode(n_threads, call, &pass);
      } else {
        run_parallel(n_threads, call, &pass);
      }
      return;
    }
#endif
    (void)n_threads;
    (void)n_tokens;
    (void)largest_step;
    (void)total_work;
    pass();
  }

 private:
#if defined(MOTE_OPENMP)
  using ChunkFn = void (*)(void *context, size_t i);
  void run_decode(uint32_t n_threads, void (*pass)(void *), void *context);
  void publish(size_t n, ChunkFn fn, void *context);
  void run_parallel(uint32_t n_threads, void (*pass)(void *), void *context);
  void help();
  bool claim_and_run();

  // The current step: generation (16 bits) | chunk count (24 bits) | next chunk (24 bits), so a
  // claim can never apply to a step other than the one it read.
  std::atomic<uint64_t> step_{0};
  std::atomic<uint32_t> done_{0};  // chunks of the current step finished
  std::atomic<bool> finished_{false};
  ChunkFn fn_ = nullptr;
  void *context_ = nullptr;

  // Seconds of recent decoding passes run each way.
  struct PassTimes {
    double seconds[2] = {0.0, 0.0};  // [serial, parallel]; 0 = not measured yet
    bool parallel = true;            // the way passes run now
    uint32_t passes = 0;             // since the last probe
    uint32_t probe_every = kProbeEvery;
  };
  PassTimes decode_times_;
#endif
  uint32_t helpers_ = 0;  // threads other than the leader inside the current pass
};

}  // namespace mote
