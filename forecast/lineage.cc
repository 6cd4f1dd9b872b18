// The lineage's marks: where the lineage stood at a step (MarkAt), from the saves and step
// reports remembered; a launch's restore to one, and a save or step report remembered (a
// save ahead of the reports with its tokens inferred).
#include <algorithm>
#include <cmath>
#include <vector>

#include "absl/strings/str_cat.h"
#include "forecast/accounting.h"
#include "forecast/accounting_internal.h"

namespace flightplan::forecast {

namespace {

// Where the lineage stood at `step`: an exact mark (a checkpoint's, or the step's own
// report), or one interpolated between the marks (or the start, or now) around it, the
// step reports included. `exact` says which.
CheckpointMark MarkAt(const RunState& s, int64_t step, bool& exact) {
  CheckpointMark below{};  // step 0: nothing done
  CheckpointMark above{s.step, s.tokens, s.seconds.productive, s.productive_tokens};
  exact = step == 0;
  if (exact) return below;
  if (step == s.step && !s.tokens_inferred) {
    exact = true;
    return above;
  }
  bool inexact_match = false;
  CheckpointMark match;
  for (const std::vector<CheckpointMark>* marks : {&s.checkpoints, &s.step_marks}) {
    for (const CheckpointMark& m : *marks) {
      if (m.step == step) {
        if (m.exact) {
          exact = true;
          return m;
        }
        inexact_match = true;
        match = m;
      }
      if (m.step < step && m.step >= below.step) below = m;
      if (m.step > step && m.step < above.step) above = m;
    }
  }
  if (inexact_match) return match;
  if (above.step <= below.step) return below;
  const double f = static_cast<double>(step - below.step) / static_cast<double>(above.step - below.step);
  CheckpointMark m;
  m.step = step;
  m.tokens = below.tokens + static_cast<int64_t>(std::llround(f * static_cast<double>(above.tokens - below.tokens)));
  m.productive_seconds = below.productive_seconds + f * (above.productive_seconds - below.productive_seconds);
  m.productive_tokens = below.productive_tokens + f * (above.productive_tokens - below.productive_tokens);
  m.exact = false;
  return m;
}

}  // namespace

namespace accounting_internal {

void Restore(RunState& s, int64_t step, uint32_t attempt) {
  if (step == s.step) return;
  if (step > s.step) {
    AddFlag(s, absl::StrCat("attempt ", attempt, " restored step ", step, ", beyond the latest reported step ", s.step,
                            "; its tokens are taken from the attempt's first report"));
    s.step = step;
    s.tokens_uncertain = true;
    return;
  }
  bool exact = false;
  const CheckpointMark m = MarkAt(s, step, exact);
  const bool known = std::any_of(s.checkpoints.begin(), s.checkpoints.end(),
                                 [step](const CheckpointMark& c) { return c.step == step; });
  if (!exact) {
    const bool evicted = s.checkpoints_evicted && !s.checkpoints.empty() && step < s.checkpoints.front().step;
    AddFlag(s, absl::StrCat("attempt ", attempt, " restored step ", step,
                            known     ? ", a checkpoint whose tokens were inferred"
                            : evicted ? ", older than the checkpoints remembered"
                                      : ", which was never checkpointed nor reported",
                            "; time and tokens interpolated between the reports around it, tokens set by the attempt's "
                            "first report"));
  } else if (!known) {
    AddFlag(s, absl::StrCat("attempt ", attempt, " restored step ", step,
                            ", which was reported but never checkpointed; the time after its report is lost"));
  }
  s.tokens_uncertain = !exact;
  // The time and tokens of steps S..F no longer count.
  // (The capacity share of those steps stays `capacity`: those GPUs were missing either way.)
  s.seconds.lost += s.seconds.productive - m.productive_seconds;
  s.seconds.productive = m.productive_seconds;
  s.productive_tokens = m.productive_tokens;
  s.step = m.step;
  s.tokens = m.tokens;
  s.checkpoints.erase(std::remove_if(s.checkpoints.begin(), s.checkpoints.end(),
                                     [step](const CheckpointMark& c) { return c.step > step; }),
                      s.checkpoints.end());
  s.step_marks.erase(std::remove_if(s.step_marks.begin(), s.step_marks.end(),
                                    [step](const CheckpointMark& c) { return c.step > step; }),
                     s.step_marks.end());
  s.tokens_inferred = false;
  s.recent.clear();
}

// A step report, remembered while a save or a restore may still name it.
void AddStepMark(RunState& s) {
  if (s.tokens_uncertain || s.tokens_inferred) return;
  if (!s.step_marks.empty() && s.step_marks.back().step >= s.step) s.step_marks.pop_back();
  s.step_marks.push_back({s.step, s.tokens, s.seconds.productive, s.productive_tokens, true});
  if (s.step_marks.size() <= kMaxStepMarks) return;
  std::vector<CheckpointMark> kept;
  for (size_t i = 0; i < s.step_marks.size(); i += 2) kept.push_back(s.step_marks[i]);
  if (kept.back().step != s.step_marks.back().step) kept.push_back(s.step_marks.back());
  s.step_marks = std::move(kept);
}

void AddMark(RunState& s, int64_t step) {
  // A save while the lineage's tokens are unknown (after a restore beyond the reports)
  // is not remembered: a restore to it interpolates instead.
  if (s.tokens_uncertain) return;
  bool exact = false;
  CheckpointMark m = MarkAt(s, step, exact);
  // The reports older than the newest exact save are no longer needed: a restore goes to
  // a save (or, rarely, to an older report: then it interpolates between the saves).
  // The newest two stay, for the tokens per step (SaveAhead).
  if (m.exact && (s.checkpoints.empty() || step >= s.checkpoints.back().step) && s.step_marks.size() > 2) {
    const auto keep = s.step_marks.end() - 2;
    s.step_marks.erase(
        std::remove_if(s.step_marks.begin(), keep, [step](const CheckpointMark& c) { return c.step < step; }), keep);
  }
  auto it = std::lower_bound(s.checkpoints.begin(), s.checkpoints.end(), step,
                             [](const CheckpointMark& c, int64_t v) { return c.step < v; });
  if (it != s.checkpoints.end() && it->step == step) {
    *it = m;
  } else {
    // At the bound, room for exactly one more (the oldest goes below): the vector's doubling
    // would hold twice the marks' memory in every run at rest.
    const auto at = it - s.checkpoints.begin();
    if (s.checkpoints.size() >= kMaxCheckpointMarks && s.checkpoints.capacity() != kMaxCheckpointMarks + 1) {
      std::vector<CheckpointMark> sized;
      sized.reserve(kMaxCheckpointMarks + 1);
      sized.assign(s.checkpoints.begin(), s.checkpoints.end());
      s.checkpoints.swap(sized);
    }
    s.checkpoints.insert(s.checkpoints.begin() + at, m);
  }
  if (s.checkpoints.size() > kMaxCheckpointMarks) {
    s.checkpoints.erase(s.checkpoints.begin());
    s.checkpoints_evicted = true;
  }
}

// A save names a step the reports have not reached (a client that reports every N
// steps and saves at its exit): the step was reached. Its tokens are inferred from the
// lineage's tokens per step (the latest two reports', else the average), flagged, and
// set by the next report; the mark is inexact, so a restore to it lets the attempt's first
// report set them too.
void SaveAhead(RunState& s, int64_t step) {
  double per_step = 0;
  if (s.step_marks.size() >= 2) {
    const CheckpointMark& a = s.step_marks[s.step_marks.size() - 2];
    const CheckpointMark& b = s.step_marks.back();
    if (b.step > a.step) per_step = static_cast<double>(b.tokens - a.tokens) / static_cast<double>(b.step - a.step);
  }
  if (per_step <= 0 && s.step > 0) per_step = static_cast<double>(s.tokens) / static_cast<double>(s.step);
  const auto inferred = static_cast<int64_t>(std::llround(per_step * static_cast<double>(step - s.step)));
  AddFlag(s, absl::StrCat("checkpoint_saved.step ", step, " is ahead of the latest reported step ", s.step,
                          ": the step is taken as reached, its tokens inferred at ",
                          static_cast<int64_t>(std::llround(per_step)), " per step (", s.tokens + inferred,
                          "); the next report sets them"));
  s.step = step;
  s.tokens += inferred;
  if (!s.tokens_uncertain) s.productive_tokens += static_cast<double>(inferred);
  s.tokens_inferred = true;
}

}  // namespace accounting_internal

}  // namespace flightplan::forecast
