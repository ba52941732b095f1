// Every SIMD table of the element-wise kernels (elementwise_isa.h) gives the scalar twin's
// exact bits: odd sizes 1..67 and 2048+3, special values (±0, ±inf, NaN, huge, denormal, the
// exponential's clamp edges, tanh's branch point), aliasing, both RoPE layouts.
// NaN outputs must be NaN on both sides (payloads are not part of the definition).
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "kernels/activation.h"
#include "kernels/elementwise_isa.h"
#include "kernels/norm.h"

namespace keel::kernels {
namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

std::vector<const ElementwiseOps*> simd_tables() {
  std::vector<const ElementwiseOps*> v;
  if (const auto* o = elementwise_avx2_ops()) v.push_back(o);
  if (const auto* o = elementwise_avx512_ops()) v.push_back(o);
  return v;
}

const char* isa_name(ElemIsa isa) {
  return isa == ElemIsa::kAvx512 ? "avx512" : isa == ElemIsa::kAvx2 ? "avx2" : "scalar";
}

std::vector<int64_t> sizes() {
  std::vector<int64_t> v;
  for (int64_t n = 1; n <= 67; ++n) v.push_back(n);
  v.push_back(2048 + 3);
  return v;
}

// Random values of the given spread; with specials, every 7th element is a special value.
std::vector<float> values(int64_t n, uint32_t seed, float spread, bool specials) {
  static const float kSpecial[] = {0.0f,   -0.0f,  kInf,    -kInf,   kNaN,     1e30f,   -1e30f,
                                   3.4e38f, -3.4e38f, 1e-40f, -1e-40f, 88.72f, -88.72f, 104.5f,
                                   -104.5f, 0.625f, -0.625f, 0.6249999f, 44.5f,  -87.3f,  7.0f};
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, spread);
  std::vector<float> v(n);
  size_t k = seed;
  for (int64_t i = 0; i < n; ++i) {
    v[i] = (specials && i % 7 == 3) ? kSpecial[k++ % std::size(kSpecial)] : d(rng);
  }
  return v;
}

void expect_same(const std::vector<float>& got, const std::vector<float>& want,
                 const std::string& what) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::isnan(want[i])) {
      ASSERT_TRUE(std::isnan(got[i])) << what << " i " << i << ": " << got[i] << " vs NaN";
    } else {
      ASSERT_EQ(std::memcmp(&got[i], &want[i], 4), 0)
          << what << " i " << i << ": " << got[i] << " vs " << want[i];
    }
  }
}

std::string label(const ElementwiseOps& ops, const char* kernel, int64_t n) {
  return std::string(isa_name(ops.isa)) + " " + kernel + " n " + std::to_string(n);
}

class ElementwiseTwin : public ::testing::Test {
 protected:
  void SetUp() override {
    tables_ = simd_tables();
    if (tables_.empty()) GTEST_SKIP() << "no SIMD table on this machine (or KEEL_CPU=scalar)";
  }
  std::vector<const ElementwiseOps*> tables_;
  const ElementwiseOps& ref_ = elementwise_scalar_ops();
};

TEST_F(ElementwiseTwin, GatedActivationsEqualScalarBitwise) {
  for (const ElementwiseOps* ops : tables_) {
    for (int64_t n : sizes()) {
      for (bool specials : {false, true}) {
        const auto g = values(n, 1 + n, 4.0f, specials), u = values(n, 2 + n, 2.0f, specials);
        std::vector<float> a(n), b(n);
        ops->silu_mul(g.data(), u.data(), n, a.data());
        ref_.silu_mul(g.data(), u.data(), n, b.data());
        expect_same(a, b, label(*ops, "silu_mul", n));
        ops->gelu_tanh_mul(g.data(), u.data(), n, a.data());
        ref_.gelu_tanh_mul(g.data(), u.data(), n, b.data());
        expect_same(a, b, label(*ops, "gelu_tanh_mul", n));
        for (float limit : {7.0f, 0.5f, kInf}) {
          ops->swiglu_oai(g.data(), u.data(), n, 1.702f, limit, a.data());
          ref_.swiglu_oai(g.data(), u.data(), n, 1.702f, limit, b.data());
          expect_same(a, b, label(*ops, "swiglu_oai", n));
        }
      }
    }
  }
}

TEST_F(ElementwiseTwin, OutputMayAliasEitherInput) {
  const int64_t n = 45;
  const auto g = values(n, 3, 3.0f, true), u = values(n, 4, 3.0f, true);
  for (const ElementwiseOps* ops : tables_) {
    std::vector<float> want(n), in_g = g, in_u = u;
    ref_.silu_mul(g.data(), u.data(), n, want.data());
    ops->silu_mul(in_g.data(), u.data(), n, in_g.data());
    ops->silu_mul(g.data(), in_u.data(), n, in_u.data());
    expect_same(in_g, want, label(*ops, "silu_mul out=gate", n));
    expect_same(in_u, want, label(*ops, "silu_mul out=up", n));
  }
}

TEST_F(ElementwiseTwin, SoftcapEqualsScalarBitwise) {
  for (const ElementwiseOps* ops : tables_) {
    for (int64_t n : sizes()) {
      for (float cap : {30.0f, 50.0f, 0.7f}) {
        auto a = values(n, 5 + n, 20.0f, true), b = a;
        ops->softcap(a.data(), n, cap);
        ref_.softcap(b.data(), n, cap);
        expect_same(a, b, label(*ops, "softcap", n));
      }
    }
  }
}

