// Every second as the peers count it, through the daemon (docs/contract.md §5): the flagship
// run evaluates (a promised span, silent), crashes, sits out a site outage that the team then
// excludes with `flightplan exclude`, and comes back on 7/8 of its GPUs at 7/8 of the pace.
// The status over gRPC and as text, an interval query over the second launch alone, MFU
// against the plan's, and the exclusion's errors and its retraction.
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "cli/exclude_command.h"
#include "cli/status_print.h"
#include "convert/event_convert.h"
#include "tests/daemon_fixture.h"

namespace flightplan::testing {
namespace {

const std::string kEvalRun = "dense-70b-10t";

v1::Event CategorySpanAt(const std::string& run, double t, const std::string& kind, double expected, bool start) {
  v1::Event e = StepsAt(run, t, 0, 0);
  e.clear_steps();
  if (start) {
    e.mutable_span_started()->set_kind(kind);
    e.mutable_span_started()->set_expected_seconds(expected);
  } else {
    e.mutable_span_ended()->set_kind(kind);
  }
  return e;
}

std::string CategoryUtc(double t) {
  return absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", absl::FromUnixSeconds(T0()) + absl::Seconds(t), absl::UTCTimeZone());
}

class CategoriesTest : public DaemonTest {
 protected:
  cli::ClientOptions Client() const {
    cli::ClientOptions c;
    c.server = absl::StrCat("127.0.0.1:", daemon_->grpc_port());
    return c;
  }
  int Exclude(double from, double to, const std::string& reason, std::string* err_text = nullptr) {
    cli::ExcludeOptions o;
    o.run = kEvalRun;
    o.from = CategoryUtc(from);
    o.to = CategoryUtc(to);
    o.reason = reason;
    std::ostringstream out, err;
    const int code = cli::RunExclude(Client(), o, out, err);
    if (err_text) *err_text = err.str();
    return code;
  }
  v1::RunStatus Interval(double from, grpc::Status* st) {
    grpc::ClientContext ctx;
    v1::GetStatusRequest request;
    request.set_run(kEvalRun);
    *request.mutable_from() = convert::TimeToProto(absl::FromUnixSeconds(T0()) + absl::Seconds(from));
    v1::RunStatus out;
    *st = stub_->GetStatus(&ctx, request, &out);
    return out;
  }

  // Attempt 1 at the plan's pace with an evaluation of 600 s at hour 3; a crash at hour 6,
  // down 2 h (an outage of 1 h in it); attempt 2 on 3,584 of the 4,096 GPUs at 7/8 of the
  // pace for 12 h. Reports every 100 steps.
  void Run() {
    ASSERT_TRUE(Create(FlagshipPlan()).ok());
    ASSERT_TRUE(Report({StartedAt(kEvalRun, 0, 1, 0)}).ok());
    plan_rate_ = Status().throughput().plan_tokens_per_second();
    ASSERT_GT(plan_rate_, 0);
    const int64_t per_step = 16777216;  // the plan's tokens per step
    const double step_seconds = per_step / plan_rate_;
    std::vector<v1::Event> events;
    double t = 120;
    int64_t step = 0;
    events.push_back(StepsAt(kEvalRun, t, step, 0));
    auto train = [&](double until, double seconds_per_step) {
      while (t + 100 * seconds_per_step <= until) {
        t += 100 * seconds_per_step;
        step += 100;
        events.push_back(StepsAt(kEvalRun, t, step, step * per_step));
      }
    };
    train(3 * 3600, step_seconds);
    events.push_back(CategorySpanAt(kEvalRun, t, "eval", 600, true));
    events.push_back(CategorySpanAt(kEvalRun, t + 600, "eval", 0, false));
    t += 600;
    train(6 * 3600, step_seconds);
    events.push_back(CheckpointAt(kEvalRun, t, step, 0));
    crash_ = t + 60;
    events.push_back(InterruptedAt(kEvalRun, crash_, "node"));
    relaunch_ = crash_ + 7200;
    v1::Event launch = StartedAt(kEvalRun, relaunch_, 2, step);
    launch.mutable_job_started()->set_gpus(3584);
    events.push_back(launch);
    t = relaunch_ + 120;
    events.push_back(StepsAt(kEvalRun, t, step, step * per_step));
    const double first_report = t;
    train(relaunch_ + 12 * 3600, step_seconds * 8 / 7);
    second_work_ = t - first_report;
    ASSERT_TRUE(Report(events).ok());
    end_ = t;
  }

