#include "cli/client_support.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <ostream>
#include <thread>

#include "absl/status/status.h"
#include "google/protobuf/util/json_util.h"

namespace flightplan::cli {

std::unique_ptr<v1::Tracker::Stub> Connect(const ClientOptions& client) {
  std::shared_ptr<grpc::ChannelCredentials> credentials = grpc::InsecureChannelCredentials();
  if (!client.tls_ca_pem.empty()) {
    grpc::SslCredentialsOptions ssl;
    ssl.pem_root_certs = client.tls_ca_pem;
    credentials = grpc::SslCredentials(ssl);
  }
  return v1::Tracker::NewStub(grpc::CreateChannel(client.server, credentials));
}

void Authorize(grpc::ClientContext& ctx, const ClientOptions& client) {
  if (!client.token.empty()) ctx.AddMetadata("authorization", "Bearer " + client.token);
}

void SetDeadline(grpc::ClientContext& ctx, const ClientOptions& client) {
  Authorize(ctx, client);
  ctx.set_deadline(std::chrono::system_clock::now() +
                   std::chrono::milliseconds(static_cast<int64_t>(client.timeout_seconds * 1000)));
}

std::string CodeName(int code) { return absl::StatusCodeToString(static_cast<absl::StatusCode>(code)); }

int Fail(std::ostream& err, const char* command, const grpc::Status& st, const ClientOptions& client) {
  err << "flightplan " << command << ": " << CodeName(st.error_code()) << ": " << st.error_message();
  if (st.error_code() == grpc::StatusCode::UNAVAILABLE) {
    err << " (is flightpland running at " << client.server << "? --server or FLIGHTPLAN_SERVER)";
  }
  err << "\n";
  return 1;
}

grpc::Status ReadRun(v1::Tracker::Stub& stub, const ClientOptions& client, const std::string& run, v1::RunInfo& info) {
  grpc::ClientContext ctx;
  SetDeadline(ctx, client);
  v1::GetRunRequest request;
  request.set_run(run);
  return stub.GetRun(&ctx, request, &info);
}

std::string Json(const google::protobuf::Message& m) {
  google::protobuf::util::JsonPrintOptions print;
  print.add_whitespace = true;
  print.always_print_primitive_fields = true;
  print.preserve_proto_field_names = true;
  std::string json;
  const auto st = google::protobuf::util::MessageToJsonString(m, &json, print);
  if (!st.ok()) return absl::StrCat("{\"error\": \"cannot print as JSON: ", st.message().as_string(), "\"}\n");
  return json;
}

// Sends one batch by the unary call, retrying RESOURCE_EXHAUSTED with backoff. Returns the
// final status and fills `ack`.
// `limit`: the daemon's batch limit when it refused the batch for being over it (the
// trailing metadata flightplan-max-batch-events), else 0.
grpc::Status SendWithRetry(v1::Tracker::Stub& stub, const ClientOptions& client, const v1::EventBatch& batch,
                           v1::BatchAck& ack, size_t* limit) {
  auto backoff = std::chrono::milliseconds(50);
  for (int attempt = 0;; ++attempt) {
    grpc::ClientContext ctx;
    SetDeadline(ctx, client);
    grpc::Status st = stub.ReportBatch(&ctx, batch, &ack);
    if (limit != nullptr) {
      *limit = 0;
      const auto& trailers = ctx.GetServerTrailingMetadata();
      if (auto it = trailers.find("flightplan-max-batch-events"); it != trailers.end()) {
        *limit =
            static_cast<size_t>(std::strtoull(std::string(it->second.data(), it->second.size()).c_str(), nullptr, 10));
      }
    }
    if (st.error_code() != grpc::StatusCode::RESOURCE_EXHAUSTED || attempt >= 30) return st;
    std::this_thread::sleep_for(backoff);
    backoff = std::min(backoff * 2, std::chrono::milliseconds(2000));
  }
}

PendingBatch Slice(const PendingBatch& b, size_t from, size_t count) {
  PendingBatch out;
  const size_t to = std::min(b.events.size(), from + count);
  out.events.assign(b.events.begin() + static_cast<std::ptrdiff_t>(from),
                    b.events.begin() + static_cast<std::ptrdiff_t>(to));
  out.lines.assign(b.lines.begin() + static_cast<std::ptrdiff_t>(from),
                   b.lines.begin() + static_cast<std::ptrdiff_t>(to));
  return out;
}

// Sends a batch by the unary call, in order. A batch over the daemon's limit is cut to it
// (and `limit` remembers it for the batches after); a batch refused otherwise is sent
// event by event, to tell the good from the bad.
void SendInOrder(v1::Tracker::Stub& stub, const ClientOptions& client, const PendingBatch& b, ReplayCounts& counts,
                 size_t& limit) {
  if (b.events.size() > limit) {
    for (size_t from = 0; from < b.events.size(); from += limit) {
      SendInOrder(stub, client, Slice(b, from, limit), counts, limit);
    }
    return;
  }
  v1::EventBatch msg;
  for (const v1::Event& e : b.events) *msg.add_events() = e;
  v1::BatchAck ack;
  size_t n = 0;
  const grpc::Status st = SendWithRetry(stub, client, msg, ack, &n);
  if (st.ok()) {
    counts.accepted += ack.accepted();
    counts.duplicates += ack.duplicates();
    return;
  }
  if (st.error_code() == grpc::StatusCode::INVALID_ARGUMENT && n > 0 && n < b.events.size()) {
    limit = n;
    SendInOrder(stub, client, b, counts, limit);
    return;
  }
  Split(stub, client, b, counts);
}

// A refused batch: send its events one by one to tell the good from the bad.
void Split(v1::Tracker::Stub& stub, const ClientOptions& client, const PendingBatch& pending, ReplayCounts& counts) {
  for (size_t i = 0; i < pending.events.size(); ++i) {
    v1::EventBatch one;
    *one.add_events() = pending.events[i];
    v1::BatchAck ack;
    grpc::Status st = SendWithRetry(stub, client, one, ack);
    if (st.ok()) {
      counts.accepted += ack.accepted();
      counts.duplicates += ack.duplicates();
    } else {
      counts.Reject(pending.lines[i], absl::StrCat(CodeName(st.error_code()), ": ", st.error_message()));
    }
  }
}

}  // namespace flightplan::cli
