#include "daemon/auth.h"

#include <fstream>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace flightplan::daemon {
namespace {

std::string Presented(const grpc::CallbackServerContext& context) {
  const auto& md = context.client_metadata();
  auto it = md.find("authorization");
  if (it == md.end()) return "";
  const std::string value(it->second.data(), it->second.size());
  constexpr char kBearer[] = "Bearer ";
  if (!absl::StartsWith(value, kBearer)) return "";
  return value.substr(sizeof(kBearer) - 1);
}

absl::Status Check(const grpc::CallbackServerContext& context, const std::string& a, const std::string& b,
                   const char* what) {
  const std::string token = Presented(context);
  if (token.empty()) {
    return absl::UnauthenticatedError(
        absl::StrCat(what, " need a bearer token (authorization: Bearer ...; flightplan --token-file)"));
  }
  // Both compared, always, so the time does not tell which one nearly matched.
  const bool ok_a = !a.empty() && ConstantTimeEquals(token, a);
  const bool ok_b = !b.empty() && ConstantTimeEquals(token, b);
  if (!(ok_a || ok_b)) return absl::PermissionDeniedError(absl::StrCat("the token is not valid for ", what));
  return absl::OkStatus();
}

}  // namespace

bool ConstantTimeEquals(const std::string& a, const std::string& b) {
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  const size_t n = std::max(a.size(), b.size());
  for (size_t i = 0; i < n; ++i) {
    const unsigned char x = i < a.size() ? static_cast<unsigned char>(a[i]) : 0;
    const unsigned char y = i < b.size() ? static_cast<unsigned char>(b[i]) : 0;
    diff |= static_cast<unsigned char>(x ^ y);
  }
  return diff == 0;
}

absl::Status Auth::CheckWrite(const grpc::CallbackServerContext& context) const {
  if (write_.empty()) return absl::OkStatus();
  return Check(context, write_, "", "writes");
}

absl::Status Auth::CheckRead(const grpc::CallbackServerContext& context) const {
  if (read_.empty()) return absl::OkStatus();
  return Check(context, read_, write_, "reads");
}

bool Auth::ReadAllowed(const std::string& presented) const {
  // The read token only: HTTP carries it in clear, and the write token should not travel so.
  if (read_.empty()) return true;
  return ConstantTimeEquals(presented, read_);
}

absl::StatusOr<std::string> ReadTokenFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot read token file ", path));
  std::string line;
  std::getline(in, line);
  const std::string token(absl::StripAsciiWhitespace(line));
  if (token.empty()) return absl::InvalidArgumentError(absl::StrCat("token file ", path, " is empty"));
  return token;
}

}  // namespace flightplan::daemon