  double plan_rate_ = 0, crash_ = 0, relaunch_ = 0, second_work_ = 0, end_ = 0;
};

TEST_F(CategoriesTest, EvaluationFewerGpusAndAnExcludedOutage) {
  Run();
  v1::RunStatus s = Status();
  const v1::TimeSeconds& t = s.time_seconds();
  EXPECT_DOUBLE_EQ(t.custom(), 600);
  ASSERT_EQ(t.custom_seconds_by_kind_size(), 1);
  EXPECT_EQ(t.custom_seconds_by_kind(0).kind(), "eval");
  EXPECT_DOUBLE_EQ(t.stalled(), 0);
  EXPECT_NEAR(t.capacity(), second_work_ / 8, 1);
  EXPECT_FALSE(s.slowdown().active());
  EXPECT_EQ(s.slowdown().count(), 0u);
  EXPECT_EQ(s.gpus(), 3584u);
  EXPECT_EQ(s.plan_gpus(), 4096u);
  // The forecast has the fleet back when 64 of the 88 nodes out (the 64 missing and the plan's
  // 24 spares) are back from their 48 h repairs: a sum of exponentials of means 48 h / 88,
  // 48 h / 87, ... 48 h / 25, whose mean is 48 h x (H(88) - H(24)) = 61.6 h and whose
  // standard deviation is 8.2 h (the median, 61.3 h, about the mean).
  ASSERT_TRUE(s.forecast().has_full_size());
  EXPECT_EQ(s.forecast().full_size().missing_nodes(), 64u);
  double mean_hours = 0;
  for (int n = 25; n <= 88; ++n) mean_hours += 48.0 / n;
  EXPECT_NEAR(s.forecast().full_size().p50_seconds() / 3600, mean_hours, 1.5);
  // The run's 10-minute evaluation is carried ahead, beside the plan's allotment of none.
  EXPECT_GT(s.forecast().custom_ratio(), 0);
  EXPECT_LT(s.forecast().custom_ratio(), 600 / (86400 + t.productive()) * 1.01);
  const double down = t.down_unplanned();
  const double consumed = s.failure_budget().consumed_seconds();
  EXPECT_NEAR(down, 7200, 1e-6);
  // MFU: the run trains at the plan's pace per GPU, so it reads the plan's.
  EXPECT_GT(s.mfu().plan(), 0.3);
  EXPECT_NEAR(s.mfu().lifetime() / s.mfu().plan(), 1, 0.02);
  EXPECT_NEAR(s.mfu().last_hour() / s.mfu().plan(), 1, 0.02);

  // The site's outage, an hour of the downtime, excluded after the fact.
  std::string err;
  ASSERT_EQ(Exclude(crash_ + 1800, crash_ + 5400, "site power outage", &err), 0) << err;
  s = Status();
  EXPECT_DOUBLE_EQ(s.time_seconds().excluded(), 3600);
  EXPECT_NEAR(s.time_seconds().down_unplanned(), down - 3600, 1e-6);
  EXPECT_NEAR(s.failure_budget().consumed_seconds(), consumed - 3600, 1e-6);
  EXPECT_NEAR(s.time_seconds().elapsed(), end_, 1e-6);
  ASSERT_EQ(s.exclusions_size(), 1);
  EXPECT_EQ(s.exclusions(0).reason(), "site power outage");
  const double counted = s.time_seconds().elapsed() - 3600;
  EXPECT_NEAR(s.reliability().goodput(), s.time_seconds().productive() / counted, 1e-12);
  EXPECT_NEAR(s.reliability().goodput_counting_excluded(), s.time_seconds().productive() / end_, 1e-12);
  const std::string text = cli::FormatRunStatus(s);
  for (const char* words :
       {"custom (spans)", "  custom: eval", "capacity (fewer GPUs)", "excluded", "site power outage",
        "without the excluded", "MFU", "3584 of the plan's 4096 GPUs", "full size", "custom ahead"}) {
    EXPECT_NE(text.find(words), std::string::npos) << words << "\n" << text;
  }

  // Errors: an overlapping window, a reversed one; nothing changes.
  EXPECT_EQ(Exclude(crash_ + 3600, crash_ + 6000, "", &err), 1);
  EXPECT_NE(err.find("overlaps the excluded window"), std::string::npos) << err;
  EXPECT_EQ(Exclude(crash_ + 3600, crash_ + 100, "", &err), 2);
  EXPECT_NE(err.find("--to"), std::string::npos) << err;
  EXPECT_DOUBLE_EQ(Status().time_seconds().excluded(), 3600);

  // The interval query over the second launch: its figures alone.
  grpc::Status st;
  const v1::RunStatus second = Interval(relaunch_, &st);
  ASSERT_TRUE(st.ok()) << st.error_message();
  ASSERT_TRUE(second.has_interval());
  EXPECT_NEAR(second.time_seconds().elapsed(), end_ - relaunch_, 1e-6);
  EXPECT_DOUBLE_EQ(second.time_seconds().down_unplanned(), 0);
  EXPECT_DOUBLE_EQ(second.time_seconds().excluded(), 0);
  EXPECT_DOUBLE_EQ(second.time_seconds().custom(), 0);
  EXPECT_NEAR(second.time_seconds().startup(), 120, 1e-6);
  EXPECT_NEAR(second.time_seconds().capacity(), second_work_ / 8, 1);
  EXPECT_NEAR(second.time_seconds().productive(), second_work_ * 7 / 8, 1);
  EXPECT_EQ(second.interruptions_size(), 0);
  EXPECT_NEAR(second.reliability().goodput(), second.time_seconds().productive() / (end_ - relaunch_), 1e-9);
  // And over the first: its crash, its evaluation, not the second's capacity.
  grpc::ClientContext ctx;
  v1::GetStatusRequest request;
  request.set_run(kEvalRun);
  *request.mutable_to() = convert::TimeToProto(absl::FromUnixSeconds(T0()) + absl::Seconds(relaunch_));
  v1::RunStatus first;
  ASSERT_TRUE(stub_->GetStatus(&ctx, request, &first).ok());
  EXPECT_DOUBLE_EQ(first.time_seconds().custom(), 600);
  EXPECT_DOUBLE_EQ(first.time_seconds().capacity(), 0);
  ASSERT_EQ(first.interruptions_size(), 1);
  EXPECT_EQ(first.interruptions(0).cause(), "node");
  // The same from the command line, and its own check of a reversed one.
  cli::StatusOptions so;
  so.run = kEvalRun;
  so.from = CategoryUtc(relaunch_ + 1);
  so.wait_seconds = 0;
  std::ostringstream sout, serr;
  ASSERT_EQ(cli::RunStatus(Client(), so, sout, serr), 0) << serr.str();
  EXPECT_NE(sout.str().find("the wall time, goodput, budget consumed and interruptions below are its alone"),
            std::string::npos)
      << sout.str();
  so.to = CategoryUtc(relaunch_);
  EXPECT_EQ(cli::RunStatus(Client(), so, sout, serr), 2);
  EXPECT_NE(serr.str().find("is not after --from"), std::string::npos) << serr.str();
  // A reversed interval is refused, naming it.
  Interval(end_ + 3600, &st);
  EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << st.error_message();

  // The exclusion retracted: the downtime is back.
  grpc::ClientContext rctx;
  v1::RetractRequest retract;
  retract.set_run(kEvalRun);
  retract.add_ids(absl::StrCat("~ex/t", (T0() + static_cast<int64_t>(crash_ + 1800)) * 1000000));
  v1::RetractResponse retracted;
  ASSERT_TRUE(stub_->RetractEvents(&rctx, retract, &retracted).ok());
  s = Status();
  EXPECT_DOUBLE_EQ(s.time_seconds().excluded(), 0);
  EXPECT_NEAR(s.time_seconds().down_unplanned(), down, 1e-6);

  // On the wall clock, a window that has not passed yet is refused.
  Restart({}, /*events_clock=*/false);
  cli::ExcludeOptions o;
  o.run = kEvalRun;
  o.from = absl::FormatTime(absl::RFC3339_sec, absl::Now() - absl::Hours(1), absl::UTCTimeZone());
  o.to = absl::FormatTime(absl::RFC3339_sec, absl::Now() + absl::Hours(1), absl::UTCTimeZone());
  std::ostringstream out, errs;
  EXPECT_EQ(cli::RunExclude(Client(), o, out, errs), 1);
  err = errs.str();
  EXPECT_NE(err.find("excluded.until"), std::string::npos) << err;
  EXPECT_NE(err.find("is in the future"), std::string::npos) << err;
}

TEST_F(CategoriesTest, AGpuCountAboveThePlansFleetIsRefused) {
  ASSERT_TRUE(Create(FlagshipPlan()).ok());
  v1::Event launch = StartedAt(kEvalRun, 0, 1, 0);
  launch.mutable_job_started()->set_gpus(8192);
  const grpc::Status st = Report({launch});
  EXPECT_EQ(st.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(st.error_message().find("job_started.gpus 8192 is above the plan's fleet of 4096"), std::string::npos)
      << st.error_message();
  EXPECT_EQ(Status().events(), 0u);
}

}  // namespace
}  // namespace flightplan::testing
