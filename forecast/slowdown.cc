#include "forecast/slowdown.h"

#include <algorithm>
#include <cmath>

namespace flightplan::forecast {
namespace {

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  const size_t mid = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(mid), v.end());
  double m = v[mid];
  if (v.size() % 2 == 0) m = (m + *std::max_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(mid))) / 2;
  return m;
}

struct Reference {
  double log_pace = 0, sigma = 0;
};

Reference ReferenceOf(const std::deque<PaceBin>& bins) {
  std::vector<double> x;
  x.reserve(bins.size());
  for (const PaceBin& b : bins) x.push_back(b.LogPace());
  Reference r;
  if (x.empty()) return r;
  std::sort(x.begin(), x.end());
  const size_t trim = x.size() / 10;
  double sum = 0;
  for (size_t i = trim; i < x.size() - trim; ++i) sum += x[i];
  r.log_pace = sum / static_cast<double>(x.size() - 2 * trim);
  const double median = Median(x);
  for (double& v : x) v = std::abs(v - median);
  r.sigma = std::max(kSlowdownMinSigma, 1.4826 * Median(x));
  return r;
}

// The CUSUM's allowance: half the smallest shift sought, or half a sigma when the noise is
// larger (a smaller one would signal on noise alone).
double Allowance(double sigma) { return std::max(std::log1p(kSlowdownMinShift / 2), sigma / 2); }

// The index in [lo, hi] (clamped to leave a bin after it) where `bins` splits best into a
// faster part before and a slower part after: the largest sqrt(a b / n) (mean after - mean
// before) over the log paces, a before and b after.
double RatioAt(const SlowdownState& s, absl::Time now, absl::Duration window, double ref);

size_t BestSplit(const std::vector<PaceBin>& bins, size_t lo, size_t hi) {
  const size_t n = bins.size();
  hi = std::min(hi, n - 1);
  lo = std::min(lo, hi);
  std::vector<double> prefix(n + 1, 0);
  for (size_t i = 0; i < n; ++i) prefix[i + 1] = prefix[i] + bins[i].LogPace();
  size_t best = hi;
  double best_stat = -1;
  for (size_t t = std::max<size_t>(lo, 1); t <= hi; ++t) {
    const double a = static_cast<double>(t), b = static_cast<double>(n - t);
    const double before = prefix[t] / a, after = (prefix[n] - prefix[t]) / b;
    const double stat = std::sqrt(a * b / static_cast<double>(n)) * (after - before);
    if (stat > best_stat) best_stat = stat, best = t;
  }
  return best;
}

void PushReference(SlowdownState& s, const PaceBin& b) {
  s.reference.push_back(b);
  while (s.reference.size() > kSlowdownReferenceBins) s.reference.pop_front();
}

void AddToStretch(SlowStretch& st, const PaceBin& b) {
  st.seconds += b.seconds;
  st.tokens += b.tokens;
}

void KeepStretches(SlowdownState& s) {
  while (s.stretches.size() > kMaxSlowStretches) {
    s.evicted_cost += s.stretches.front().Cost();
    s.stretches.erase(s.stretches.begin());
  }
}

void EndActive(SlowdownState& s, absl::Time at) {
  if (s.stretches.empty() || !s.stretches.back().active) return;
  SlowStretch& st = s.stretches.back();
  st.active = false;
  st.end = std::max(at, st.start);
}

void CloseBin(SlowdownState& s) {
  const PaceBin b = s.bin;
  s.bin = PaceBin();
  s.recent.push_back(b);
  while (s.recent.size() > kSlowdownRecentBins) s.recent.pop_front();
  const bool active = !s.stretches.empty() && s.stretches.back().active;
  if (!active && s.reference.size() < kSlowdownWarmupBins) {
    PushReference(s, b);
    return;
  }
  const Reference ref =
      active ? Reference{s.stretches.back().reference_log_pace, 0} : Reference{s.ref_log_pace, s.ref_sigma};
  const double z = b.LogPace() - ref.log_pace;
  if (!active) {
    const double k = Allowance(ref.sigma), h = kSlowdownThresholdSigmas * ref.sigma;
    s.cusum = std::max(0.0, s.cusum + z - k);
    if (s.cusum == 0) {
      // Normal after all: the bins held as evidence join the reference.
      for (const PaceBin& p : s.pending) PushReference(s, p);
      s.pending.clear();
      PushReference(s, b);
      return;
    }
    s.pending.push_back(b);
    if (s.cusum >= h) {
      // A slowdown. It started where the CUSUM last left zero, or before: a small shift
      // lets the CUSUM touch zero again in its first hours, and those bins joined the
      // reference. The split of the reference and the evidence into "before" and "after"
      // that best tells them apart (the binary-segmentation statistic, over splits no later
      // than the CUSUM's) dates it; the bins after the split leave the reference.
      std::vector<PaceBin> all(s.reference.begin(), s.reference.end());
      const size_t latest = all.size();
      all.insert(all.end(), s.pending.begin(), s.pending.end());
      const size_t split = BestSplit(all, kSlowdownWarmupBins, latest);
      s.reference.assign(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(split));
      SlowStretch st;
      st.start = all[split].start;
      st.reference_log_pace = ReferenceOf(s.reference).log_pace;
      for (size_t i = split; i < all.size(); ++i) AddToStretch(st, all[i]);
      s.pending.clear();
      s.cusum = 0;
      s.back_cusum = 0;
      s.back_pending.clear();
      s.stretches.push_back(st);
      ++s.count;
      KeepStretches(s);
      return;
    }
    while (s.pending.size() > kSlowdownMaxPendingBins) {
      PushReference(s, s.pending.front());
      s.pending.pop_front();
    }
    return;
  }
  // Active: does the pace return to the reference? The test's shift is half the
  // slowdown's, its sigma the reference's as it was.
  SlowStretch& st = s.stretches.back();
  const Reference before{s.ref_log_pace, s.ref_sigma};  // frozen while active
  const double m = std::max(std::log(std::max(st.Factor(), 1.0)), std::log1p(kSlowdownMinShift / 2));
  const double h = kSlowdownThresholdSigmas * before.sigma;
  s.back_cusum = std::max(0.0, s.back_cusum + (m / 2 - z));
  if (s.back_cusum == 0) {
    for (const PaceBin& p : s.back_pending) AddToStretch(st, p);
    s.back_pending.clear();
    AddToStretch(st, b);
    return;
  }
  s.back_pending.push_back(b);
  if (s.back_cusum >= h || s.back_pending.size() > kSlowdownMaxPendingBins) {
    // Back to the reference since the test last left zero: those bins were normal.
    EndActive(s, s.back_pending.front().start);
    for (const PaceBin& p : s.back_pending) PushReference(s, p);
    s.back_pending.clear();
    s.back_cusum = 0;
  }
}

}  // namespace

