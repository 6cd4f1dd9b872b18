#include "cli/status_print.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "convert/plan_convert.h"
#include "text/run_figures.h"
#include "text/units.h"

namespace flightplan::cli {

namespace units = text::units;  // the one rendering of numbers, shared with the run page

using namespace units;  // NOLINT: formatting only
using text::PlanFinishText;

std::string FormatForecastFreshness(const v1::RunStatus& s) {
  const v1::Forecast& fc = s.forecast();
  if (!fc.forecast_stale()) return "";
  constexpr char kTail[] = "finish, slip, projection and P(exhausted) are from then; a newer one is being computed";
  if (!fc.has_forecast_as_of()) {
    return absl::StrFormat(
        "  %-22s none yet (being computed): the budget projection below is "
        "from accounting alone\n",
        "forecast");
  }
  if (fc.forecast_events() == 0) {
    return absl::StrFormat("  %-22s the plan alone, before the run's first event (%s behind): %s\n", "forecast as of",
                           Count(static_cast<double>(s.events())), kTail);
  }
  if (fc.forecast_events() >= s.events()) {
    return absl::StrFormat("  %-22s %s events, %s ago, before the plan's latest revision: %s\n", "forecast as of",
                           Count(static_cast<double>(fc.forecast_events())), Duration(fc.forecast_age_seconds()),
                           kTail);
  }
  return absl::StrFormat(
      "  %-22s %s events (%s behind), %s ago: %s\n", "forecast as of", Count(static_cast<double>(fc.forecast_events())),
      Count(static_cast<double>(s.events() - fc.forecast_events())), Duration(fc.forecast_age_seconds()), kTail);
}

std::string FormatRunStatus(const v1::RunStatus& s) {
  std::string out;
  // A run with no event yet has no first event, no rates and no burn: "-", not zeros.
  const bool empty = s.events() == 0;
  absl::StrAppend(&out, "run ", s.run(), ": ", s.state(), ", attempt ", s.attempt(), ", plan revision ",
                  s.plan_revision(), ", ", Count(static_cast<double>(s.events())),
                  s.events() == 1 ? " event\n" : " events\n");
  const v1::Progress& p = s.progress();
  absl::StrAppend(
      &out, absl::StrFormat("  %-22s %s of %s tokens (%s), step %s\n", "progress", Sci(static_cast<double>(p.tokens())),
                            Sci(static_cast<double>(p.target_tokens())), Percent(p.fraction(), 2),
                            Count(static_cast<double>(p.step()))));
  if (const v1::Outage& o = s.outage(); o.seconds() > 0) {
    absl::StrAppend(
        &out, absl::StrFormat("  %-22s %s without training since %s (%s): %s\n", "OUTAGE", Duration(o.seconds()),
                              Date(convert::TimeFromProto(o.since())),
                              s.state() == "new" ? "the plan's start, never started" : "an unplanned stop, no relaunch",
                              o.seconds() > o.allowance_seconds()
                                  ? absl::StrCat("past the ", Duration(o.allowance_seconds()), " allowed: paged")
                                  : absl::StrCat(Duration(o.allowance_seconds()), " allowed before a page")));
  }
  if (s.has_as_of()) {
    absl::StrAppend(&out,
                    absl::StrFormat("  %-22s %s (first event %s)\n", "as of", Date(convert::TimeFromProto(s.as_of())),
                                    empty ? std::string("-") : Date(convert::TimeFromProto(s.first_event_time()))));
  }
  const v1::TimeSeconds& t = s.time_seconds();
  const double elapsed = t.elapsed();
  if (s.has_interval()) {
    absl::StrAppend(&out, absl::StrFormat("  %-22s %s to %s: the wall time, goodput, budget consumed and "
                                          "interruptions below are its alone\n",
                                          "interval", Date(convert::TimeFromProto(s.interval().from())),
                                          Date(convert::TimeFromProto(s.interval().to()))));
  }
  absl::StrAppend(&out, "\n  wall time                   hours   share\n");
  auto row = [&](const char* label, double seconds) {
    absl::StrAppend(&out, absl::StrFormat("  %-22s %12.2f %7s\n", label, seconds / 3600, text::ShareText(t, seconds)));
  };
  for (const text::TimeCategory& c : text::TimeCategories(t)) {
    if (c.Shown()) row(c.label, c.seconds);
  }
  for (const v1::SpanSeconds& k : t.custom_seconds_by_kind()) {
    row(absl::StrCat("  custom: ", k.kind()).c_str(), k.seconds());
  }
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
  absl::StrAppend(&out, absl::StrFormat("  %-22s %s per productive second (last hour %s; plan %s)\n", "throughput",
                                        t.productive() > 0 ? text::RateText(tp.tokens_per_second()) : "-",
                                        t.productive() > 0 ? text::RateText(tp.recent_tokens_per_second()) : "-",
                                        text::RateText(tp.plan_tokens_per_second())));
  if (const std::string mfu = text::MfuText(s.mfu()); !mfu.empty()) {
    absl::StrAppend(&out, absl::StrFormat("  %-22s %s\n", "MFU", mfu));
  }
  if (s.has_span()) {
    absl::StrAppend(&out, absl::StrFormat("  %-22s %s since %s, promised until %s\n", "open span", s.span().kind(),
                                          Date(convert::TimeFromProto(s.span().since())),
                                          Date(convert::TimeFromProto(s.span().promised_until()))));
  }
  for (const v1::ExclusionWindow& w : s.exclusions()) {
    absl::StrAppend(&out, absl::StrFormat("  %-22s %s to %s%s\n", "excluded", Date(convert::TimeFromProto(w.from())),
                                          Date(convert::TimeFromProto(w.until())),
                                          w.reason().empty() ? "" : absl::StrCat(" (", w.reason(), ")")));
  }
  if (s.gpus() > 0 && s.plan_gpus() > 0 && s.gpus() < s.plan_gpus()) {
    absl::StrAppend(&out, absl::StrFormat("  %-22s %d of the plan's %d GPUs: the missing share is capacity, not a "
                                          "slowdown\n",
                                          "launch", s.gpus(), s.plan_gpus()));
  }
  // Slowdowns on the run's own pace (docs/contract.md §5).
  const v1::Slowdown& sd = s.slowdown();
  absl::StrAppend(&out, absl::StrFormat("  %-22s %s\n", "slowdown", text::SlowdownText(sd)));
  if (sd.rank_spread() > 0) {
    absl::StrAppend(&out, absl::StrFormat("  %-22s the slowest rank %s behind the fastest (usually %s)\n", "ranks",
                                          Percent(sd.rank_spread(), 1), Percent(sd.typical_rank_spread(), 1)));
  }
  absl::StrAppend(&out, absl::StrFormat("  %-22s %s\n", "nodes", text::NodesText(s.nodes())));
  const v1::Forecast& fc = s.forecast();
  absl::StrAppend(&out, "\n");
  if (fc.has_finish_p50()) {
    absl::StrAppend(&out, absl::StrFormat("  %-22s P10 %s, P50 %s, P90 %s\n", "finish forecast",
                                          DateOnly(convert::TimeFromProto(fc.finish_p10())),
                                          Date(convert::TimeFromProto(fc.finish_p50())),
                                          DateOnly(convert::TimeFromProto(fc.finish_p90()))));
    absl::StrAppend(&out, absl::StrFormat("  %-22s %s\n", "plan finish", PlanFinishText(fc)));
  } else {
    absl::StrAppend(&out, absl::StrFormat("  %-22s pending (plan finish %s)\n", "finish forecast", PlanFinishText(fc)));
  }
  // The two futures, when the failures are far from the plan's (docs/contract.md).
  for (const v1::Future& fu : s.futures()) {
    absl::StrAppend(&out, absl::StrFormat("  %-22s P50 %s, budget at finish %s, weight %s\n",
                                          fu.name() == "plan" ? "  back to plan" : "  last days continue",
                                          Date(convert::TimeFromProto(fu.finish_p50())),
                                          Duration(fu.budget_at_finish_seconds()), Percent(fu.weight(), 0)));
    absl::StrAppend(&out, absl::StrFormat("  %-22s %s\n", "", fu.reason()));
  }
  if (fc.has_full_size()) absl::StrAppend(&out, absl::StrFormat("  %-22s %s\n", "full size", fc.full_size().reason()));
  if (fc.custom_ratio() > 0) {
    absl::StrAppend(&out, absl::StrFormat("  %-22s %s of the compute ahead, for evaluations and checks (spans)\n",
                                          "custom ahead", Percent(fc.custom_ratio(), 1)));
  }
  absl::StrAppend(&out, FormatForecastFreshness(s));
  if (fc.has_deadline()) {
    absl::StrAppend(
        &out, absl::StrFormat("  %-22s %s, met with probability %s\n", "deadline",
                              Date(convert::TimeFromProto(fc.deadline())), Percent(fc.deadline_probability(), 0)));
  }
  const v1::FailureBudget& b = s.failure_budget();
  absl::StrAppend(&out, absl::StrFormat("  %-22s %s of %s used (%s), %s left\n", "failure budget",
                                        Duration(b.consumed_seconds()), Duration(b.budget_seconds()),
                                        Percent(b.budget_seconds() > 0 ? b.consumed_seconds() / b.budget_seconds() : 0),
                                        Duration(b.remaining_seconds())));
  if (elapsed > 0) {
    absl::StrAppend(
        &out, absl::StrFormat("  %-22s %.2f overall; 1h %.2f, 6h %.2f, 1d %.2f, 3d %.2f (1 = on plan)\n", "burn rate",
                              b.burn_rate(), b.burn_rate_1h(), b.burn_rate_6h(), b.burn_rate_1d(), b.burn_rate_3d()));
  } else {
    absl::StrAppend(&out, absl::StrFormat("  %-22s - (no time has elapsed)\n", "burn rate"));
  }
  absl::StrAppend(
      &out, absl::StrFormat(
                "  %-22s %s projected at finish, P(exhausted) %s%s\n", "", Duration(b.projected_at_finish_seconds()),
                Percent(b.exhaustion_probability(), 0),
                !b.has_exhausted_at() ? ""
                : b.remaining_seconds() <= 0
                    ? absl::StrCat(", ran out ", Date(convert::TimeFromProto(b.exhausted_at())))
                    : absl::StrCat(", runs out ", Date(convert::TimeFromProto(b.exhausted_at())), " at this burn")));
  const v1::Reliability& r = s.reliability();
  absl::StrAppend(
      &out, absl::StrFormat("  %-22s goodput %s; MTBF %s observed, %s plan; %s lost per interruption\n", "reliability",
                            text::GoodputText(s.time_seconds()),
                            r.observed_mtbf_seconds() > 0 ? Duration(r.observed_mtbf_seconds()) : "none yet",
                            Duration(r.plan_mtbf_seconds()), Duration(r.mean_loss_per_interruption_seconds())));
  // What the saves do (cadence, the last one, the work a failure now would lose) beside the
  // plan's interval and Daly's advice for the observed MTBF and save cost.
  absl::StrAppend(
      &out, absl::StrFormat(
                "  %-22s observed every %s, plan %s, Daly's advice %s (for the MTBF and save cost seen)\n",
                "checkpoint interval",
                r.observed_checkpoint_interval_seconds() > 0 ? Duration(r.observed_checkpoint_interval_seconds()) : "-",
                Duration(r.plan_checkpoint_interval_seconds()), Duration(r.recommended_checkpoint_interval_seconds())));
  if (r.has_last_checkpoint_time()) {
    absl::StrAppend(&out, absl::StrFormat("  %-22s last %s; %s of work unsaved\n", "checkpoint",
                                          Date(convert::TimeFromProto(r.last_checkpoint_time())),
                                          Duration(r.unsaved_work_seconds())));
  } else if (!empty) {
    absl::StrAppend(&out, absl::StrFormat("  %-22s none yet; %s of work unsaved\n", "checkpoint",
                                          Duration(r.unsaved_work_seconds())));
  }
  const v1::RunCost& c = s.cost();
  if (c.gpu_hour_dollars() > 0 || c.energy_dollars_per_mwh() > 0) {
    absl::StrAppend(&out, absl::StrFormat("  %-22s $%s spent (badput $%s, %s), %s MWh; at finish $%s P50, $%s P90\n",
                                          "cost", Count(c.spent_dollars()), Count(c.badput_dollars()),
                                          c.spent_dollars() > 0 ? Percent(c.badput_dollars() / c.spent_dollars()) : "-",
                                          Count(c.energy_joules() / 3.6e9), Count(c.projected_dollars_p50()),
                                          Count(c.projected_dollars_p90())));
  } else if (c.energy_joules() > 0) {
    absl::StrAppend(&out, absl::StrFormat("  %-22s %s MWh drawn (no price in the plan)\n", "energy",
                                          Count(c.energy_joules() / 3.6e9)));
  }
  for (const std::string& f : s.flags()) absl::StrAppend(&out, "  FLAG: ", f, "\n");
  return out;
}

std::string FormatWhatIf(const v1::WhatIfResponse& r) {
  std::string out = absl::StrCat("what if: run ", r.run(), " from ", Date(convert::TimeFromProto(r.as_of())),
                                 ", failure budget ", Duration(r.budget_seconds()), "\n");
  // The variant column as wide as its longest name, so a long description keeps the columns.
  int w = 28;
  for (const v1::WhatIfOutcome& o : r.outcomes()) w = std::max(w, static_cast<int>(o.name().size()));
  absl::StrAppend(&out, absl::StrFormat("%-*s %6s %6s %9s %9s  %-10s %-17s %-10s  %-19s %6s %6s %12s %10s\n", w,
                                        "VARIANT", "GPUS", "MFU", "TOKENS/S", "MTBF", "P10", "P50 FINISH", "P90",
                                        "BUDGET AT FINISH", "P(EXH)", "P(DL)", "COST AT P50", "MWH"));
  for (const v1::WhatIfOutcome& o : r.outcomes()) {
    if (o.broken()) {
      absl::StrAppend(&out, absl::StrFormat("%-*s BROKEN: %s\n", w, o.name(), o.errors_size() ? o.errors(0) : ""));
      for (int i = 1; i < o.errors_size(); ++i)
        absl::StrAppend(&out, absl::StrFormat("%-*s         %s\n", w, "", o.errors(i)));
      continue;
    }
    const double share = r.budget_seconds() > 0 ? o.projected_budget_seconds() / r.budget_seconds() : 0;
    absl::StrAppend(&out,
                    absl::StrFormat("%-*s %6s %6s %9s %9s  %-10s %-17s %-10s  %-19s %6s %6s %12s %10s\n", w, o.name(),
                                    Count(o.gpus()), Percent(o.mfu()), Si(o.tokens_per_second(), ""),
                                    Duration(o.mtbf_seconds()), DateOnly(convert::TimeFromProto(o.finish_p10())),
                                    Date(convert::TimeFromProto(o.finish_p50())).substr(0, 16),
                                    DateOnly(convert::TimeFromProto(o.finish_p90())),
                                    absl::StrCat(Duration(o.projected_budget_seconds()), " (", Percent(share, 0), ")"),
                                    Percent(o.exhaustion_probability(), 0), Percent(o.deadline_probability(), 0),
                                    o.cost_p50_dollars() > 0 ? absl::StrCat("$", Si(o.cost_p50_dollars(), "")) : "-",
                                    Count(o.energy_p50_mwh())));
  }
  // Where each variant's time goes: the categories ahead, in days.
  absl::StrAppend(&out, "time ahead, days (the mean over the draws):\n",
                  absl::StrFormat("%-*s %10s %9s %10s %8s %9s %8s %8s %8s\n", w, "VARIANT", "PRODUCTIVE", "CAPACITY",
                                  "CHECKPOINT", "CUSTOM", "FAILURES", "PLANNED", "WAITING", "TOTAL"));
  for (const v1::WhatIfOutcome& o : r.outcomes()) {
    if (o.broken()) continue;
    const v1::TimeAhead& a = o.seconds_ahead();
    const double total =
        a.productive() + a.capacity() + a.checkpoint() + a.custom() + a.failures() + a.planned() + a.waiting();
    auto days = [](double s) { return absl::StrFormat("%.2f", s / 86400); };
    absl::StrAppend(&out, absl::StrFormat("%-*s %10s %9s %10s %8s %9s %8s %8s %8s\n", w, o.name(), days(a.productive()),
                                          days(a.capacity()), days(a.checkpoint()), days(a.custom()),
                                          days(a.failures()), days(a.planned()), days(a.waiting()), days(total)));
  }
  if (r.has_deadline_fleet()) {
    const v1::WhatIfDeadlineFleet& d = r.deadline_fleet();
    absl::StrAppend(&out, d.met() ? absl::StrCat("fleet for the deadline: ", Count(d.fleet().gpus()), " GPUs, P90 ",
                                                 Date(convert::TimeFromProto(d.fleet().finish_p90())), ", at ",
                                                 Percent(d.fleet().mfu()), " MFU (pipeline bubble ",
                                                 Percent(d.fleet().bubble_fraction()), ")\n")
                                  : std::string("fleet for the deadline: NONE FOUND\n"));
    absl::StrAppend(&out, "  ", d.explanation(), "\n");
  }
  return out;
}

std::string FormatHistory(const v1::ForecastHistory& h) {
  if (h.points().empty()) {
    return absl::StrCat("run ", h.run(),
                        ": no forecast history yet (a point is kept once the run has events and "
                        "a forecast)\n");
  }
  std::string out = absl::StrFormat("run %s: %d forecast point%s, %s to %s\n", h.run(), h.points_size(),
                                    h.points_size() == 1 ? "" : "s", Date(convert::TimeFromProto(h.points(0).as_of())),
                                    Date(convert::TimeFromProto(h.points(h.points_size() - 1).as_of())));
  absl::StrAppend(&out,
                  absl::StrFormat("%-20s %9s  %-10s %-20s %-10s %10s %10s %6s %6s %10s\n", "AS OF", "EVENTS", "P10",
                                  "P50 FINISH", "P90", "CONSUMED", "PROJECTED", "P(EXH)", "BURN", "SLOWDOWN"));
  auto day = [](const google::protobuf::Timestamp& t, bool has, bool with_time) {
    if (!has) return std::string("-");
    return with_time ? Date(convert::TimeFromProto(t)) : DateOnly(convert::TimeFromProto(t));
  };
  for (const v1::ForecastPoint& p : h.points()) {
    absl::StrAppend(
        &out,
        absl::StrFormat("%-20s %9s  %-10s %-20s %-10s %10s %10s %6s %6.2f %10s%s\n",
                        Date(convert::TimeFromProto(p.as_of())), Count(static_cast<double>(p.events())),
                        day(p.finish_p10(), p.has_finish_p10(), false), day(p.finish_p50(), p.has_finish_p50(), true),
                        day(p.finish_p90(), p.has_finish_p90(), false), Duration(p.budget_consumed_seconds()),
                        Duration(p.projected_at_finish_seconds()), Percent(p.exhaustion_probability(), 0),
                        p.burn_rate(), Duration(p.slowdown_seconds()), p.finished() ? "  finished" : ""));
  }
  for (const v1::SlowStretchMark& m : h.slowdowns()) {
    absl::StrAppend(&out,
                    absl::StrFormat("slowdown %s slower, %s to %s, cost %s\n", Percent(m.factor() - 1, 1),
                                    Date(convert::TimeFromProto(m.start())),
                                    m.active() ? std::string("now (active)") : Date(convert::TimeFromProto(m.end())),
                                    Duration(m.seconds())));
  }
  return out;
}

std::string FormatRunList(const v1::ListRunsResponse& runs) {
  if (runs.runs().empty()) return "no runs (create one with: flightplan create PLAN.yaml)\n";
  std::string out =
      absl::StrFormat("%-32s %-9s %10s %10s %8s %9s\n", "RUN", "STATE", "TOKENS", "TARGET", "DONE", "EVENTS");
  for (const v1::RunSummary& r : runs.runs()) {
    const double done =
        r.target_tokens() > 0 ? static_cast<double>(r.tokens()) / static_cast<double>(r.target_tokens()) : 0;
    absl::StrAppend(&out,
                    absl::StrFormat("%-32s %-9s %10s %10s %8s %9s\n", r.run(), r.state(),
                                    Sci(static_cast<double>(r.tokens())), Sci(static_cast<double>(r.target_tokens())),
                                    Percent(done), Count(static_cast<double>(r.events()))));
  }
  return out;
}

}  // namespace flightplan::cli
