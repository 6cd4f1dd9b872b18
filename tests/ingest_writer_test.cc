// IngestWriter (daemon/ingest_writer.h) on its own: a real SQLite file in a temporary
// directory (the store refuses ":memory:": it locks and checks its file), a fake Clock, the board it publishes to and a
// scheduler that is never started. No gRPC, no sleeps: each completion is awaited on a Notification.
#include "daemon/ingest_writer.h"

#include <memory>
#include <string>
#include <vector>

#include "absl/synchronization/notification.h"
#include "cli/plan_file.h"
#include "daemon/wire.h"
#include "gtest/gtest.h"
#include "storage/sqlite_store.h"
#include "tests/event_log.h"
#include "tests/subprocess.h"
#include "tests/tracker_parts.h"

namespace flightplan::daemon {
namespace {

constexpr char kRun[] = "w";

struct Writer {
  testing::TempDir dir;
  Harness h;
  std::unique_ptr<RunBoard> board;
  std::unique_ptr<IngestWriter> writer;

  explicit Writer(bool events_clock, size_t max_queue = 4096) : h(events_clock) {
    h.options.max_queue_requests = max_queue;
    h.clock = FakeClock(absl::FromUnixSeconds(testing::T0()));
    board = std::make_unique<RunBoard>(h.options, &h.clock, h.scheduler.get());
    absl::StatusOr<std::unique_ptr<storage::SqliteStore>> store =
        storage::SqliteStore::Open(dir.path() + "/w.db", storage::Sync::kNormal);
    EXPECT_TRUE(store.ok()) << store.status();
    writer =
        std::make_unique<IngestWriter>(std::move(*store), h.options, &h.clock, nullptr, board.get(), h.scheduler.get());
    EXPECT_TRUE(writer->Recover().ok());
  }

