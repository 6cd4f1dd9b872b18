// What the client commands share: the connection, deadlines and tokens, errors as the
// user reads them, and sending events in order with the daemon's retry and split rules.
#ifndef FLIGHTPLAN_CLI_CLIENT_SUPPORT_H_
#define FLIGHTPLAN_CLI_CLIENT_SUPPORT_H_

#include <cstdint>
#include <iosfwd>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "cli/client_commands.h"
#include "flightplan/v1/tracker.grpc.pb.h"
#include "google/protobuf/message.h"
#include "grpcpp/grpcpp.h"

namespace flightplan::cli {

[[nodiscard]] std::unique_ptr<v1::Tracker::Stub> Connect(const ClientOptions& client);
// The bearer token, if any.
void Authorize(grpc::ClientContext& ctx, const ClientOptions& client);
// The token and the call's deadline (--timeout).
void SetDeadline(grpc::ClientContext& ctx, const ClientOptions& client);
// "NOT_FOUND" for 5.
[[nodiscard]] std::string CodeName(int code);
// Prints "flightplan COMMAND: CODE: message" (with a hint when the daemon is unreachable);
// returns 1, the exit status of a refusal.
int Fail(std::ostream& err, const char* command, const grpc::Status& st, const ClientOptions& client);
// The run's plan revisions and launches (GetRun) into `info`.
grpc::Status ReadRun(v1::Tracker::Stub& stub, const ClientOptions& client, const std::string& run, v1::RunInfo& info);
// The message as indented proto JSON (field names as in the .proto, defaults printed).
[[nodiscard]] std::string Json(const google::protobuf::Message& m);

// Events to send, each with the line (or the position) it came from, for messages.
struct PendingBatch {
  std::vector<v1::Event> events;
  std::vector<size_t> lines;
};

struct ReplayCounts {
  uint64_t accepted = 0, duplicates = 0, rejected = 0;
  std::vector<std::string> rejections;  // first few, with line numbers
  void Reject(size_t line, const std::string& why) {
    ++rejected;
    if (rejections.size() < 10) rejections.push_back(absl::StrCat("line ", line, ": ", why));
  }
};

// Sends one batch by the unary call, retrying RESOURCE_EXHAUSTED with backoff. Returns the
// final status and fills `ack`. `limit` (optional): the daemon's batch limit when it refused
// the batch for being over it (the trailing metadata flightplan-max-batch-events), else 0.
grpc::Status SendWithRetry(v1::Tracker::Stub& stub, const ClientOptions& client, const v1::EventBatch& batch,
                           v1::BatchAck& ack, size_t* limit = nullptr);
// Events [from, from + count) of `b`.
[[nodiscard]] PendingBatch Slice(const PendingBatch& b, size_t from, size_t count);
// Sends a batch by the unary call, in order. A batch over the daemon's limit is cut to it
// (and `limit` remembers it for the batches after); a batch refused otherwise is sent
// event by event, to tell the good from the bad.
void SendInOrder(v1::Tracker::Stub& stub, const ClientOptions& client, const PendingBatch& b, ReplayCounts& counts,
                 size_t& limit);
// A refused batch: its events one by one, to tell the good from the bad.
void Split(v1::Tracker::Stub& stub, const ClientOptions& client, const PendingBatch& pending, ReplayCounts& counts);

}  // namespace flightplan::cli

#endif  // FLIGHTPLAN_CLI_CLIENT_SUPPORT_H_
