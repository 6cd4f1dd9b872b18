// The plan engine's scalar formulas against published figures and hand-worked cases.
#include "planner/formulas.h"

#include <cmath>

#include "gtest/gtest.h"

namespace flightplan::planner {
namespace {

// The quantile the failure budget's large counts and the bad-period law draw with.
TEST(Formulas, NormalQuantileInvertsTheNormalCdf) {
  for (double p : {1e-300, 1e-12, 1e-6, 0.001, 0.02425, 0.1, 0.3, 0.5, 0.77, 0.97575, 0.999, 1 - 1e-9}) {
    const double z = NormalQuantile(p);
    EXPECT_NEAR(0.5 * std::erfc(-z / std::sqrt(2.0)), p, 1e-9 * std::max(p, 1e-3)) << p;
  }
  EXPECT_DOUBLE_EQ(NormalQuantile(0.5), 0);
  EXPECT_NEAR(NormalQuantile(0.975), 1.959963984540054, 1e-9);
}

// Relative closeness: |a - b| <= tol * |b|.
::testing::AssertionResult Near(double actual, double expected, double tol) {
  if (std::fabs(actual - expected) <= tol * std::fabs(expected)) {
    return ::testing::AssertionSuccess();
  }
  return ::testing::AssertionFailure() << actual << " is not within " << tol * 100 << "% of " << expected;
}

struct ComputeCase {
  const char* run;
  double params, tokens, published_flops, tolerance;
};

TEST(Formulas, SixNDMatchesPublishedTrainingCompute) {
  const ComputeCase cases[] = {
      // Brown et al. 2020, table D.1: GPT-3 175B, 3.14e23 FLOPs.
      {"GPT-3 175B", 174.6e9, 300e9, 3.14e23, 0.01},
      // Hoffmann et al. 2022: Chinchilla, 5.76e23 FLOPs (Gopher's budget).
      {"Chinchilla", 70e9, 1.4e12, 5.76e23, 0.025},
  };
  for (const ComputeCase& c : cases) {
    EXPECT_TRUE(Near(DenseFlopsPerToken(c.params) * c.tokens, c.published_flops, c.tolerance)) << c.run;
  }
  // GPT-3 in PF-days: 3,640 (Brown et al. 2020, table D.1).
  EXPECT_TRUE(Near(DenseFlopsPerToken(174.6e9) * 300e9 / (1e15 * 86400), 3640, 0.01));
}

TEST(Formulas, ImpliedMfuMatchesPaLM) {
  // Chowdhery et al. 2022, sec. 4.1 / app. B: 540.35e9 params, 6,144 TPU v4 at 275e12,
  // 238.3e3 tokens/s -> 45.7% MFU without attention FLOPs.
  const double mfu = ImpliedMfu(DenseFlopsPerToken(540.35e9), 238.3e3, 6144, 275e12);
  EXPECT_NEAR(mfu, 0.457, 0.005);
}

TEST(Formulas, ImpliedMfuOfLlama2FromGpuHours) {
  // Llama 2 70B model card: 2.0e12 tokens in 1,720,320 A100 GPU-hours -> ~43% MFU.
  const double tokens_per_gpu_second = 2.0e12 / (1720320.0 * 3600.0);
  EXPECT_NEAR(ImpliedMfu(DenseFlopsPerToken(70e9), tokens_per_gpu_second, 1, 312e12), 0.43, 0.01);
}

TEST(Formulas, AttentionTermFollowsPaLM) {
  // 12 x L x H x Q x T with H x Q = hidden: 80 x 8192 x 8192 x 12 = 64.4e9 per token.
  EXPECT_DOUBLE_EQ(AttentionFlopsPerToken(80, 8192, 8192), 12.0 * 80 * 8192 * 8192);
  EXPECT_DOUBLE_EQ(AttentionFlopsPerToken(0, 8192, 8192), 0);
}

TEST(Formulas, StepsRoundUpAndKeepTheLastStepsTokens) {
  EXPECT_EQ(CountSteps(10, 3).steps, 4u);
  EXPECT_EQ(CountSteps(10, 3).last_step_tokens, 1u);
  EXPECT_EQ(CountSteps(12, 3).steps, 4u);
  EXPECT_EQ(CountSteps(12, 3).last_step_tokens, 3u);
  // The flagship: 10e12 tokens at 2,048 x 8,192 tokens per step.
  const StepCount flagship = CountSteps(10'000'000'000'000ull, 2048ull * 8192);
  EXPECT_EQ(flagship.steps, 596047u);
  EXPECT_EQ((flagship.steps - 1) * 2048ull * 8192 + flagship.last_step_tokens, 10'000'000'000'000ull);
  EXPECT_EQ(CountSteps(10, 0).steps, 0u);
  // No overflow near 2^64.
  EXPECT_EQ(CountSteps(18446744073709551615ull, 2).steps, 9223372036854775808ull);
  EXPECT_EQ(CountSteps(18446744073709551615ull, 2).last_step_tokens, 1u);
}

TEST(Formulas, ZeroStagesMatchTheZeroPaper) {
  // Rajbhandari et al. 2020, figure 1: 7.5B parameters, Nd = 64, K = 12, fp16 weights and
  // gradients: 120 GB, 31.4 GB, 16.6 GB, 1.88 GB per device for stages 0-3.
  const StateBytesPerParam mixed{2, 2, 12};
  EXPECT_TRUE(Near(ZeroStateBytes(7.5e9, 64, 0, mixed), 120e9, 0.005));
  EXPECT_TRUE(Near(ZeroStateBytes(7.5e9, 64, 1, mixed), 31.4e9, 0.005));
  EXPECT_TRUE(Near(ZeroStateBytes(7.5e9, 64, 2, mixed), 16.6e9, 0.005));
  EXPECT_TRUE(Near(ZeroStateBytes(7.5e9, 64, 3, mixed), 1.875e9, 0.005));
}

TEST(Formulas, YoungAndDalyIntervals) {
  // Hand-worked: delta = 600 s, M = 86,400 s.
  // Young: sqrt(2 x 600 x 86400) = 10,182.3 s.
  // Daly: 10,182.3 x (1 + sqrt(600/172800)/3 + (600/172800)/9) - 600 = 9,786.2 s.
  EXPECT_NEAR(YoungIntervalSeconds(600, 86400), 10182.34, 0.01);
  EXPECT_NEAR(DalyIntervalSeconds(600, 86400), 9786.2, 0.1);
  // delta >= 2M: checkpointing costs more than it saves; Daly gives tau = M.
  EXPECT_DOUBLE_EQ(DalyIntervalSeconds(1000, 400), 400);
  // Daly converges to Young minus delta as delta / M -> 0.
  EXPECT_NEAR(DalyIntervalSeconds(1, 1e9), YoungIntervalSeconds(1, 1e9) - 1, 1.0);
}

TEST(Formulas, JobMtbfFromNodes) {
  // 512 nodes at 2,000 h each: 3.906 h for the job.
  EXPECT_NEAR(JobMtbfSeconds(2000 * 3600.0, 512), 2000 * 3600.0 / 512, 1e-9);
  // 10 failures per 1,000 node-days is a node MTBF of 100 days.
  EXPECT_DOUBLE_EQ(NodeMtbfFromRateSeconds(10), 100 * 86400.0);
}

TEST(Formulas, PoissonQuantiles) {
  // Tables: P(X <= 13 | 10) = 0.8645, P(X <= 14 | 10) = 0.9165.
  EXPECT_NEAR(PoissonCdf(10, 13), 0.8645, 1e-4);
  EXPECT_NEAR(PoissonCdf(10, 14), 0.9165, 1e-4);
  EXPECT_EQ(PoissonQuantile(10, 0.9), 14u);
  EXPECT_EQ(PoissonQuantile(10, 0.86), 13u);
  // P(X <= 0 | 1) = 0.368, P(X <= 1 | 1) = 0.736.
  EXPECT_EQ(PoissonQuantile(1, 0.5), 1u);
  EXPECT_EQ(PoissonQuantile(1, 0.3), 0u);
  EXPECT_EQ(PoissonQuantile(0, 0.9), 0u);
  // Garbage in, no hang: NaN and infinity give 0.
  EXPECT_EQ(PoissonQuantile(std::nan(""), 0.9), 0u);
  EXPECT_EQ(PoissonQuantile(HUGE_VAL, 0.9), 0u);
  // Beyond 1e6 the Cornish-Fisher expansion: mean + 1.2816 sd + (1.2816^2 - 1)/6 - 0.5.
  // z(0.9) = 1.2815516.
  EXPECT_NEAR(static_cast<double>(PoissonQuantile(1e8, 0.9)), 1e8 + 1.2815516 * 1e4, 2);
  EXPECT_NEAR(static_cast<double>(PoissonQuantile(1e14, 0.9)), 1e14 + 1.2815516 * 1e7, 2);
  EXPECT_GT(PoissonQuantile(1e15, 0.9), static_cast<uint64_t>(1e15));
  // Where both apply they agree: the sum at 9e5 vs the expansion at 1.1e6, scaled.
  EXPECT_NEAR(static_cast<double>(PoissonQuantile(9e5, 0.9)), 9e5 + 1.2815516 * std::sqrt(9e5), 2);
  // A mean of 10,000: the normal approximation gives 10,000 + 1.2816 x 100 = 10,128.2.
  const double big = static_cast<double>(PoissonQuantile(10000, 0.9));
  EXPECT_NEAR(big, 10128.6, 2);
  EXPECT_GE(PoissonCdf(10000, static_cast<uint64_t>(big)), 0.9);
  EXPECT_LT(PoissonCdf(10000, static_cast<uint64_t>(big) - 1), 0.9);
}

}  // namespace
}  // namespace flightplan::planner
