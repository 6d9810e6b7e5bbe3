#include "model/parallel.hpp"

#if defined(MOTE_OPENMP)
#include <omp.h>

namespace mote {
namespace {

constexpr uint64_t kFieldMask = (1u << 24) - 1;

uint64_t generation_of(uint64_t step) { return step >> 48; }
uint64_t count_of(uint64_t step) { return (step >> 24) & kFieldMask; }
uint64_t next_of(uint64_t step) { return step & kFieldMask; }

inline void spin_pause() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__) || defined(__arm__)
  __asm__ __volatile__("yield");
#endif
}

}  // namespace

// Claims a run of the current step's chunks and runs them; false when none is left. Runs are
// guided: a share of what is left (1 / (2 x threads) of it), so early claims take long runs
// and the last ones single chunks. A thread then reads long stretches of consecutive rows (its
// prefetches run into its own next chunk, not into the other thread's, and the hardware
// prefetcher keeps its stream), fewer claims hit the shared counter, and a run claimed early
// ends while the others still have work, so at a step's end the leader waits for a short run
// at most (unless its owner was descheduled, as before).
bool Crew::claim_and_run() {
  uint64_t step = step_.load(std::memory_order_acquire);
  while (next_of(step) < count_of(step)) {
    const uint64_t share = (count_of(step) - next_of(step)) / (2 * (uint64_t{helpers_} + 1));
    const uint64_t run = share > 1 ? share : 1;
    if (step_.compare_exchange_weak(step, step + run, std::memory_order_acquire, std::memory_order_acquire)) {
      // The step's function stays put while a claimed chunk is unfinished (publish waits).
      for (uint64_t i = next_of(step); i < next_of(step) + run; ++i) fn_(context_, static_cast<size_t>(i));
      done_.fetch_add(static_cast<uint32_t>(run), std::memory_order_release);
      return true;
    }
  }
  return false;
}

void Crew::publish(size_t n, ChunkFn fn, void *context) {
  // Chunk counts fit 24 bits: larger steps get proportionally larger chunks from callers, and
  // the leader runs any excess itself.
  const uint64_t count = n < kFieldMask ? n : kFieldMask;
  fn_ = fn;
  context_ = context;
  done_.store(0, std::memory_order_relaxed);
  const uint64_t generation = (generation_of(step_.load(std::memory_order_relaxed)) + 1) & 0xFFFF;
  step_.store((generation << 48) | (count << 24), std::memory_order_release);
  while (claim_and_run()) {
  }
  while (done_.load(std::memory_order_acquire) < count) spin_pause();
  for (size_t i = count; i < n; ++i) fn(context, i);
}

void Crew::help() {
  while (!finished_.load(std::memory_order_acquire)) {
    if (!claim_and_run()) spin_pause();
  }
}

void Crew::run_decode(uint32_t n_threads, void (*pass)(void *), void *context) {
  PassTimes &times = decode_times_;
  const bool probe = ++times.passes >= times.probe_every || times.seconds[!times.parallel] == 0.0;
  if (probe) times.passes = 0;
  const bool parallel = probe ? !times.parallel : times.parallel;
  const double start = omp_get_wtime();
  if (parallel) {
    run_parallel(n_threads, pass, context);
  } else {
    pass(context);
  }
  const double seconds = omp_get_wtime() - start;
  double &recent = times.seconds[parallel];
  const bool first = recent == 0.0;
  recent = first || probe ? seconds : 0.75 * recent + 0.25 * seconds;
  // Choose at each probe, and as soon as both ways have a first time; switch only for a clear
  // gain, so noise does not flip the choice back and forth.
  const double serial_seconds = times.seconds[0], parallel_seconds = times.seconds[1];
  if (!(probe || first) || serial_seconds == 0.0 || parallel_seconds == 0.0) return;
  const bool was_parallel = times.parallel;
  if (parallel_seconds < 0.9 * serial_seconds) times.parallel = true;
  if (serial_seconds < 0.9 * parallel_seconds) times.parallel = false;
  if (times.parallel != was_parallel) {
    // Helpers lost to one thread, most likely to another process: a parallel probe then costs
    // a slow pass, so the next one waits longer.
    times.probe_every = times.parallel ? kProbeEvery : 4 * kProbeEvery;
  } else if (probe && times.probe_every < kProbeEveryMax) {
    times.probe_every *= 2;  // the probe lost
  }
}

size_t Crew::worker() const { return helpers_ > 0 ? static_cast<size_t>(omp_get_thread_num()) : 0; }

void Crew::run_parallel(uint32_t n_threads, void (*pass)(void *), void *context) {
  finished_.store(false, std::memory_order_relaxed);
  helpers_ = n_threads - 1;
#pragma omp parallel num_threads(n_threads)
  {
    if (omp_get_thread_num() == 0) {
      pass(context);
      finished_.store(true, std::memory_order_release);
    } else {
      help();
    }
  }
  helpers_ = 0;
}

}  // namespace mote
#endif
