// When does a bad period end? One law for a crisis of failures and for a slowdown, from what
// public records of large training runs say about how long such periods last.
//
// The length of a bad period is a mixture of log-normals, each a way such periods end:
// automation (minutes), a fail-slow that resolves itself (under an hour), a human who finds
// and fixes it (days), an obscure fault (a week, with a long tail); and, beside them, "it
// never ends: the fleet is like this now". A period that has lasted `age` keeps each way in
// proportion to its weight times its odds of lasting that long, so a period that has
// outlived the automatic scales is a human's, and one that has outlived the human scales
// shifts weight to "never". Unlike the scale-free D/(D+x) (Gott 1993) it has scales, and its
// hazard falls after each mode. Pure: no clock, no I/O; the draws' uniforms come from the
// caller.
#ifndef FLIGHTPLAN_FORECAST_BAD_PERIOD_H_
#define FLIGHTPLAN_FORECAST_BAD_PERIOD_H_

#include <array>
#include <string>
#include <vector>

namespace flightplan::forecast {

// One way a bad period ends: its length is log-normal with this median and sigma.
struct EndingWay {
  const char* name;
  double median_seconds;
  double sigma;
  double weight;  // a priori, among the ways that end
};

// The ways, with their sources (docs/forecasting.md has the table against the records).
// `human` and `obscure` only: a persistent straggler or a crisis of days is never taken to
// end by itself (Lin et al., OSDI'25: a straggler's slowdown barely changes until someone
// intervenes).
enum class PeriodKind { kAny, kHuman };
const std::array<EndingWay, 4>& EndingWays();

// What a run's own history and its plan say about its periods: lengths of earlier periods
// that ended (each an observation), and the team's own time to fix one when the plan gives
// it (failures.slowdown_fix_hours, failures.crisis_fix_days), weighed as one more.
struct PeriodEvidence {
  std::vector<double> ended_seconds;
  double team_fix_seconds = 0;  // 0: unknown
};

class BadPeriodLaw {
 public:
  // `kind` picks the ways; `age` is how long the period has lasted; `detected_at` the age at
  // which a period of this kind is first seen as one (a slowdown once two hours of work
  // show it, a crisis once a day's failures do), where `never` (the prior odds that it never
  // ends) is stated.
  BadPeriodLaw(PeriodKind kind, double age_seconds, double detected_at_seconds, double never,
               const PeriodEvidence& evidence);

  // The probability that it never ends, given its age.
  double never() const { return never_; }
  // The probability that a period of this age ends within `x` more seconds, among the
  // periods that end (the records' cases): what the status says in words.
  double EndsWithin(double x_seconds) const;
  // The median of the time left among the periods that end.
  double MedianLeft() const;
  // The time left, drawn from two uniforms in [0, 1): +infinity when it never ends.
  double DrawLeft(double u_way, double u_time) const;
  // The ways as weighed at this age (their weights sum to 1 - never()), for the words.
  const std::vector<EndingWay>& ways() const { return ways_; }
  double age_seconds() const { return age_; }
  // How the evidence moved the human scales: their medians' factor (1: no evidence).
  double evidence_factor() const { return factor_; }

 private:
  double age_ = 0;
  double never_ = 0;
  double factor_ = 1;
  std::vector<EndingWay> ways_;          // medians moved by the evidence, weights at this age
  std::vector<double> survival_at_age_;  // each way's P(length > age)
};

// "a period 6.0 days old ends within a week in 41% of the records' cases": the law's
// figures in words, for the status's two futures and the slowdown's line.
std::string DescribeLaw(const BadPeriodLaw& law);

}  // namespace flightplan::forecast

#endif  // FLIGHTPLAN_FORECAST_BAD_PERIOD_H_
