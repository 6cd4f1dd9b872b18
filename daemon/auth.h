// Bearer tokens for the Tracker service: writes (create, update plan, report) need the
// write token when one is set; reads (status, watch, list) need the read token when one is
// set (the write token also reads). Tokens arrive as "authorization: Bearer <token>"
// metadata, are compared in constant time, and never appear in a message or a log.
// Thread-safe (immutable).
#ifndef FLIGHTPLAN_DAEMON_AUTH_H_
#define FLIGHTPLAN_DAEMON_AUTH_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "grpcpp/grpcpp.h"

namespace flightplan::daemon {

class Auth {
 public:
  Auth() = default;
  Auth(std::string write_token, std::string read_token)
      : write_(std::move(write_token)), read_(std::move(read_token)) {}

  // OK; UNAUTHENTICATED without a token; PERMISSION_DENIED with a wrong one.
  [[nodiscard]] absl::Status CheckWrite(const grpc::CallbackServerContext& context) const;
  [[nodiscard]] absl::Status CheckRead(const grpc::CallbackServerContext& context) const;
  // For the HTTP pages: whether `presented` (a bearer token or a Basic password) is the read
  // token (only it: plain HTTP is no place for the write token).
  [[nodiscard]] bool ReadAllowed(const std::string& presented) const;
  bool read_protected() const { return !read_.empty(); }

 private:
  std::string write_;
  std::string read_;
};

// A token from a file: its first line, trimmed. INVALID_ARGUMENT when empty; NOT_FOUND
// when unreadable. The message names the file, never the token.
[[nodiscard]] absl::StatusOr<std::string> ReadTokenFile(const std::string& path);

// Whether two strings are equal, in time that depends only on their lengths.
[[nodiscard]] bool ConstantTimeEquals(const std::string& a, const std::string& b);

}  // namespace flightplan::daemon

#endif  // FLIGHTPLAN_DAEMON_AUTH_H_