  CreateResult Create() {
    absl::StatusOr<v1::Plan> plan = cli::LoadPlanFile(std::string(FLIGHTPLAN_EXAMPLES_DIR) + "/dense-70b-10t.yaml");
    EXPECT_TRUE(plan.ok());
    CreateResult out;
    absl::Notification done;
    EXPECT_TRUE(writer
                    ->SubmitCreateRun(kRun, PlanInputFromProto(*plan),
                                      [&](CreateResult r) {
                                        out = std::move(r);
                                        done.Notify();
                                      })
                    .ok());
    done.WaitForNotification();
    return out;
  }
  BatchResult Report(std::vector<v1::Event> events) {
    BatchResult out;
    absl::Notification done;
    const absl::Status st = writer->SubmitEvents(IngestEventsFromProto(events), [&](BatchResult r) {
      out = std::move(r);
      done.Notify();
    });
    if (!st.ok()) return BatchResult{st, 0, 0, {}};
    done.WaitForNotification();
    return out;
  }
};

// An interruption's detail is free text, not its identity: a resend that says more or less
// (a watcher restarted after Slurm forgot a node's reason) is the same stop, and the first
// detail is kept; a resend with another cause is still refused.
TEST(IngestWriter, AStopResentWithAnotherDetailIsADuplicate) {
  Writer w(/*events_clock=*/true);
  w.writer->Start();
  ASSERT_TRUE(w.Create().status.ok());
  v1::Event started = testing::StartedAt(kRun, 0, 1, 0);
  v1::Event stop = testing::InterruptedAt(kRun, 60, "node");
  stop.set_id("slurm-7-0-end");
  stop.mutable_interruption()->set_detail("Slurm: NODE_FAIL on gpu07, node gpu07: xid 79");
  ASSERT_TRUE(w.Report({started, stop}).status.ok());
  v1::Event again = stop;
  again.mutable_interruption()->set_detail("Slurm: NODE_FAIL on gpu07");
  const BatchResult r = w.Report({again});
  EXPECT_TRUE(r.status.ok()) << r.status;
  EXPECT_EQ(r.duplicates, 1u);
  EXPECT_EQ(w.board->Find(kRun)->state.events, 2u);
  v1::Event other = stop;
  other.mutable_interruption()->set_cause("oom");
  EXPECT_EQ(w.Report({other}).status.code(), absl::StatusCode::kAlreadyExists);
  w.writer->Stop();
}

TEST(IngestWriter, CommitsThenPublishesAndAsksForAForecast) {
  Writer w(/*events_clock=*/true);
  w.writer->Start();
  const CreateResult created = w.Create();
  ASSERT_TRUE(created.status.ok()) << created.status;
  EXPECT_TRUE(created.created);
  ASSERT_NE(w.board->Find(kRun), nullptr);
  const std::vector<v1::Event> log = testing::SyntheticRun(kRun, 200, 3);
  const BatchResult r = w.Report(log);
  ASSERT_TRUE(r.status.ok()) << r.status;
  EXPECT_EQ(r.accepted, log.size());
  EXPECT_EQ(w.board->Find(kRun)->state.events, log.size());  // published before the completion
  EXPECT_EQ(w.Report(log).duplicates, log.size());           // the same ids again
  // The run changed: the forecaster is asked for it.
  w.h.runs[kRun] = w.board->Find(kRun);
  EXPECT_EQ(w.h.scheduler->SimulateNext().simulated, kRun);
  w.writer->Stop();
}

TEST(IngestWriter, AFullQueueRefusesAtOnceAndAStoppedOneRefusesAll) {
  Writer w(/*events_clock=*/true, /*max_queue=*/1);
  // Not started: the first request waits in its lane, the second finds it full.
  absl::StatusOr<v1::Plan> plan = cli::LoadPlanFile(std::string(FLIGHTPLAN_EXAMPLES_DIR) + "/dense-70b-10t.yaml");
  ASSERT_TRUE(plan.ok());
  absl::Notification first;
  ASSERT_TRUE(w.writer->SubmitCreateRun(kRun, PlanInputFromProto(*plan), [&](CreateResult) { first.Notify(); }).ok());
  bool called = false;
  const absl::Status full =
      w.writer->SubmitCreateRun("other", PlanInputFromProto(*plan), [&](CreateResult) { called = true; });
  EXPECT_EQ(full.code(), absl::StatusCode::kResourceExhausted) << full;
  EXPECT_EQ(w.writer->QueueDepth(), 1u);
  w.writer->Start();
  first.WaitForNotification();
  w.writer->Stop();
  EXPECT_FALSE(called);
  EXPECT_EQ(w.writer->SubmitCreateRun("late", PlanInputFromProto(*plan), [&](CreateResult) { called = true; }).code(),
            absl::StatusCode::kUnavailable);
  EXPECT_FALSE(called);
  EXPECT_NE(w.board->Find(kRun), nullptr);
  EXPECT_EQ(w.board->Find("other"), nullptr);
}

// Urgency comes from ingest: a run a live (unary) report changed is simulated before one a
// stream (a replay) changed, whatever their names.
TEST(IngestWriter, ALiveReportsRunIsForecastFirst) {
  Writer w(/*events_clock=*/true);
  w.writer->Start();
  absl::StatusOr<v1::Plan> plan = cli::LoadPlanFile(std::string(FLIGHTPLAN_EXAMPLES_DIR) + "/dense-70b-10t.yaml");
  ASSERT_TRUE(plan.ok());
  for (const char* run : {"a-replayed", "b-live"}) {
    absl::Notification done;
    ASSERT_TRUE(w.writer->SubmitCreateRun(run, PlanInputFromProto(*plan), [&](CreateResult) { done.Notify(); }).ok());
    done.WaitForNotification();
  }
  // The creations were live too: let both be simulated once, then change them.
  for (const char* run : {"a-replayed", "b-live"}) w.h.runs[run] = w.board->Find(run);
  while (!w.h.scheduler->SimulateNext().simulated.empty()) {
  }
  w.h.clock.Advance(absl::Seconds(10));
  absl::Notification streamed;
  ASSERT_TRUE(w.writer
                  ->SubmitEvents(
                      IngestEventsFromProto(testing::SyntheticRun("a-replayed", 20, 1)),
                      [&](BatchResult) { streamed.Notify(); }, std::make_shared<OrderedStream>(), 1)
                  .ok());
  streamed.WaitForNotification();
  ASSERT_TRUE(w.Report(testing::SyntheticRun("b-live", 20, 1)).status.ok());
  for (const char* run : {"a-replayed", "b-live"}) w.h.runs[run] = w.board->Find(run);
  EXPECT_EQ(w.h.scheduler->SimulateNext().simulated, "b-live");
  EXPECT_EQ(w.h.scheduler->SimulateNext().simulated, "a-replayed");
  w.writer->Stop();
}

// Under the wall clock an event dated past the clock's skew allowance is refused, named,
// and changes nothing: the clock is the fake one.
TEST(IngestWriter, AnEventAheadOfTheClockIsRefusedAndChangesNothing) {
  Writer w(/*events_clock=*/false);
  w.writer->Start();
  ASSERT_TRUE(w.Create().status.ok());
  const std::vector<v1::Event> log = testing::SyntheticRun(kRun, 20, 1);
  // The run's first events are at T0 + a few seconds: an hour on, the clock is past them.
  w.h.clock.Advance(absl::Hours(1));
  ASSERT_TRUE(w.Report({log[0], log[1]}).status.ok());
  const uint64_t events = w.board->Find(kRun)->state.events;
  v1::Event ahead = testing::StepsAt(kRun, 2 * 3600.0, 5, 5000);  // an hour ahead of the clock
  const BatchResult refused = w.Report({ahead});
  EXPECT_FALSE(refused.status.ok());
  EXPECT_NE(refused.status.message().find("ahead of flightpland's clock"), std::string::npos) << refused.status;
  EXPECT_EQ(w.board->Find(kRun)->state.events, events);
  // Once the clock has caught up, the same event is taken.
  w.h.clock.Advance(absl::Hours(1));
  EXPECT_TRUE(w.Report({ahead}).status.ok());
  EXPECT_EQ(w.board->Find(kRun)->state.events, events + 1);
  w.writer->Stop();
}

}  // namespace
}  // namespace flightplan::daemon
