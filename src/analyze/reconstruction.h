#pragma once
// How well TriAttention's trigonometric series predicts a query head's real attention logits
// as a function of the query-key distance Δ. For a query at position t and a key at
// t−Δ (same window), the actual logit is the post-RoPE dot product written in pre-RoPE bands,
//   a(t, Δ) = Re Σ_f q_f(t)·conj(k_f(t−Δ))·e^{iω_f Δ},
// and the series predicts, from the head's centres alone,
//   p(Δ)    = Σ_f |E q_f||E k_f| cos(ω_f Δ + arg E q_f − arg E k_f) = Re Σ_f c_f e^{iω_f Δ},
// with c_f = E q_f · conj(E k_f). Both leave out 1/√d and YaRN's fs² (common factors).
#include <complex>
#include <cstdint>
#include <span>
#include <vector>

#include "analyze/qk_capture.h"

namespace triattn {

// One query head of the capture, with its KV head and the centres' cross products c_f.
struct HeadCurveInput {
  int layer = 0, head = 0, kv_head = 0;
  std::vector<std::complex<double>> cross;  // c_f = E q_f · conj(E k_f), one per band
};

std::vector<std::complex<double>> centre_cross(std::span<const float> q_re, std::span<const float> q_im,
                                               std::span<const float> k_re, std::span<const float> k_im);

double predicted_logit(std::span<const std::complex<double>> cross, std::span<const double> omega, double delta);
double actual_logit(const QkCapture& cap, const HeadCurveInput& h, std::span<const double> omega, int64_t query_token,
                    int64_t delta);

// r̄: for every query position t (inside its window) the Pearson correlation over
// Δ = 1, 2, 4, … ≤ t between a(t, Δ) and p(Δ), then the mean over positions. Positions with
// fewer than kMinCorrelationPoints distances (t < 4) are skipped, and so are positions where
// either vector is constant (max − min ≤ kConstantTolerance · max |value|: no correlation
// is defined). rbar is NaN when no position counts.
inline constexpr int kMinCorrelationPoints = 3;
inline constexpr double kConstantTolerance = 1e-9;
struct Reconstruction {
  double rbar = 0;
  int64_t positions = 0;  // positions that counted
};
Reconstruction reconstruction_correlation(const QkCapture& cap, const HeadCurveInput& h, std::span<const double> omega);

// Pearson correlation of two equally long vectors; NaN when either is constant (as above).
double pearson(std::span<const double> a, std::span<const double> b);

// The mean actual logit at every distance Δ = 1 … (longest window − 1), over all pairs
// (t, t−Δ) inside one window, beside p(Δ).
struct DistanceCurve {
  std::vector<int64_t> delta;
  std::vector<double> actual_mean, predicted;
  std::vector<int64_t> pairs;  // pairs averaged at each Δ
};
DistanceCurve distance_curve(const QkCapture& cap, const HeadCurveInput& h, std::span<const double> omega);

}  // namespace triattn