TEST_F(ElementwiseTwin, SoftmaxEqualsScalarBitwise) {
  for (const ElementwiseOps* ops : tables_) {
    for (int64_t n : sizes()) {
      auto a = values(n, 6 + n, 5.0f, false);
      if (n > 5) a[n / 2] = a[n / 3] = -kInf;  // masked entries
      auto b = a;
      ops->softmax(a.data(), n);
      ref_.softmax(b.data(), n);
      expect_same(a, b, label(*ops, "softmax", n));
    }
    // Special rows: one NaN, one +inf, all −inf → all NaN on every path.
    for (float special : {kNaN, kInf}) {
      auto a = values(37, 9, 1.0f, false);
      a[20] = special;
      auto b = a;
      ops->softmax(a.data(), 37);
      ref_.softmax(b.data(), 37);
      expect_same(a, b, label(*ops, "softmax special", 37));
    }
  }
}

TEST_F(ElementwiseTwin, SumSquaresAndScaleEqualScalarBitwise) {
  for (const ElementwiseOps* ops : tables_) {
    for (int64_t n : sizes()) {
      for (bool specials : {false, true}) {
        const auto x = values(n, 7 + n, 1e3f, specials), w = values(n, 8 + n, 1.0f, specials);
        const double s1 = ops->sum_squares(x.data(), n), s2 = ref_.sum_squares(x.data(), n);
        if (std::isnan(s2)) {
          ASSERT_TRUE(std::isnan(s1));
        } else {
          ASSERT_EQ(std::memcmp(&s1, &s2, 8), 0) << label(*ops, "sum_squares", n);
        }
        std::vector<float> a(n), b(n);
        for (const float* wp : {w.data(), static_cast<const float*>(nullptr)}) {
          ops->scale_mul(x.data(), 0.37f, wp, n, a.data());
          ref_.scale_mul(x.data(), 0.37f, wp, n, b.data());
          expect_same(a, b, label(*ops, "scale_mul", n));
        }
        auto ya = w, yb = w;
        ops->add(ya.data(), x.data(), n);
        ref_.add(yb.data(), x.data(), n);
        expect_same(ya, yb, label(*ops, "add", n));
        ops->mul(ya.data(), x.data(), n);
        ref_.mul(yb.data(), x.data(), n);
        expect_same(ya, yb, label(*ops, "mul", n));
        ops->scale(ya.data(), -1.5f, n);
        ref_.scale(yb.data(), -1.5f, n);
        expect_same(ya, yb, label(*ops, "scale", n));
      }
    }
  }
}

TEST_F(ElementwiseTwin, RopeRotateEqualsScalarBitwise) {
  for (const ElementwiseOps* ops : tables_) {
    for (RopeMode mode : {RopeMode::kNormal, RopeMode::kNeox}) {
      for (int64_t head_dim : {2, 6, 64, 67, 128}) {
        for (int64_t n_rot = 2; n_rot <= head_dim; n_rot += (n_rot < 40 ? 2 : 30)) {
          const int64_t heads = 3;
          const auto c = values(n_rot / 2, 10 + n_rot, 1.0f, false);
          const auto s = values(n_rot / 2, 11 + n_rot, 1.0f, false);
          auto a = values(heads * head_dim, 12 + head_dim, 2.0f, false), b = a;
          ops->rope_rotate(a.data(), heads, head_dim, mode, n_rot, c.data(), s.data());
          ref_.rope_rotate(b.data(), heads, head_dim, mode, n_rot, c.data(), s.data());
          expect_same(a, b, label(*ops, mode == RopeMode::kNeox ? "rope neox" : "rope normal",
                                  n_rot) + " head_dim " + std::to_string(head_dim));
        }
      }
    }
  }
}

// The public functions run the chosen table (whatever it is here) and so equal the twin.
TEST(ElementwiseDispatch, PublicFunctionsEqualScalarTwin) {
  const ElementwiseOps& ref = elementwise_scalar_ops();
  const int64_t n = 2048 + 3, rows = 3;
  const auto g = values(n, 20, 4.0f, true), u = values(n, 21, 2.0f, true);
  std::vector<float> a(n), b(n);
  silu_mul(g.data(), u.data(), n, a.data());
  ref.silu_mul(g.data(), u.data(), n, b.data());
  expect_same(a, b, "silu_mul");
  const auto x = values(rows * n, 22, 3.0f, false), w = values(n, 23, 1.0f, false);
  std::vector<float> y(rows * n), want(rows * n);
  rms_norm(x.data(), w.data(), rows, n, 1e-6f, y.data());
  for (int64_t r = 0; r < rows; ++r) {
    const double mean = ref.sum_squares(x.data() + r * n, n) / static_cast<double>(n);
    const float scale = static_cast<float>(1.0 / std::sqrt(mean + 1e-6f));
    ref.scale_mul(x.data() + r * n, scale, w.data(), n, want.data() + r * n);
  }
  expect_same(y, want, std::string("rms_norm via ") + isa_name(elementwise_ops().isa));
}

}  // namespace
}  // namespace keel::kernels
