// The element-wise kernels written once over a vector-traits class V, instantiated by
// elementwise_avx2.cpp and elementwise_avx512.cpp. Each lane performs exactly the operation
// sequence of elementwise_defs.h; tails use masked loads/stores of the same vector code, and
// sums use the defs' 32-lane structure, so results equal the scalar table's bits.
//
// Include only from a translation unit that has set the vector target and
// fp-contract=off (a fused multiply-add would change bits) before any include.
//
// V provides: F (float vector), M (lane mask), D (double vector); kLanes, kDLanes;
// load/store, load_n/store_n (first n lanes, others zero / untouched), set1, add, sub, mul,
// div, neg, min/max (MINPS/MAXPS semantics), exp (exp_defined), abs, copysign, lt, select,
// swap_pairs (lanes 2i <-> 2i+1), hmax (any order; see softmax), widen (kDLanes floats to
// double), dfma, dstore.
#pragma once

#include <cstdint>
#include <limits>
#include <vector>

#include "kernels/elementwise_defs.h"
#include "kernels/elementwise_isa.h"

namespace keel::kernels::simd {

// Applies op to every lane of [0, n): full vectors, then one masked vector for the tail.
template <class V, class Op>
inline void for_lanes(int64_t n, Op op) {
  int64_t i = 0;
  for (; i + V::kLanes <= n; i += V::kLanes) op(i, V::kLanes);
  if (i < n) op(i, static_cast<int>(n - i));
}

template <class V>
inline typename V::F load_part(const float* p, int cnt) {
  return cnt == V::kLanes ? V::load(p) : V::load_n(p, cnt);
}
template <class V>
inline void store_part(float* p, int cnt, typename V::F v) {
  if (cnt == V::kLanes) {
    V::store(p, v);
  } else {
    V::store_n(p, cnt, v);
  }
}

template <class V>
inline typename V::F silu(typename V::F x) {
  const auto e = V::exp(V::neg(x));
  return V::div(x, V::add(V::set1(1.0f), e));
}

template <class V>
inline typename V::F gelu_tanh(typename V::F x) {
  const auto t = V::add(V::mul(V::set1(elem::kGeluCoef), V::mul(x, x)), V::set1(1.0f));
  const auto m = V::mul(V::mul(V::set1(elem::kGeluNeg2Sqrt2OverPi), x), t);
  return V::div(x, V::add(V::set1(1.0f), V::exp(m)));
}

template <class V>
inline typename V::F tanh_defined(typename V::F x) {
  using F = typename V::F;
  const F z = V::mul(x, x);
  F p = V::add(V::mul(V::set1(elem::kTanhP0), z), V::set1(elem::kTanhP1));
  p = V::add(V::mul(p, z), V::set1(elem::kTanhP2));
  p = V::add(V::mul(p, z), V::set1(elem::kTanhP3));
  p = V::add(V::mul(p, z), V::set1(elem::kTanhP4));
  const F small = V::add(V::mul(V::mul(p, z), x), x);
  const F ax = V::abs(x);
  const F e = V::exp(V::add(ax, ax));
  const F r = V::sub(V::set1(1.0f), V::div(V::set1(2.0f), V::add(e, V::set1(1.0f))));
  return V::copysign(V::select(V::lt(ax, V::set1(elem::kTanhSmall)), small, r), x);
}

template <class V>
void silu_mul(const float* gate, const float* up, int64_t n, float* out) {
  for_lanes<V>(n, [&](int64_t i, int cnt) {
    const auto g = load_part<V>(gate + i, cnt), u = load_part<V>(up + i, cnt);
    store_part<V>(out + i, cnt, V::mul(silu<V>(g), u));
  });
}

template <class V>
void gelu_tanh_mul(const float* gate, const float* up, int64_t n, float* out) {
  for_lanes<V>(n, [&](int64_t i, int cnt) {
    const auto g = load_part<V>(gate + i, cnt), u = load_part<V>(up + i, cnt);
    store_part<V>(out + i, cnt, V::mul(gelu_tanh<V>(g), u));
  });
}

template <class V>
void swiglu_oai(const float* gate, const float* up, int64_t n, float alpha, float limit,
                float* out) {
  const auto lim = V::set1(limit), neg_lim = V::set1(-limit), neg_alpha = V::set1(-alpha);
  const auto one = V::set1(1.0f);
  for_lanes<V>(n, [&](int64_t i, int cnt) {
    const auto g = V::min(lim, load_part<V>(gate + i, cnt));
    const auto u = V::max(neg_lim, V::min(lim, load_part<V>(up + i, cnt)));
    const auto glu = V::div(g, V::add(one, V::exp(V::mul(neg_alpha, g))));
    store_part<V>(out + i, cnt, V::mul(glu, V::add(u, one)));
  });
}

template <class V>
void softcap(float* x, int64_t n, float cap) {
  const auto c = V::set1(cap);
  for_lanes<V>(n, [&](int64_t i, int cnt) {
    const auto v = load_part<V>(x + i, cnt);
    store_part<V>(x + i, cnt, V::mul(c, tanh_defined<V>(V::div(v, c))));
  });
}

// Σ widen(x[i]) (square: Σ x[i]²) in elementwise_defs.h's lane structure.
template <class V, bool kSquare>
double lane_sum(const float* x, int64_t n) {
  constexpr int kAcc = elem::kSumLanes / V::kDLanes;
  typename V::D acc[kAcc];
  for (auto& a : acc) a = V::dzero();
  int64_t i = 0;
  for (; i + elem::kSumLanes <= n; i += elem::kSumLanes) {
    for (int k = 0; k < kAcc; ++k) {
      const auto d = V::widen(x + i + k * V::kDLanes);
      acc[k] = kSquare ? V::dfma(d, d, acc[k]) : V::dadd(acc[k], d);  // x·x exact in double
    }
  }
  double s[elem::kSumLanes];
  for (int k = 0; k < kAcc; ++k) V::dstore(s + k * V::kDLanes, acc[k]);
  double sum = elem::fold_partials(s);
  for (; i < n; ++i) {
    const double v = x[i];
    sum += kSquare ? v * v : v;
  }
  return sum;
}

template <class V>
double sum_squares(const float* x, int64_t n) {
  return lane_sum<V, true>(x, n);
}

template <class V>
void softmax(float* x, int64_t n) {
  // The max's order of evaluation does not matter: it is exact, ±0 give the same x − max
  // wherever it matters (exp(±0) = 1), and a NaN anywhere makes every output NaN.
  const float ninf = -std::numeric_limits<float>::infinity();
  auto vmax = V::set1(ninf);
  int64_t i = 0;
  for (; i + V::kLanes <= n; i += V::kLanes) vmax = V::max(V::load(x + i), vmax);
  float max = V::hmax(vmax);
  for (; i < n; ++i) max = elem::max_ps(x[i], max);
  const auto m = V::set1(max);
  for_lanes<V>(n, [&](int64_t j, int cnt) {
    store_part<V>(x + j, cnt, V::exp(V::sub(load_part<V>(x + j, cnt), m)));
  });
  const float inv = static_cast<float>(1.0 / lane_sum<V, false>(x, n));
  const auto vi = V::set1(inv);
  for_lanes<V>(n, [&](int64_t j, int cnt) {
    store_part<V>(x + j, cnt, V::mul(load_part<V>(x + j, cnt), vi));
  });
}

template <class V>
void scale_mul(const float* x, float scale, const float* w, int64_t n, float* y) {
  const auto s = V::set1(scale);
  for_lanes<V>(n, [&](int64_t i, int cnt) {
    auto v = V::mul(load_part<V>(x + i, cnt), s);
    if (w) v = V::mul(v, load_part<V>(w + i, cnt));
    store_part<V>(y + i, cnt, v);
  });
}

template <class V>
void add(float* y, const float* x, int64_t n) {
  for_lanes<V>(n, [&](int64_t i, int cnt) {
    store_part<V>(y + i, cnt, V::add(load_part<V>(y + i, cnt), load_part<V>(x + i, cnt)));
  });
}

template <class V>
void mul(float* y, const float* x, int64_t n) {
  for_lanes<V>(n, [&](int64_t i, int cnt) {
    store_part<V>(y + i, cnt, V::mul(load_part<V>(y + i, cnt), load_part<V>(x + i, cnt)));
  });
}

template <class V>
void scale(float* y, float s, int64_t n) {
  const auto vs = V::set1(s);
  for_lanes<V>(n, [&](int64_t i, int cnt) {
    store_part<V>(y + i, cnt, V::mul(load_part<V>(y + i, cnt), vs));
  });
}

// Neox: the pair halves are contiguous, a' = a·c − b·s, b' = b·c + a·s lane by lane.
// Normal: pairs interleaved; with cc = (c0 c0 c1 c1 …), ss = (−s0 s0 −s1 s1 …) and
// w = swap_pairs(v): v' = v·cc + w·ss, i.e. a·c + b·(−s) = a·c − b·s and b·c + a·s.
template <class V>
void rope_rotate(float* v, int64_t n_heads, int64_t head_dim, RopeMode mode, int64_t n_rot,
                 const float* c, const float* s) {
  const int64_t half = n_rot / 2;
  if (mode == RopeMode::kNeox) {
    for (int64_t h = 0; h < n_heads; ++h) {
      float* a = v + h * head_dim;
      float* b = a + half;
      for_lanes<V>(half, [&](int64_t i, int cnt) {
        const auto x0 = load_part<V>(a + i, cnt), x1 = load_part<V>(b + i, cnt);
        const auto vc = load_part<V>(c + i, cnt), vs = load_part<V>(s + i, cnt);
        store_part<V>(a + i, cnt, V::sub(V::mul(x0, vc), V::mul(x1, vs)));
        store_part<V>(b + i, cnt, V::add(V::mul(x1, vc), V::mul(x0, vs)));
      });
    }
    return;
  }
  thread_local std::vector<float> table;  // cc: [n_rot], ss: [n_rot]
  table.resize(static_cast<size_t>(2 * n_rot));
  float* cc = table.data();
  float* ss = cc + n_rot;
  for (int64_t i = 0; i < half; ++i) {
    cc[2 * i] = cc[2 * i + 1] = c[i];
    ss[2 * i] = -s[i];
    ss[2 * i + 1] = s[i];
  }
  for (int64_t h = 0; h < n_heads; ++h) {
    float* hv = v + h * head_dim;
    for_lanes<V>(n_rot, [&](int64_t i, int cnt) {
      const auto x = load_part<V>(hv + i, cnt);
      const auto y = V::add(V::mul(x, load_part<V>(cc + i, cnt)),
                            V::mul(V::swap_pairs(x), load_part<V>(ss + i, cnt)));
      store_part<V>(hv + i, cnt, y);
    });
  }
}

template <class V>
ElementwiseOps make_ops(ElemIsa isa) {
  return ElementwiseOps{isa,           silu_mul<V>,    gelu_tanh_mul<V>, swiglu_oai<V>,
                        softcap<V>,    softmax<V>,     sum_squares<V>,   scale_mul<V>,
                        add<V>,        mul<V>,         scale<V>,         rope_rotate<V>};
}

}  // namespace keel::kernels::simd
