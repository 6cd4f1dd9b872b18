#include "daemon/http_server.h"

#include <CivetServer.h>

#include <exception>

#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "prometheus/text_serializer.h"

namespace flightplan::daemon {
namespace {

void Respond(mg_connection* conn, int code, const char* reason, const char* type, const std::string& body,
             const std::string& extra_headers = "") {
  mg_printf(conn,
            "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\nCache-Control: no-store\r\n"
            "X-Content-Type-Options: nosniff\r\n%sConnection: close\r\n\r\n",
            code, reason, type, body.size(), extra_headers.c_str());
  mg_write(conn, body.data(), body.size());
}

// The request's path as sent (decoded, not "cleaned": civetweb's cleaning drops a trailing
// '.', and run names may end in one).
std::string RawPath(mg_connection* conn) {
  const mg_request_info* info = mg_get_request_info(conn);
  if (info->local_uri_raw != nullptr) return info->local_uri_raw;
  return info->local_uri != nullptr ? info->local_uri : "";
}

void NotFound(mg_connection* conn) { Respond(conn, 404, "Not Found", "text/plain; charset=utf-8", "not found\n"); }

}  // namespace

class HttpServer::MetricsHandler : public CivetHandler {
 public:
  explicit MetricsHandler(std::vector<std::weak_ptr<prometheus::Collectable>> collectables)
      : collectables_(std::move(collectables)) {}
  bool handleGet(CivetServer*, mg_connection* conn) override {
    // civetweb falls back to a case-insensitive prefix match: only /metrics itself here.
    if (RawPath(conn) != "/metrics") {
      NotFound(conn);
      return true;
    }
    try {
      std::vector<prometheus::MetricFamily> families;
      for (const auto& weak : collectables_) {
        if (auto c = weak.lock()) {
          auto more = c->Collect();
          families.insert(families.end(), std::make_move_iterator(more.begin()), std::make_move_iterator(more.end()));
        }
      }
      Respond(conn, 200, "OK", "text/plain; version=0.0.4; charset=utf-8",
              prometheus::TextSerializer().Serialize(families));
    } catch (const std::exception&) {
      Respond(conn, 500, "Internal Server Error", "text/plain; charset=utf-8", "the metrics could not be collected\n");
    }
    return true;
  }

 private:
  std::vector<std::weak_ptr<prometheus::Collectable>> collectables_;
};

class HttpServer::RunsHandler : public CivetHandler {
 public:
  RunsHandler(HttpPages pages, Auth auth) : pages_(std::move(pages)), auth_(std::move(auth)) {}
  bool handleGet(CivetServer*, mg_connection* conn) override {
    const std::string uri = RawPath(conn);
    // civetweb falls back to a case-insensitive prefix match: only /runs and /runs/... here.
    if (uri != "/runs" && uri.rfind("/runs/", 0) != 0) {
      NotFound(conn);
      return true;
    }
    bool authorized = false;
    try {
      authorized = Authorized(conn);
    } catch (const std::exception&) {
    }
    if (!authorized) {
      Respond(conn, 401, "Unauthorized", "text/plain; charset=utf-8",
              "the read token is required: Authorization: Bearer TOKEN, or the token as the password\n",
              "WWW-Authenticate: Basic realm=\"flightplan\", charset=\"UTF-8\"\r\n");
      return true;
    }
    if (uri == "/runs") {
      Respond(conn, 301, "Moved Permanently", "text/plain; charset=utf-8", "/runs/\n", "Location: /runs/\r\n");
      return true;
    }
    const std::string name = uri.substr(std::min<size_t>(uri.size(), 6));  // already decoded
    try {
      if (name.empty()) {
        Respond(conn, 200, "OK", "text/html; charset=utf-8", pages_.list());
        return true;
      }
      const std::optional<std::string> page = pages_.run(name);
      if (!page) {
        Respond(conn, 404, "Not Found", "text/plain; charset=utf-8", "no such run\n");
        return true;
      }
      Respond(conn, 200, "OK", "text/html; charset=utf-8", *page);
    } catch (const std::exception& e) {
      Respond(conn, 500, "Internal Server Error", "text/plain; charset=utf-8", "the page could not be made\n");
    }
    return true;
  }

 private:
  bool Authorized(mg_connection* conn) const {
    if (!auth_.read_protected()) return true;
    const char* header = mg_get_header(conn, "Authorization");
    if (header == nullptr) return false;
    const std::string h(header);  // Debian's abseil has its own string_view
    if (absl::StartsWithIgnoreCase(h, "Bearer ")) return auth_.ReadAllowed(h.substr(7));
    if (absl::StartsWithIgnoreCase(h, "Basic ")) {
      std::string decoded;
      if (!absl::Base64Unescape(h.substr(6), &decoded)) return false;
      const size_t colon = decoded.find(':');
      return colon != std::string::npos && auth_.ReadAllowed(decoded.substr(colon + 1));
    }
    return false;
  }

  HttpPages pages_;
  Auth auth_;
};

absl::StatusOr<std::unique_ptr<HttpServer>> HttpServer::Start(
    const std::string& address, std::vector<std::weak_ptr<prometheus::Collectable>> collectables, HttpPages pages,
    Auth auth) {
  std::unique_ptr<HttpServer> s(new HttpServer());
  s->metrics_ = std::make_unique<MetricsHandler>(std::move(collectables));
  s->runs_ = std::make_unique<RunsHandler>(std::move(pages), std::move(auth));
  try {
    // Scrapes and pages share these threads; a page may wait up to 2 s for its history.
    s->server_ = std::make_unique<CivetServer>(std::vector<std::string>{"listening_ports", address, "num_threads", "8"});
  } catch (const std::exception& e) {
    return absl::UnavailableError(absl::StrCat("cannot serve HTTP on ", address, ": ", e.what()));
  }
  s->server_->addHandler("/metrics", s->metrics_.get());
  s->server_->addHandler("/runs", s->runs_.get());
  const std::vector<int> ports = s->server_->getListeningPorts();
  s->port_ = ports.empty() ? 0 : ports.front();
  return s;
}

HttpServer::~HttpServer() {
  if (server_) server_->close();
}

}  // namespace flightplan::daemon
