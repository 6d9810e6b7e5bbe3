// Helpers of the CUDA tests: skipping (saying so) without a device, device buffers, and CPU and
// CUDA sessions over one model.
#pragma once

#include <cuda_runtime_api.h>

#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "core/fp16.hpp"
#include "kernels/quant.hpp"
#include "model/weight_types.hpp"
#include "mote/mote_cuda.h"
#include "mote_writer.hpp"
#include "test_support.hpp"

namespace mote_cuda_test {

using DType = mote::format::DType;
namespace kernels = mote::kernels;

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

// A converted model (as `mote convert` writes it), opened.
struct Opened {
  mote_test::AlignedBuffer bytes{0};
  mote_model model{};
};

inline std::unique_ptr<Opened> open_data(const mote::convert::ModelData &data) {
  auto m = std::make_unique<Opened>();
  m->bytes = mote_test::AlignedBuffer::copy_of(mote::convert::serialize(data));
  char message[256] = "";
  REQUIRE_MESSAGE(mote_model_open(m->bytes.data.get(), m->bytes.size, &m->model, message, sizeof message) == MOTE_OK,
                  message);
  return m;
}

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

// Random test data: uniform floats, finite half scales, matrices of every weight type.
inline std::vector<float> random_floats(size_t n, std::mt19937 &rng, float scale = 1.0f) {
  std::uniform_real_distribution<float> dist(-scale, scale);
  std::vector<float> v(n);
  for (float &x : v) x = dist(rng);
  return v;
}

inline uint16_t random_half(std::mt19937 &rng, float lo, float hi) {
  return mote::f32_to_fp16(std::uniform_real_distribution<float>(lo, hi)(rng));
}

// A (rows, cols) matrix of dtype with random quants and sane scales (finite halves).
inline std::vector<unsigned char> random_matrix(DType dtype, size_t rows, size_t cols, std::mt19937 &rng) {
  const size_t row_bytes = mote::weight_row_bytes(dtype, cols);
  std::vector<unsigned char> bytes(rows * row_bytes);
  for (unsigned char &b : bytes) b = static_cast<unsigned char>(rng());
  const size_t blocks = rows * cols / kernels::kQuantBlock;
  auto fix = [&](auto *block, size_t count, auto &&set) {
    for (size_t i = 0; i < count; ++i) set(block[i]);
  };
  switch (dtype) {
    case DType::f32: {
      const std::vector<float> v = random_floats(rows * cols, rng);
      std::memcpy(bytes.data(), v.data(), bytes.size());
      break;
    }
    case DType::f16: {
      uint16_t *h = reinterpret_cast<uint16_t *>(bytes.data());
      for (size_t i = 0; i < rows * cols; ++i) h[i] = random_half(rng, -1.0f, 1.0f);
      break;
    }
    case DType::q8_0:
      fix(reinterpret_cast<kernels::BlockQ8_0 *>(bytes.data()), blocks,
          [&](auto &b) { b.d = random_half(rng, -0.02f, 0.02f); });
      break;
    case DType::q4_0:
      fix(reinterpret_cast<kernels::BlockQ4_0 *>(bytes.data()), blocks,
          [&](auto &b) { b.d = random_half(rng, -0.2f, 0.2f); });
      break;
    case DType::q4_1:
      fix(reinterpret_cast<kernels::BlockQ4_1 *>(bytes.data()), blocks, [&](auto &b) {
        b.d = random_half(rng, 0.0f, 0.2f);
        b.m = random_half(rng, -1.0f, 0.0f);
      });
      break;
    case DType::q8_0x8:
      fix(reinterpret_cast<kernels::BlockQ8_0x8 *>(bytes.data()), blocks / 8, [&](auto &b) {
        for (uint16_t &d : b.d) d = random_half(rng, -0.02f, 0.02f);
      });
      break;
    case DType::q4_0x8:
      fix(reinterpret_cast<kernels::BlockQ4_0x8 *>(bytes.data()), blocks / 8, [&](auto &b) {
        for (uint16_t &d : b.d) d = random_half(rng, -0.2f, 0.2f);
      });
      break;
    case DType::q4_1x8:
      fix(reinterpret_cast<kernels::BlockQ4_1x8 *>(bytes.data()), blocks / 8, [&](auto &b) {
        for (uint16_t &d : b.d) d = random_half(rng, 0.0f, 0.2f);
        for (uint16_t &m : b.m) m = random_half(rng, -1.0f, 0.0f);
      });
      break;
    default:
      FAIL("no generator for this dtype");
  }
  return bytes;
}

// Every weight type the CUDA kernels read.
constexpr DType kWeightTypes[] = {DType::f32,  DType::f16,    DType::q8_0,   DType::q4_0,
                                  DType::q4_1, DType::q8_0x8, DType::q4_0x8, DType::q4_1x8};

}  // namespace mote_cuda_test
