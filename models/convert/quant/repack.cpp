#include "quant/repack.hpp"

#include <cstring>

namespace mote::convert {
namespace {

constexpr size_t kQuantChunk = 4;  // quant bytes moved together (one int32 lane)

enum class Direction { to_interleaved, to_plain };

// Moves every byte between the plain layout and the interleaved one. A plain block is its fp16
// fields (d, then m: its format row's scale_fields, at its scale_offset: 0, or after the quants
// as in q6_k) and its other bytes; a group block is each field for the group's rows (d[8], then
// m[8]), then those other bytes in their plain order, bytes [4k, 4k + 4) of row i at (8k + i) * 4.
void reorder(const uint8_t *src, uint8_t *dst, format::DType plain, size_t rows, size_t cols, Direction direction) {
  const format::DTypeTraits &traits = format::traits_of(plain);
  const size_t group_rows = format::traits_of(traits.twin).interleaved_rows;
  const size_t block_bytes = traits.block_bytes;
  const size_t field_bytes = 2 * size_t{traits.scale_fields};  // 2 (d) or 4 (d, m)
  const size_t quant_bytes = block_bytes - field_bytes;        // every byte but the fields
  const size_t blocks_per_row = cols / traits.block_elements;
  for (size_t row = 0; row < rows; ++row) {
    const size_t group = row / group_rows, i = row % group_rows;
    for (size_t b = 0; b < blocks_per_row; ++b) {
      const size_t plain_at = (row * blocks_per_row + b) * block_bytes;
      const size_t group_at = (group * blocks_per_row + b) * group_rows * block_bytes;
      const auto move = [&](size_t plain_offset, size_t group_offset, size_t n) {
        if (direction == Direction::to_interleaved)
          std::memcpy(dst + group_at + group_offset, src + plain_at + plain_offset, n);
        else
          std::memcpy(dst + plain_at + plain_offset, src + group_at + group_offset, n);
      };
      for (size_t field = 0; field < field_bytes; field += 2)
        move(traits.scale_offset + field, field * group_rows + 2 * i, 2);
      for (size_t k = 0; k < quant_bytes / kQuantChunk; ++k) {
        const size_t at = k * kQuantChunk < traits.scale_offset ? k * kQuantChunk : k * kQuantChunk + field_bytes;
        move(at, field_bytes * group_rows + (group_rows * k + i) * kQuantChunk, kQuantChunk);
      }
    }
  }
}

}  // namespace

std::optional<format::DType> interleaved_dtype(format::DType plain) {
  const format::DTypeTraits &traits = format::traits_of(plain);
  if (traits.interleaved_rows != 1 || traits.twin == plain) return std::nullopt;
  return traits.twin;
}

format::DType plain_dtype(format::DType dtype) {
  const format::DTypeTraits &traits = format::traits_of(dtype);
  return traits.interleaved_rows > 1 ? traits.twin : dtype;
}

std::vector<uint8_t> interleave_rows(const std::vector<uint8_t> &blocks, format::DType plain, size_t rows,
                                     size_t cols) {
  std::vector<uint8_t> groups(blocks.size());
  reorder(blocks.data(), groups.data(), plain, rows, cols, Direction::to_interleaved);
  return groups;
}

std::vector<uint8_t> deinterleave_rows(const std::vector<uint8_t> &groups, format::DType plain, size_t rows,
                                       size_t cols) {
  std::vector<uint8_t> blocks(groups.size());
  reorder(groups.data(), blocks.data(), plain, rows, cols, Direction::to_plain);
  return blocks;
}

}  // namespace mote::convert