double PaceBin::LogPace() const { return tokens > 0 && seconds > 0 ? std::log(seconds / tokens) : 0; }

double SlowStretch::Factor() const {
  if (tokens <= 0 || seconds <= 0) return 1;
  return std::exp(std::log(seconds / tokens) - reference_log_pace);
}

double SlowStretch::Cost() const { return std::max(0.0, seconds - tokens * std::exp(reference_log_pace)); }

void AddPace(SlowdownState& s, absl::Time end, double seconds, double tokens, int64_t steps) {
  if (!(seconds > 0) || !(tokens > 0) || !std::isfinite(seconds) || !std::isfinite(tokens)) return;
  if (steps > 0) {
    // A change of the tokens per step by more than 1% is a batch ramp or a new sequence
    // length: the pace changes by design.
    const double per_step = tokens / static_cast<double>(steps);
    if (s.tokens_per_step > 0 && std::abs(per_step / s.tokens_per_step - 1) > 0.01) {
      RestartPace(s, end - absl::Seconds(seconds));
    }
    s.tokens_per_step = per_step;
  }
  if (s.bin.tokens == 0) s.bin.start = end - absl::Seconds(seconds);
  s.bin.end = end;
  s.bin.seconds += seconds;
  s.bin.tokens += tokens;
  if (s.bin.seconds >= kSlowdownBinSeconds) {
    // The reference changes only here and in RestartPace: its figures are refreshed after.
    CloseBin(s);
    RefreshPaceReference(s);
  }
}

void RefreshPaceReference(SlowdownState& s) {
  const Reference r = ReferenceOf(s.reference);
  s.ref_log_pace = r.log_pace;
  s.ref_sigma = r.sigma;
  s.ref_bins = s.reference.size();
}

void RestartPace(SlowdownState& s, absl::Time at) {
  EndActive(s, at);
  s.bin = PaceBin();
  s.recent.clear();
  s.reference.clear();
  s.pending.clear();
  s.back_pending.clear();
  s.cusum = 0;
  s.back_cusum = 0;
  RefreshPaceReference(s);
}

SlowdownReport ReportSlowdown(const SlowdownState& s, double tokens_left, absl::Time now) {
  SlowdownReport r;
  r.count = s.count;
  r.seconds = s.evicted_cost;
  for (const SlowStretch& st : s.stretches) r.seconds += st.Cost();
  if (s.ref_bins >= kSlowdownWarmupBins) {
    r.reference_tokens_per_second = std::exp(-s.ref_log_pace);
    r.noise = s.ref_sigma;
  }
  r.projected_seconds = r.seconds;
  const bool active = !s.stretches.empty() && s.stretches.back().active;
  double ref = 0;
  bool known = active;
  if (active) {
    ref = s.stretches.back().reference_log_pace;
  } else if (s.ref_bins >= kSlowdownWarmupBins) {
    ref = s.ref_log_pace;
    known = true;
  }
  if (known) {
    for (size_t i = 0; i < 3; ++i) r.throughput_ratio[i] = RatioAt(s, now, kThroughputRatioWindows[i], ref);
  }
  if (!s.stretches.empty()) {
    const SlowStretch& st = s.stretches.back();
    r.since = st.start;
    r.until = st.end;
    r.factor = st.Factor();
    r.active = st.active;
    r.node = st.node;
    if (st.active) {
      r.reference_tokens_per_second = std::exp(-st.reference_log_pace);
      r.excess_seconds_per_token = std::exp(st.reference_log_pace) * std::max(0.0, r.factor - 1);
      r.projected_seconds += std::max(0.0, tokens_left) * r.excess_seconds_per_token;
    }
  }
  return r;
}

double ThroughputRatio(const SlowdownState& s, absl::Time now, absl::Duration window) {
  const bool active = !s.stretches.empty() && s.stretches.back().active;
  if (!active && s.ref_bins < kSlowdownWarmupBins) return 0;
  return RatioAt(s, now, window, active ? s.stretches.back().reference_log_pace : s.ref_log_pace);
}

namespace {

double RatioAt(const SlowdownState& s, absl::Time now, absl::Duration window, double ref) {
  double seconds = 0, tokens = 0;
  auto add = [&](const PaceBin& b) {
    if (b.end > now - window) seconds += b.seconds, tokens += b.tokens;
  };
  for (const PaceBin& b : s.recent) add(b);
  add(s.bin);
  if (seconds <= 0 || tokens <= 0) return 0;
  return std::exp(ref) * tokens / seconds;
}

}  // namespace

}  // namespace flightplan::forecast
