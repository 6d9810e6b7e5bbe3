// Helpers of the CUDA tests: skipping (saying so) without a device, device buffers, and CPU and
// CUDA sessions over one model.
#pragma once

#include <cuda_runtime_api.h>

#include <memory>
#include <string>
#include <vector>

#include "mote/mote_cuda.h"
#include "test_support.hpp"

namespace mote_cuda_test {

// True when a CUDA device is present; else prints "SKIPPED: ..." (ctest counts the entry skipped).
inline bool have_device() {
  char reason[256] = "";
  if (mote_cuda_device_available(reason, sizeof reason) != 0) return true;
  MESSAGE("SKIPPED: " << reason);
  return false;
}

// A device copy of a host vector; freed at scope end.
template <class T>
struct DeviceBuffer {
  T *ptr = nullptr;
  size_t n = 0;
  explicit DeviceBuffer(size_t count) : n(count) { 
    REQUIRE(cudaMalloc(reinterpret_cast<void **>(&ptr), (count > 0 ? count : 1) * sizeof(T)) == cudaSuccess);
  }
  explicit DeviceBuffer(const std::vector<T> &host) : DeviceBuffer(host.size()) {
    REQUIRE(cudaMemcpy(ptr, host.data(), n * sizeof(T), cudaMemcpyHostToDevice) == cudaSuccess);
  }
  ~DeviceBuffer() { cudaFree(ptr); }
  DeviceBuffer(const DeviceBuffer &) = delete;
  DeviceBuffer &operator=(const DeviceBuffer &) = delete;
  std::vector<T> host() const {
    std::vector<T> out(n);
    REQUIRE(cudaDeviceSynchronize() == cudaSuccess);
    REQUIRE(cudaMemcpy(out.data(), ptr, n * sizeof(T), cudaMemcpyDeviceToHost) == cudaSuccess);
    return out;
  }
};

// A session of either backend with its own arena; releases its device memory at scope end.
struct Session {
  mote_test::AlignedBuffer arena{0};
  mote_session session{};
  ~Session() { mote_session_release(&session); }
};

inline std::unique_ptr<Session> open(const mote_model &model, mote_session_options options, mote_backend backend,
                                     const mote_cuda_model *device_model = nullptr) {
  options.backend = backend;
  options.device_model = device_model;
  auto s = std::make_unique<Session>();
  const size_t needed = mote_arena_size(&model, &options);
  REQUIRE(needed > 0);
  s->arena = mote_test::AlignedBuffer(needed);
  char message[256] = "";
  if (mote_session_init(&s->session, &model, &options, s->arena.data.get(), needed, message, sizeof message) !=
      MOTE_OK) {
    FAIL("session init failed: " << message);
  }
  return s;
}

}  // namespace mote_cuda_test
