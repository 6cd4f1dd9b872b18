#include "text/run_figures.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "text/units.h"

namespace flightplan::text {

absl::Time TimeOf(const google::protobuf::Timestamp& t) {
  if (t.seconds() == 0 && t.nanos() == 0) return absl::InfinitePast();
  return absl::FromUnixSeconds(t.seconds()) + absl::Nanoseconds(t.nanos());
}

std::string PlanFinishText(const v1::Forecast& f) {
  std::string out;
  if (f.has_plan_expected_finish()) {
    absl::StrAppend(&out, "expected ", units::Date(TimeOf(f.plan_expected_finish())));
    if (f.has_plan_finish()) absl::StrAppend(&out, ", committed ", units::Date(TimeOf(f.plan_finish())));
  } else {
    absl::StrAppend(&out, f.has_plan_finish() ? units::Date(TimeOf(f.plan_finish())) : std::string("-"));
  }
  if (f.has_finish_p50()) {
    absl::StrAppend(&out, "; P50 ", f.slip_seconds() >= 0 ? "later by " : "earlier by ",
                    units::Duration(std::fabs(f.slip_seconds())));
  }
  return out;
}

double Goodput(const v1::TimeSeconds& t) {
  const double counted = t.elapsed() - t.excluded();
  return counted > 0 ? t.productive() / counted : 0;
}

std::string GoodputText(const v1::TimeSeconds& t) {
  if (!(t.elapsed() - t.excluded() > 0)) return "-";
  if (t.excluded() <= 0) return units::Percent(Goodput(t));
  return absl::StrCat(units::Percent(Goodput(t)), " without the excluded ", units::Percent(t.excluded() / t.elapsed()),
                      " (", units::Percent(t.productive() / t.elapsed()), " counting it)");
}

std::string MfuText(const v1::Mfu& mfu) {
  if (!(mfu.plan() > 0)) return "";
  auto share = [](double v) { return v > 0 ? units::Percent(v, 1) : std::string("-"); };
  return absl::StrCat(share(mfu.lifetime()), " over the run, ", share(mfu.last_hour()), " last hour (plan ",
                      units::Percent(mfu.plan(), 1), "; end to end, productive time)");
}

std::vector<TimeCategory> TimeCategories(const v1::TimeSeconds& t) {
  return {{"productive", "productive", t.productive(), true},
          {"capacity", "capacity (fewer GPUs)", t.capacity(), false},
          {"checkpoint", "checkpoint", t.checkpoint(), true},
          {"custom", "custom (spans)", t.custom(), false},
          {"lost", "lost", t.lost(), true},
          {"startup", "startup", t.startup(), true},
          {"down_unplanned", "down, unplanned", t.down_unplanned(), true},
          {"down_planned", "down, planned", t.down_planned(), true},
          {"stalled", "stalled", t.stalled(), true},
          {"excluded", "excluded", t.excluded(), false}};
}

std::string ShareText(const v1::TimeSeconds& t, double seconds) {
  return t.elapsed() > 0 ? units::Percent(seconds / t.elapsed()) : "-";
}

std::string RateText(double tokens_per_second) { return units::Si(tokens_per_second, "tokens/s"); }

std::string SlowdownText(const v1::Slowdown& sd) {
  const std::string pace = sd.reference_tokens_per_second() > 0
                               ? absl::StrCat("own pace ", RateText(sd.reference_tokens_per_second()), ", noise ",
                                              units::Percent(sd.noise(), 1))
                               : "";
  if (sd.active()) {
    return absl::StrCat("ACTIVE since ", units::Date(TimeOf(sd.since())), ": ", units::Percent(sd.factor() - 1, 1),
                        " slower than its ", pace,
                        sd.node().empty() ? "" : absl::StrCat(", slowest rank on ", sd.node()), "; cost ",
                        units::Duration(sd.seconds()), " so far, ", units::Duration(sd.projected_seconds()),
                        " if it lasts to the finish");
  }
  if (sd.count() > 0) {
    return absl::StrCat(sd.count(), " found, cost ", units::Duration(sd.seconds()), "; the latest ",
                        units::Percent(sd.factor() - 1, 1), " slower, ", units::Date(TimeOf(sd.since())), " to ",
                        units::Date(TimeOf(sd.until())),
                        sd.node().empty() ? "" : absl::StrCat(", slowest rank on ", sd.node()),
                        pace.empty() ? "" : absl::StrCat(" (", pace, ")"));
  }
  return pace.empty() ? "- (learning the run's own pace)" : absl::StrCat("none (", pace, ")");
}

std::string NodesText(const v1::RunNodes& n) {
  if (!n.named()) return n.note();
  std::string out = absl::StrCat(n.nodes(), n.nodes() == 1 ? " node" : " nodes", " held or named; ");
  if (n.suspects_size() == 0) return out + "no suspects";
  absl::StrAppend(&out, n.suspects_size() == 1 ? "SUSPECT " : "SUSPECTS ");
  for (int i = 0; i < n.suspects_size(); ++i) {
    const v1::NodeVerdict& v = n.suspects(i);
    absl::StrAppend(&out, i ? "; " : "", v.node(), " (", v.evidence(), ")");
  }
  absl::StrAppend(&out, "; drain with ", n.exclude());
  return out;
}

}  // namespace flightplan::text
