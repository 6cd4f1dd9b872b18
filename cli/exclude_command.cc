#include "cli/exclude_command.h"

#include <ostream>

#include "absl/strings/str_cat.h"
#include "cli/client_support.h"
#include "cli/plan_file.h"
#include "convert/event_convert.h"
#include "flightplan/v1/tracker.grpc.pb.h"
#include "forecast/event.h"

namespace flightplan::cli {

int RunExclude(const ClientOptions& client, const ExcludeOptions& o, std::ostream& out, std::ostream& err) {
  absl::StatusOr<absl::Time> from = ParseTimestamp(o.from);
  if (!from.ok()) {
    err << "flightplan exclude: --from '" << o.from << "': " << from.status().message() << "\n";
    return 2;
  }
  absl::StatusOr<absl::Time> to = ParseTimestamp(o.to);
  if (!to.ok()) {
    err << "flightplan exclude: --to '" << o.to << "': " << to.status().message() << "\n";
    return 2;
  }
  if (*to <= *from) {
    err << "flightplan exclude: --to " << forecast::FormatUtc(*to) << " is not after --from "
        << forecast::FormatUtc(*from) << ": a window runs from --from to --to\n";
    return 2;
  }
  v1::EventBatch batch;
  v1::Event* e = batch.add_events();
  e->set_run(o.run);
  e->set_id(o.id);
  *e->mutable_time() = convert::TimeToProto(*from);
  *e->mutable_excluded()->mutable_until() = convert::TimeToProto(*to);
  e->mutable_excluded()->set_reason(o.reason);
  auto stub = Connect(client);
  grpc::ClientContext ctx;
  SetDeadline(ctx, client);
  v1::BatchAck ack;
  const grpc::Status st = stub->ReportBatch(&ctx, batch, &ack);
  if (!st.ok()) return Fail(err, "exclude", st, client);
  const std::string key = o.id.empty() ? absl::StrCat("~ex/t", absl::ToUnixMicros(*from)) : o.id;
  out << (ack.accepted() ? "excluded " : "already excluded ") << forecast::FormatUtc(*from) << " to "
      << forecast::FormatUtc(*to) << " from run " << o.run << " (" << absl::FormatDuration(*to - *from)
      << "); undo with: flightplan retract " << o.run << " --id '" << key << "'\n";
  return 0;
}

}  // namespace flightplan::cli
