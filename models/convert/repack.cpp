#include "repack.hpp"

#include <cstring>

namespace mote::convert {
namespace {

constexpr size_t kRows = 8;          // rows per group
constexpr size_t kBlockValues = 32;  // values per block
constexpr size_t kQuantChunk = 4;    // quant bytes moved together (one int32 lane)

enum class Direction { to_interleaved, to_plain };

// Moves every byte between the plain layout and the interleaved one. A plain block is its fp16
// fields (d, then m for q4_1) followed by its quant bytes; a group block is each field for the
// 8 rows (d[8], then m[8]), then the quants, bytes [4k, 4k + 4) of row i at (8k + i) * 4.
void reorder(const uint8_t *src, uint8_t *dst, format::DType plain, size_t rows, size_t cols, Direction direction) {
  const size_t block_bytes = format::dtype_traits(static_cast<uint32_t>(plain))->block_bytes;
  const size_t quant_bytes = plain == format::DType::q8_0 ? kBlockValues : kBlockValues / 2;
  const size_t field_bytes = block_bytes - quant_bytes;  // 2 (d) or 4 (d, m)
  const size_t blocks_per_row = cols / kBlockValues;
  for (size_t row = 0; row < rows; ++row) {
    const size_t group = row / kRows, i = row % kRows;
    for (size_t b = 0; b < blocks_per_row; ++b) {
      const size_t plain_at = (row * blocks_per_row + b) * block_bytes;
      const size_t group_at = (group * blocks_per_row + b) * kRows * block_bytes;
      const auto move = [&](size_t plain_offset, size_t group_offset, size_t n) {
        if (direction == Direction::to_interleaved)
          std::memcpy(dst + group_at + group_offset, src + plain_at + plain_offset, n);
        else
          std::memcpy(dst + plain_at + plain_offset, src + group_at + group_offset, n);
      };
      for (size_t field = 0; field < field_bytes; field += 2) move(field, field * kRows + 2 * i, 2);
      for (size_t k = 0; k < quant_bytes / kQuantChunk; ++k) {
        move(field_bytes + k * kQuantChunk, field_bytes * kRows + (kRows * k + i) * kQuantChunk, kQuantChunk);
      }
    }
  }
}

}  // namespace

std::optional<format::DType> interleaved_dtype(format::DType plain) {
  switch (plain) {
    case format::DType::q8_0:
      return format::DType::q8_0x8;
    case format::DType::q4_0:
      return format::DType::q4_0x8;
    case format::DType::q4_1:
      return format::DType::q4_1x8;
    default:
      return std::nullopt;
  }
}

format::DType plain_dtype(format::DType dtype) {
  switch (dtype) {
    case format::DType::q8_0x8:
      return format::DType::q8_0;
    case format::DType::q4_0x8:
      return format::DType::q4_0;
    case format::DType::q4_1x8:
      return format::DType::q4_1;
    default:
      return dtype;
  }
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
