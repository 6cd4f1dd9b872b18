// Evaluations in training logs, as `flightplan tail` reads them (docs/clients.md): Megatron's
// validation block in a backfill, dated by the next iteration's stamp; NeMo 2's validation
// loop followed live. The lines inserted into the fixtures follow each program's own format
// strings, named where they are built.
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "cli/log_events.h"
#include "convert/event_convert.h"
#include "gtest/gtest.h"
#include "tests/log_support.h"

namespace flightplan::cli {
namespace {

// Megatron's validation block after iteration 20 (megatron/training/training.py
// evaluate_and_print_results, core_v0.19.0: " validation loss at {prefix} | " and its
// figures between rows of dashes), then optionally its save of iteration 20
// (checkpointing.py save_checkpoint's "saving checkpoint at iteration {:7d} to {} in {}
// format" and "  successfully saved checkpoint from iteration {:7d} to {}", and the timers'
// "save-checkpoint" row, as in the rampup fixture). Each stamped line after them moves
// `shift` seconds later: what the evaluation and the save took.
std::vector<std::string> WithValidation(bool save, int shift) {
  const std::string block =
      " validation loss at iteration 20 | lm loss value: 9.850000E+00 | lm loss PPL: 1.896925E+04 | ";
  std::vector<std::string> lines;
  bool after = false;
  for (std::string l : ReadLines("megatron-core_v0.19.0.log")) {
    // A stamp "[YYYY-MM-DD HH:MM:SS.ffffff]" at the line's start, after at most two spaces.
    const size_t open = l.find('[');
    if (after && open <= 2 && l.size() > open + 28 && l[open + 5] == '-') {
      const absl::Time t = T(l.substr(open + 1, 26).c_str()) + absl::Seconds(shift);
      l = absl::StrCat(l.substr(0, open + 1), absl::FormatTime("%Y-%m-%d %H:%M:%E6S", t, absl::UTCTimeZone()),
                       l.substr(open + 27));
    }
    lines.push_back(l);
    if (absl::StrContains(l, "iteration       20/")) {
      after = true;
      lines.push_back(std::string(block.size() + 1, '-'));
      lines.push_back(block);
      lines.push_back(std::string(block.size() + 1, '-'));
      if (save) {
        lines.push_back("saving checkpoint at iteration      20 to /ckpt/gpt in torch_dist format");
        lines.push_back("  successfully saved checkpoint from iteration      20 to /ckpt/gpt [ t 1/8, p 1/1 ]");
        lines.push_back("(min, max) time across ranks (ms):");
        lines.push_back("    save-checkpoint ................................: (14900.00, 15000.00)");
      }
    }
  }
  return lines;
}

std::vector<v1::Event> SpansOf(const std::vector<v1::Event>& events) {
  std::vector<v1::Event> spans;
  for (const v1::Event& e : events) {
    if (e.has_span_started() || e.has_span_ended()) spans.push_back(e);
  }
  return spans;
}

TEST(LogEvals, ABackfillDatesMegatronsValidationFromTheNextIterationsStamp) {
  LogOptions o;
  o.seq_len = 4096;
  o.backfill = true;
  // Iterations 20 and 30 are stamped 00:05:40 and 00:08:20: 160 s for ten iterations of 10 s.
  const Tailed t = Feed(WithValidation(false, 60), o);
  ASSERT_TRUE(t.status.ok()) << t.status;
  EXPECT_EQ(t.unused, 0u);

  const std::vector<v1::Event> spans = SpansOf(t.events);
  ASSERT_EQ(spans.size(), 2u);
  EXPECT_EQ(spans[0].span_started().kind(), "eval");
  EXPECT_EQ(convert::TimeFromProto(spans[0].time()), T("2027-01-04 00:05:40"));
  EXPECT_EQ(convert::TimeFromProto(spans[1].time()), T("2027-01-04 00:06:40"));
  const forecast::RunState s = Fold(t.events);
  EXPECT_NEAR(s.seconds.custom, 60, 1e-6);
  // The same log followed live, the block read 60 s after iteration 20, counts the same.
  absl::Time latest = T("2027-01-04 00:00:00");
  auto read = [&latest](const std::string& line) {
    if (absl::StrContains(line, "validation loss at")) return T("2027-01-04 00:06:40");
    const size_t open = line.find('[');
    if (open <= 2 && line.size() > open + 28 && line[open + 5] == '-') latest = T(line.substr(open + 1, 26).c_str());
    return latest;
  };
  LogOptions live = o;
  live.backfill = false;
  const Tailed followed = Feed(WithValidation(false, 60), live, read);
  ASSERT_TRUE(followed.status.ok()) << followed.status;
  EXPECT_NEAR(Fold(followed.events).seconds.custom, 60, 1e-6);
  EXPECT_NEAR(Fold(followed.events).seconds.productive, s.seconds.productive, 1e-6);
}

TEST(LogEvals, ASaveAfterTheValidationIsDatedAfterIt) {
  LogOptions o;
  o.seq_len = 4096;
  o.backfill = true;
  // 60 s of evaluation and the save's 15 s (its slowest rank): 175 s for iterations 21-30.
  const Tailed t = Feed(WithValidation(true, 75), o);
  ASSERT_TRUE(t.status.ok()) << t.status;
  const std::vector<v1::Event> spans = SpansOf(t.events);
  ASSERT_EQ(spans.size(), 2u);
  EXPECT_EQ(convert::TimeFromProto(spans[1].time()), T("2027-01-04 00:06:40"));
  const Kinds k = Split(t.events);
  const v1::Event* save = nullptr;
  for (const v1::Event& e : k.saves) {
    if (e.checkpoint_saved().step() == 20) save = &e;
  }
  ASSERT_NE(save, nullptr);
  EXPECT_DOUBLE_EQ(save->checkpoint_saved().blocking_seconds(), 15);
  EXPECT_EQ(convert::TimeFromProto(save->time()), T("2027-01-04 00:06:55"));
  // Against the fixture alone: the evaluation's 60 s and the save's 15 s more.
  const forecast::RunState s = Fold(t.events);
  const forecast::RunState base = Fold(Feed(ReadLines("megatron-core_v0.19.0.log"), o).events);
  EXPECT_NEAR(s.seconds.custom, 60, 1e-6);
  EXPECT_NEAR(s.seconds.checkpoint - base.seconds.checkpoint, 15, 1e-6);
  EXPECT_NEAR(s.seconds.productive, base.seconds.productive, 1e-6);
}

// NeMo 2's validation loop (ProgressPrinter.on_validation_batch_end, v2.4.0: print(
// self.validation_description + f": iteration {int(n)}/{self.total_validation_steps}"),
// every log_interval batches; "Sanity checking Validation" before training) after step 5 of
// the fixture, its four batches read 15 s apart.
TEST(LogEvals, NemosValidationLoopFollowedLiveIsAnEvaluationSpan) {
  std::vector<std::string> lines;
  bool sanity = false;
  for (const std::string& l : ReadLines("nemo-v2.4.0.log")) {
    if (!sanity) {
      lines.push_back("Sanity checking Validation: iteration 1/2");
      lines.push_back("Sanity checking Validation: iteration 2/2");
      sanity = true;
    }
    lines.push_back(l);
    if (absl::StrContains(l, "global_step: 5 |")) {
      for (int i = 1; i <= 4; ++i) lines.push_back(absl::StrCat("Validation: iteration ", i, "/4"));
    }
  }
  // Read live: each training line 10 s after the one before, each validation line 15 s.
  auto clock = [t = At(0)](const std::string& line) mutable {
    if (absl::StrContains(line, "Restoring states from")) t = At(1800);
    if (absl::StartsWith(line, "Training epoch")) t += absl::Seconds(10);
    if (absl::StartsWith(line, "Validation:")) t += absl::Seconds(15);
    return t;
  };
  LogOptions o;
  o.format = LogFormat::kNemo;
  o.seq_len = 4096;
  const Tailed t = Feed(lines, o, clock);
  ASSERT_TRUE(t.status.ok()) << t.status;
  EXPECT_EQ(t.unused, 0u);
  const std::vector<v1::Event> spans = SpansOf(t.events);
  ASSERT_EQ(spans.size(), 2u);  // the sanity check is startup, not an evaluation
  EXPECT_EQ(spans[0].span_started().kind(), "eval");
  EXPECT_EQ(convert::TimeFromProto(spans[0].time()), At(60));  // step 5's line (global_step 5)
  EXPECT_EQ(spans[1].span_ended().kind(), "eval");
  EXPECT_EQ(convert::TimeFromProto(spans[1].time()), At(120));  // its fourth batch
  EXPECT_NEAR(Fold(t.events).seconds.custom, 60, 1e-6);

  // A total the loop never prints (inf, or not a multiple of log_interval): the next training
  // line closes it at the last validation line.
  std::vector<std::string> open;
  for (const std::string& l : lines) {
    if (absl::StrContains(l, "Validation: iteration 4/4")) continue;
    open.push_back(absl::StrContains(l, "Validation: iteration") && !absl::StartsWith(l, "Sanity")
                       ? absl::StrCat(l.substr(0, l.find('/') + 1), "inf")
                       : l);
  }
  const Tailed o2 = Feed(open, o, clock);
  ASSERT_TRUE(o2.status.ok()) << o2.status;
  const std::vector<v1::Event> spans2 = SpansOf(o2.events);
  ASSERT_EQ(spans2.size(), 2u);
  EXPECT_EQ(convert::TimeFromProto(spans2[1].time()), At(105));  // its third line
  // A backfill cannot date NeMo's lines: no span.
  o.backfill = true;
  EXPECT_TRUE(SpansOf(Feed(lines, o, clock).events).empty());
}

}  // namespace
}  // namespace flightplan::cli
