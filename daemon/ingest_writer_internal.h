// The ingest writer's own types, shared by its two files (ingest_writer.cc: the queue, the
// group commit and the publication; ingest_requests.cc: each kind of request). Not for use
// outside them.
#ifndef FLIGHTPLAN_DAEMON_INGEST_WRITER_INTERNAL_H_
#define FLIGHTPLAN_DAEMON_INGEST_WRITER_INTERNAL_H_

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "daemon/ingest_writer.h"

namespace flightplan::daemon {

struct IngestWriter::Request {
  enum class Kind { kEvents, kCreate, kUpdate, kHistory, kRunInfo, kRetract };
  Kind kind = Kind::kEvents;

  struct Item {
    size_t index = 0;  // in the request as sent
    std::string run;
    forecast::Event event;
    std::string bytes;  // IngestEvent::encoded, as stored
  };
  std::vector<Item> items;  // in time order
  std::function<void(BatchResult)> events_done;
  BatchResult batch_result;
  std::shared_ptr<OrderedStream> stream;
  uint64_t sequence = 0;

  std::string run;
  std::shared_ptr<const RunPlan> plan;
  std::function<void(CreateResult)> plan_done;
  CreateResult create_result;

  std::function<void(HistoryResult)> history_done;         // kHistory, for `run`
  std::function<void(absl::StatusOr<RunInfo>)> info_done;  // kRunInfo, for `run`
  bool with_events = false;                                // kRunInfo: the log too

  RetractSpec retract;  // kRetract, of `run`
  std::function<void(RetractResult)> retract_done;
  RetractResult retract_result;
};

// The runs a group of requests touches, as mutable copies until the commit.
struct IngestWriter::Group {
  std::map<std::string, std::unique_ptr<RunView>> working;
  // History tails changed by this group, by run id: history_tails_ after the commit.
  std::map<int64_t, storage::ForecastHistoryTail> history;
  // Runs folded again (a late event, a retraction): snapshotted before the commit, so that
  // a restart never folds their later events onto an older order.
  std::set<std::string> refolded;
  // Runs changed by live requests (unary batches, plans): their forecasts go first.
  std::set<std::string> live;
};

namespace ingest {

// A plan revision with its report and prior.
[[nodiscard]] std::shared_ptr<const RunPlan> MakePlan(uint32_t revision, PlanInput plan);
// `next` governs the run's work from `effective` on: the rate the run showed under
// `previous` is scaled by the plans' rates until it shows its own (ForecastPrior). Without
// an effective time (a revision before the run's first event), `next` simply governs.
[[nodiscard]] std::shared_ptr<RunPlan> Revised(const RunPlan& previous, const RunPlan& next,
                                               std::optional<absl::Time> effective);
// `st` prefixed with where it came from: events[i] (run R, id I).
[[nodiscard]] absl::Status Annotate(const absl::Status& st, size_t index, const std::string& run,
                                    const std::string& id);

// The run follows `plan` from now on: its fold settings (the plan's pace breaks) with it.
void UsePlan(RunView& run, std::shared_ptr<const RunPlan> plan);
}  // namespace ingest
}  // namespace flightplan::daemon

#endif  // FLIGHTPLAN_DAEMON_INGEST_WRITER_INTERNAL_H_
