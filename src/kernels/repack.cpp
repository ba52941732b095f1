#include "kernels/repack.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>

#include "core/error.h"
#include "core/thread_pool.h"
#include "kernels/matmul.h"
#include "tensor/blocks.h"

namespace keel::kernels::q {
namespace {

using tensor::BlockQ4_0;
using tensor::BlockQ4_K;
using tensor::BlockQ5_K;
using tensor::BlockQ6_K;
using tensor::BlockQ8_0;

void put_f16(uint8_t* dst, int lane, uint16_t h) { std::memcpy(dst + 2 * lane, &h, 2); }

void pack_q8_0(const uint8_t* const rows[kPanelRows], uint8_t* dst) {
  std::memset(dst, 0, 544);
  for (int r = 0; r < kPanelRows; ++r) {
    uint8_t* q = dst + 32;
    if (!rows[r]) {
      for (int g = 0; g < 8; ++g) std::memset(q + 64 * g + 4 * r, 0x80, 4);  // q = 0
      continue;
    }
    const auto b = load_block<BlockQ8_0>(rows[r]);
    put_f16(dst, r, b.d);
    for (int g = 0; g < 8; ++g) {
      for (int i = 0; i < 4; ++i) q[64 * g + 4 * r + i] = static_cast<uint8_t>(b.qs[4 * g + i]) ^ 0x80;
    }
  }
}

void pack_q4_0(const uint8_t* const rows[kPanelRows], uint8_t* dst) {
  std::memset(dst, 0, 288);
  for (int r = 0; r < kPanelRows; ++r) {
    if (!rows[r]) continue;
    const auto b = load_block<BlockQ4_0>(rows[r]);
    put_f16(dst, r, b.d);
    for (int k = 0; k < 4; ++k) std::memcpy(dst + 32 + 64 * k + 4 * r, b.qs + 4 * k, 4);
  }
}

// q4_K, and q5_K (kFive): the q4_K part, then q5_K's high bits behind it.
template <typename Block, bool kFive>
void pack_k4_family(const uint8_t* const rows[kPanelRows], uint8_t* dst) {
  constexpr size_t kBytes = kFive ? 2880 : 2368;
  std::memset(dst, 0, kBytes);
  uint8_t* sc = dst + 64;
  uint8_t* mn = dst + 192;
  uint8_t* qs = dst + 320;
  uint8_t* qh = dst + 2368;
  for (int r = 0; r < kPanelRows; ++r) {
    if (!rows[r]) continue;
    const auto b = load_block<Block>(rows[r]);
    put_f16(dst, r, b.d);
    put_f16(dst + 32, r, b.dmin);
    for (int j = 0; j < 8; ++j) {
      uint8_t s, m;
      tensor::unpack_scale_min_k4(j, b.scales, &s, &m);
      sc[16 * j + r] = s;
      mn[((j / 2) * 16 + r) * 2 + j % 2] = m;
    }
    for (int c = 0; c < 4; ++c) {
      for (int k = 0; k < 8; ++k) std::memcpy(qs + 64 * (8 * c + k) + 4 * r, b.qs + 32 * c + 4 * k, 4);
    }
    if constexpr (kFive) {
      for (int k = 0; k < 8; ++k) std::memcpy(qh + 64 * k + 4 * r, b.qh + 4 * k, 4);
    }
  }
}

// The 6-bit quant of element e of a q6_K block (tensor/blocks.h layout).
int q6_k_quant(const BlockQ6_K& b, int e) {
  const int h = e / 128, l = e % 32, quarter = (e % 128) / 32;
  const uint8_t ql = b.ql[64 * h + l + (quarter % 2) * 32];
  const int low = quarter < 2 ? (ql & 0x0f) : (ql >> 4);
  const int high = (b.qh[32 * h + l] >> (2 * quarter)) & 3;
  return low | (high << 4);
}

void pack_q6_k(const uint8_t* const rows[kPanelRows], uint8_t* dst) {
  std::memset(dst, 0, 3360);
  int8_t* sc = reinterpret_cast<int8_t*>(dst + 32);
  for (int r = 0; r < kPanelRows; ++r) {
    if (!rows[r]) continue;
    const auto b = load_block<BlockQ6_K>(rows[r]);
    put_f16(dst, r, b.d);
    for (int j = 0; j < 16; ++j) {
      sc[16 * j + r] = b.scales[j];
      uint8_t* sub = dst + 288 + 192 * j;
      for (int i = 0; i < 4; ++i) {
        int q[4];
        for (int g = 0; g < 4; ++g) q[g] = q6_k_quant(b, 16 * j + 4 * g + i);
        sub[4 * r + i] = static_cast<uint8_t>((q[0] & 15) | (q[1] & 15) << 4);
        sub[64 + 4 * r + i] = static_cast<uint8_t>((q[2] & 15) | (q[3] & 15) << 4);
        sub[128 + 4 * r + i] =
            static_cast<uint8_t>((q[0] >> 4) | (q[1] >> 4) << 2 | (q[2] >> 4) << 4 | (q[3] >> 4) << 6);
      }
    }
  }
}

}  // namespace

void pack_block(tensor::DType type, const uint8_t* const rows[kPanelRows], uint8_t* dst) {
  switch (type) {
    case tensor::DType::kQ8_0: return pack_q8_0(rows, dst);
    case tensor::DType::kQ4_0: return pack_q4_0(rows, dst);
    case tensor::DType::kQ4_K: return pack_k4_family<BlockQ4_K, false>(rows, dst);
    case tensor::DType::kQ5_K: return pack_k4_family<BlockQ5_K, true>(rows, dst);
    case tensor::DType::kQ6_K: return pack_q6_k(rows, dst);
    default:
      throw Error(ErrorCode::kUnsupported,
                  std::string("repack: no integer layout for ") + tensor::dtype_name(type));
  }
}

PackArena::PackArena(size_t bytes) : buffer_(bytes, "packed weights") {}

uint8_t* PackArena::take(size_t bytes) {
  std::lock_guard<std::mutex> lock(mutex_);
  const size_t rounded = (bytes + 63) / 64 * 64;
  if (rounded < bytes || rounded > buffer_.size() - used_) return nullptr;
  uint8_t* p = buffer_.data() + used_;
  used_ += rounded;
  return p;
}

size_t PackedMatrix::bytes_for(const WeightMatrix& w) {
  const Format* f = format_for(w.type);
  if (!f || w.n_in <= 0 || w.n_out <= 0 || w.n_in % f->block != 0) return 0;
  const size_t panels = static_cast<size_t>((w.n_out + kPanelRows - 1) / kPanelRows);
  return f->panel_block_bytes * static_cast<size_t>(w.n_in / f->block) * panels;
}

PackedMatrix::PackedMatrix(const WeightMatrix& w, ThreadPool* pool, std::shared_ptr<PackArena> arena)
    : format_(format_for(w.type)) {
  if (!format_) {
    throw Error(ErrorCode::kUnsupported,
                std::string("repack: no integer layout for ") + tensor::dtype_name(w.type));
  }
  if (!w.data || w.n_in <= 0 || w.n_out <= 0 || w.n_in % format_->block != 0) {
    throw Error(ErrorCode::kInvalidArgument,
                "repack: bad " + std::string(tensor::dtype_name(w.type)) + " matrix " +
                    std::to_string(w.n_out) + " x " + std::to_string(w.n_in));
  }
  n_in_ = w.n_in;
  n_out_ = w.n_out;
  n_blocks_ = w.n_in / format_->block;
  n_panels_ = (w.n_out + kPanelRows - 1) / kPanelRows;
  panel_bytes_ = format_->panel_block_bytes * static_cast<size_t>(n_blocks_);
  bytes_ = panel_bytes_ * static_cast<size_t>(n_panels_);
  if (arena) base_ = arena->take(bytes_);
  if (base_) {
    arena_ = std::move(arena);
  } else {
    own_ = LargeBuffer(bytes_, "repack");
    base_ = own_.data();
  }
  auto pack_panels = [&](int64_t p0, int64_t p1) {
    for (int64_t p = p0; p < p1; ++p) {
      for (int64_t b = 0; b < n_blocks_; ++b) {
        const uint8_t* rows[kPanelRows];
        for (int i = 0; i < kPanelRows; ++i) {
          const int64_t o = p * kPanelRows + i;
          rows[i] = o < n_out_ ? w.row(o) + static_cast<size_t>(b) * format_->src_block_bytes : nullptr;
        }
        pack_block(w.type, rows, base_ + p * panel_bytes_ + b * format_->panel_block_bytes);
      }
    }
  };
  if (pool && pool->size() > 1 && n_panels_ > 1) {
    pool->parallel_for(n_panels_, std::max<int64_t>(1, n_panels_ / (8 * pool->size())), pack_panels);
  } else {
    pack_panels(0, n_panels_);
  }
}

const PackedMatrix& PackCache::get(const WeightMatrix& w, ThreadPool* pool, const std::shared_ptr<PackArena>& arena) {
  std::lock_guard<std::mutex> lock(mutex_);
  for (const Entry& e : entries_) {
    if (e.data == w.data && e.n_in == w.n_in && e.n_out == w.n_out && e.row_stride == w.row_stride) {
      return *e.packed;
    }
  }
  entries_.push_back({w.data, w.n_in, w.n_out, w.row_stride, std::make_unique<PackedMatrix>(w, pool, arena)});
  return *entries_.back().packed;
}

size_t PackCache::bytes() const {
  std::lock_guard<std::mutex> lock(mutex_);
  size_t n = 0;
  for (const Entry& e : entries_) n += e.packed->bytes();
  return n;
}

}  // namespace keel::kernels::q
