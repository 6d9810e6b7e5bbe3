#include "quant/host_types.hpp"

#include "quant/quantize.hpp"

namespace mote::convert {
namespace {

using format::DType;

constexpr HostType kHostTypes[] = {
    {DType::f32, quantize_f32},   {DType::f16, quantize_f16},       {DType::q8_0, quantize_q8_0},
    {DType::q4_0, quantize_q4_0}, {DType::q4_1, quantize_q4_1},     {DType::q5_0, quantize_q5_0},
    {DType::q5_1, quantize_q5_1}, {DType::iq4_nl, quantize_iq4_nl}, {DType::q6_k, quantize_q6_k},
    {DType::q5_k, quantize_q5_k}, {DType::q4_k, quantize_q4_k},     {DType::q3_k, quantize_q3_k},
    {DType::q2_k, quantize_q2_k},
};

// Rows write plain blocks; the interleaved twins are a reorder of them (repack.hpp).
constexpr bool rows_are_plain() {
  for (const HostType &row : kHostTypes) {
    if (format::traits_of(row.dtype).interleaved_rows != 1) return false;
  }
  return true;
}
static_assert(rows_are_plain(), "host rows are plain dtypes");

}  // namespace

const HostType *host_type(format::DType dtype) {
  for (const HostType &row : kHostTypes) {
    if (row.dtype == dtype) return &row;
  }
  return nullptr;
}

const HostType *host_types(size_t *count) {
  *count = sizeof kHostTypes / sizeof kHostTypes[0];
  return kHostTypes;
}

std::string or_list(const char *const *names, size_t n) {
  std::string text;
  for (size_t i = 0; i < n; ++i) {
    text += i == 0 ? "" : i + 1 == n ? " or " : ", ";
    text += names[i];
  }
  return text;
}

std::string host_type_list() {
  const char *names[sizeof kHostTypes / sizeof kHostTypes[0]];
  for (size_t i = 0; i < sizeof names / sizeof names[0]; ++i) names[i] = format::traits_of(kHostTypes[i].dtype).name;
  return or_list(names, sizeof names / sizeof names[0]);
}

bool is_quantized(format::DType dtype) {
  return host_type(dtype) != nullptr && format::traits_of(dtype).block_elements > 1;
}

std::vector<uint8_t> quantize(const float *values, size_t n, format::DType dtype) {
  const HostType *row = host_type(dtype);
  if (row == nullptr) return {};
  const format::DTypeTraits &traits = format::traits_of(dtype);
  const size_t n_blocks = n / traits.block_elements;
  std::vector<uint8_t> out(n_blocks * traits.block_bytes);
  row->quantize_ref(values, n_blocks, out.data());
  return out;
}

}  // namespace mote::convert
