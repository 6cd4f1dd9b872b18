// The law for the end of a bad period (bad_period.h): its ways of ending, their sources,
// and the arithmetic of a log-normal mixture conditioned on the period's age.
#include "forecast/bad_period.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "absl/strings/str_format.h"
#include "planner/formulas.h"

namespace flightplan::forecast {
namespace {

constexpr double kDay = 86400;

// P(length > t) of a log-normal of this median and sigma.
double Survival(const EndingWay& w, double t) {
  if (t <= 0) return 1;
  return 0.5 * std::erfc(std::log(t / w.median_seconds) / (w.sigma * std::sqrt(2.0)));
}

// The prior counts as this many observations when the evidence moves the human scales.
constexpr double kPriorObservations = 2;

std::string Duration(double seconds) {
  if (seconds < 2 * 3600) return absl::StrFormat("%.0f min", seconds / 60);
  if (seconds < 2 * kDay) return absl::StrFormat("%.1f h", seconds / 3600);
  return absl::StrFormat("%.1f days", seconds / kDay);
}

}  // namespace

const std::array<EndingWay, 4>& EndingWays() {
  static const std::array<EndingWay, 4> ways = {{
      // Automation: detected, diagnosed and recovered in minutes. MegaScale (Jiang et al.,
      // NSDI'24, sections 5-6): detection and diagnosis under 10 min, catch-up under 15,
      // more than 90% of faults fixed automatically; Llama 3 (Dubey et al. 2024, 3.3.4):
      // 466 interruptions in 54 days, manual intervention 3 times.
      {"automation", 600, 1.0, 0.55},
      // A fail-slow that resolves itself: Greyhound (Wu et al., ATC'25; arXiv 2410.12588),
      // compute fail-slows 10 min on average, network ones 24 min (under 1 to over 100), at
      // 512-1,024 GPUs 72 min, at most about 10 h.
      {"self-resolving", 2400, 1.3, 0.30},
      // A human finds and fixes it (a bad node, a straggler, the fabric, supply): BLOOM-176B's
      // slow node, about 3 days (Apr 28 - May 1, 2022), and its GPU crashes, 6-18 h
      // (bigscience-workshop/bigscience, train/tr11-176B-ml/chronicles.md); OPT-175B's
      // outages of 1.1-1.3 days and its two-week crisis (facebookresearch/metaseq,
      // projects/OPT/chronicles, the 56% update); manual diagnosis "hours to days" (Minder,
      // arXiv 2411.01791). Median 2 days, sigma 1.5: P(< 1 day) 0.32, P(< 7 days) 0.80.
      {"human", 2 * kDay, 1.5, 0.12},
      // An obscure fault: Gunawi et al., FAST'18 "Fail-Slow at Scale", 3.5, of 101 incidents
      // found in hours 13%, days 13%, weeks 11%, months 17% (unknown 45%): among the known,
      // 0.25 within a day, 0.49 within a week, 0.69 within a month, which median 7 days and
      // sigma 2.9 fit. A quarter of the human ways' weight: incident reports lean to the bad
      // cases, and months are rarer in training runs that are watched daily.
      {"obscure", 7 * kDay, 2.9, 0.03},
  }};
  return ways;
}

BadPeriodLaw::BadPeriodLaw(PeriodKind kind, double age_seconds, double detected_at_seconds, double never,
                           const PeriodEvidence& evidence)
    : age_(std::max(0.0, age_seconds)) {
  for (const EndingWay& w : EndingWays()) {
    if (kind == PeriodKind::kHuman && w.median_seconds < kDay) continue;
    ways_.push_back(w);
  }
  // The evidence moves the human scales (every way of a day or more) by the mean log ratio
  // of the observed lengths to the human median, the prior counting as kPriorObservations.
  const double human = EndingWays()[2].median_seconds;
  double log_sum = 0, n = 0;
  auto observe = [&](double d) {
    if (d <= 0) return;
    log_sum += std::log(d / human);
    ++n;
  };
  for (double d : evidence.ended_seconds) observe(d);
  observe(evidence.team_fix_seconds);
  factor_ = std::exp(log_sum / (kPriorObservations + n));
  double total = 0;
  for (EndingWay& w : ways_) {
    if (w.median_seconds >= kDay) w.median_seconds *= factor_;
    total += w.weight;
  }
  for (EndingWay& w : ways_) w.weight /= total;
  // Each way in proportion to its weight times its odds of lasting `age`; "never" against
  // the ways' odds of lasting from detection to `age`.
  double at_age = 0, at_detection = 0;
  for (const EndingWay& w : ways_) {
    at_age += w.weight * Survival(w, age_);
    at_detection += w.weight * Survival(w, std::min(age_, detected_at_seconds));
  }
  const double odds = at_detection > 0 ? at_age / at_detection : 0;
  never = std::clamp(never, 0.0, 1.0);
  never_ = never >= 1 ? 1 : never / (never + (1 - never) * odds);
  for (EndingWay& w : ways_) {
    survival_at_age_.push_back(Survival(w, age_));
    w.weight = at_age > 0 ? (1 - never_) * w.weight * survival_at_age_.back() / at_age : 0;
  }
}

double BadPeriodLaw::EndsWithin(double x_seconds) const {
  const double ending = 1 - never_;
  if (ending <= 0) return 0;
  double p = 0;
  for (size_t k = 0; k < ways_.size(); ++k) {
    if (survival_at_age_[k] <= 0) continue;
    p += ways_[k].weight / ending * (1 - Survival(ways_[k], age_ + std::max(0.0, x_seconds)) / survival_at_age_[k]);
  }
  return p;
}

double BadPeriodLaw::MedianLeft() const {
  double lo = std::log(1.0), hi = std::log(1e10);
  if (EndsWithin(1e10) < 0.5) return std::numeric_limits<double>::infinity();
  for (int i = 0; i < 60; ++i) {
    const double mid = 0.5 * (lo + hi);
    (EndsWithin(std::exp(mid)) < 0.5 ? lo : hi) = mid;
  }
  return std::exp(hi);
}

double BadPeriodLaw::DrawLeft(double u_way, double u_time) const {
  if (u_way < never_ || ways_.empty()) return std::numeric_limits<double>::infinity();
  double acc = never_;
  size_t k = 0;
  for (; k + 1 < ways_.size(); ++k) {
    acc += ways_[k].weight;
    if (u_way < acc) break;
  }
  const EndingWay& w = ways_[k];
  // Past `age`: the upper tail S' = S(age) x (1 - u), and the length whose survival is S'.
  const double tail = std::max(survival_at_age_[k] * (1 - u_time), 1e-300);
  const double length = w.median_seconds * std::exp(-w.sigma * planner::NormalQuantile(tail));
  return std::max(0.0, length - age_);
}

std::string DescribeLaw(const BadPeriodLaw& law) {
  const double age = law.age_seconds();
  const double horizon = age < 2 * kDay ? kDay : 7 * kDay;
  const double median = law.MedianLeft();
  return absl::StrFormat("a period %s old ends within %s in %.0f%% of the records' cases (median %s more)%s",
                         Duration(age), horizon == kDay ? "a day" : "a week", 100 * law.EndsWithin(horizon),
                         std::isfinite(median) ? Duration(median) : "never",
                         law.never() > 0.005 ? absl::StrFormat("; %.0f%% that it never ends", 100 * law.never()) : "");
}

}  // namespace flightplan::forecast
