#include "cli/status_print.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "cli/units.h"
#include "proto/plan_convert.h"

namespace flightplan {

using namespace units;  // NOLINT: formatting only

std::string FormatRunStatus(const v1::RunStatus& s) {
  std::string out;
  absl::StrAppend(&out, "run ", s.run(), ": ", s.state(), ", attempt ", s.attempt(),
                  ", plan revision ", s.plan_revision(), ", ", Count(static_cast<double>(s.events())),
                  " events\n");
  const v1::Progress& p = s.progress();
  absl::StrAppend(&out, absl::StrFormat("  %-22s %s of %s tokens (%s), step %s\n", "progress",
                                        Sci(static_cast<double>(p.tokens())),
                                        Sci(static_cast<double>(p.target_tokens())),
                                        Percent(p.fraction(), 2),
                                        Count(static_cast<double>(p.step()))));
  if (s.has_as_of()) {
    absl::StrAppend(&out, absl::StrFormat("  %-22s %s (first event %s)\n", "as of",
                                          Date(TimeFromProto(s.as_of())),
                                          Date(TimeFromProto(s.first_event_time()))));
  }
  const v1::TimeSeconds& t = s.time_seconds();
  const double elapsed = t.elapsed();
  absl::StrAppend(&out, "\n  wall time                   hours   share\n");
  auto row = [&](const char* label, double seconds) {
    absl::StrAppend(&out, absl::StrFormat("  %-22s %12.2f %7s\n", label, seconds / 3600,
                                          elapsed > 0 ? Percent(seconds / elapsed) : "-"));
  };
  row("productive", t.productive());
  row("checkpoint", t.checkpoint());
  row("lost", t.lost());
  row("startup", t.startup());
  row("down, unplanned", t.down_unplanned());
  row("down, planned", t.down_planned());
  row("stalled", t.stalled());
  absl::StrAppend(&out, absl::StrFormat("  %-22s %12.2f\n\n", "elapsed", elapsed / 3600));

  std::string unplanned, planned;
  for (const v1::InterruptionCount& i : s.interruptions()) {
    std::string& list = i.planned() ? planned : unplanned;
    absl::StrAppend(&list, list.empty() ? "" : ", ", i.cause(), " ", i.count());
  }
  absl::StrAppend(&out, absl::StrFormat("  %-22s %s\n", "interruptions",
                                        unplanned.empty() && planned.empty()
                                            ? "none"
                                            : absl::StrCat(unplanned.empty() ? "" : unplanned + " (unplanned)",
                                                           !unplanned.empty() && !planned.empty() ? "; " : "",
                                                           planned.empty() ? "" : planned + " (planned)")));
  const v1::Throughput& tp = s.throughput();
  absl::StrAppend(&out, absl::StrFormat("  %-22s %s per productive second (last hour %s; plan %s)\n",
                                        "throughput", Si(tp.tokens_per_second(), "tokens/s"),
                                        Si(tp.recent_tokens_per_second(), "tokens/s"),
                                        Si(tp.plan_tokens_per_second(), "tokens/s")));
  absl::StrAppend(&out, absl::StrFormat("  %-22s %s (lost + unplanned down + stalled + restarts)\n",
                                        "failure budget used", Duration(s.failure_budget_consumed_seconds())));
  for (const std::string& f : s.flags()) absl::StrAppend(&out, "  FLAG: ", f, "\n");
  return out;
}

std::string FormatRunList(const v1::ListRunsResponse& runs) {
  if (runs.runs().empty()) return "no runs (create one with: flightplan create PLAN.yaml)\n";
  std::string out = absl::StrFormat("%-32s %-9s %10s %10s %8s %9s\n", "RUN", "STATE", "TOKENS",
                                    "TARGET", "DONE", "EVENTS");
  for (const v1::RunSummary& r : runs.runs()) {
    const double done = r.target_tokens() > 0 ? static_cast<double>(r.tokens()) /
                                                    static_cast<double>(r.target_tokens())
                                              : 0;
    absl::StrAppend(&out, absl::StrFormat("%-32s %-9s %10s %10s %8s %9s\n", r.run(), r.state(),
                                          Sci(static_cast<double>(r.tokens())),
                                          Sci(static_cast<double>(r.target_tokens())),
                                          Percent(done), Count(static_cast<double>(r.events()))));
  }
  return out;
}

}  // namespace flightplan
