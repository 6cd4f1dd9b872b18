#include "daemon/http_server.h"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <deque>
#include <exception>
#include <map>
#include <string_view>
#include <thread>
#include <variant>

#include "absl/base/thread_annotations.h"
#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "exporters/text_format.h"

namespace flightplan::daemon {
// The parsed request and the answer: named (not in the anonymous namespace below) because
// HttpServer::Impl, which has external linkage, holds them.
namespace http_detail {

struct Response {
  int code = 200;
  const char* reason = "OK";
  const char* type = "text/plain; charset=utf-8";
  std::string body;
  std::string extra_headers;  // each line ending in \r\n
};

struct Request {
  bool head = false;          // HEAD: the answer without its body
  std::string path;           // percent-decoded, without the query
  std::string authorization;  // the header's value, if sent
};

}  // namespace http_detail

namespace {

using http_detail::Request;
using http_detail::Response;

using Steady = std::chrono::steady_clock;

// A request head larger than this is refused (431): browsers and Prometheus send well
// under 2 KiB.
constexpr size_t kMaxHeadBytes = 16 * 1024;
// After the answer, the client's own close is awaited this long, so that closing with its
// bytes unread does not reset the connection under the answer.
constexpr auto kLinger = std::chrono::seconds(2);

Response Plain(int code, const char* reason, std::string body, std::string extra = "") {
  Response r;
  r.code = code;
  r.reason = reason;
  r.body = std::move(body);
  r.extra_headers = std::move(extra);
  return r;
}

// The status line and headers; the body is sent after them from the response itself (a
// scrape of 1,000 runs is 7 MB, not copied again).
std::string Head(const Response& r) {
  return absl::StrCat("HTTP/1.1 ", r.code, " ", r.reason, "\r\nContent-Type: ", r.type,
                      "\r\nContent-Length: ", r.body.size(),
                      "\r\nCache-Control: no-store\r\nX-Content-Type-Options: nosniff\r\n", r.extra_headers,
                      "Connection: close\r\n\r\n");
}

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// The request head (up to its blank line) read as HTTP/1.x: the request, or the answer
// that refuses it (400, 405).
std::variant<Request, Response> Parse(absl::string_view head) {
  std::vector<absl::string_view> lines = absl::StrSplit(head, '\n');
  for (absl::string_view& l : lines) l = absl::StripSuffix(l, "\r");
  const std::vector<absl::string_view> parts = absl::StrSplit(lines.front(), ' ');
  if (parts.size() != 3 || !absl::StartsWith(parts[2], "HTTP/1.") || parts[1].empty() || parts[1][0] != '/') {
    return Plain(400, "Bad Request", "not an HTTP/1.x request line\n");
  }
  Request req;
  if (parts[0] == "HEAD") {
    req.head = true;
  } else if (parts[0] != "GET") {
    return Plain(405, "Method Not Allowed", "only GET and HEAD\n", "Allow: GET, HEAD\r\n");
  }
  const absl::string_view target = parts[1].substr(0, parts[1].find_first_of("?#"));
  for (size_t i = 0; i < target.size(); ++i) {
    if (target[i] != '%') {
      req.path += target[i];
      continue;
    }
    const int hi = i + 2 < target.size() ? HexDigit(target[i + 1]) : -1;
    const int lo = hi >= 0 ? HexDigit(target[i + 2]) : -1;
    if (lo < 0) return Plain(400, "Bad Request", "a bad percent-encoding in the path\n");
    req.path += static_cast<char>(hi * 16 + lo);
    i += 2;
  }
  for (size_t i = 1; i < lines.size(); ++i) {
    const size_t colon = lines[i].find(':');
    if (colon == absl::string_view::npos) continue;
    if (absl::EqualsIgnoreCase(absl::StripAsciiWhitespace(lines[i].substr(0, colon)), "authorization")) {
      req.authorization = std::string(absl::StripAsciiWhitespace(lines[i].substr(colon + 1)));
    }
  }
  return req;
}

prometheus::MetricFamily Family(const char* name, const char* help, prometheus::MetricType type, double value) {
  prometheus::MetricFamily f{name, help, type, {}};
  prometheus::ClientMetric m;
  if (type == prometheus::MetricType::Counter) {
    m.counter.value = value;
  } else {
    m.gauge.value = value;
  }
  f.metric.push_back(m);
  return f;
}

}  // namespace

class HttpServer::Impl {
 public:
  Impl(std::vector<std::weak_ptr<prometheus::Collectable>> collectables, HttpPages pages, Auth auth,
       HttpServerOptions options)
      : collectables_(std::move(collectables)), pages_(std::move(pages)), auth_(std::move(auth)), options_(options) {}

  ~Impl() {
    stop_ = true;
    Wake();
    if (loop_.joinable()) loop_.join();
    {
      absl::MutexLock lock(&mu_);
      workers_stop_ = true;
    }
    cv_.SignalAll();
    for (std::thread& w : workers_) w.join();
    for (auto& [id, c] : conns_) close(c.fd);
    if (listen_fd_ >= 0) close(listen_fd_);
    for (int fd : wake_) {
      if (fd >= 0) close(fd);
    }
  }

  absl::Status Listen(const std::string& address) {
    auto fail = [&](const std::string& why) {
      return absl::UnavailableError(absl::StrCat("cannot serve HTTP on ", address, ": ", why));
    };
    std::string host, port;
    if (absl::StartsWith(address, "[")) {
      const size_t close_bracket = address.find("]:");
      if (close_bracket == std::string::npos) return fail("expected [HOST]:PORT");
      host = address.substr(1, close_bracket - 1);
      port = address.substr(close_bracket + 2);
    } else if (const size_t colon = address.rfind(':'); colon != std::string::npos) {
      host = address.substr(0, colon);
      port = address.substr(colon + 1);
    } else {
      port = address;
    }
    int number = 0;
    if (!absl::SimpleAtoi(port, &number) || number < 0 || number > 65535) {
      return fail(absl::StrCat("'", port, "' is not a port"));
    }
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
    addrinfo* found = nullptr;
    const int gai = getaddrinfo(host.empty() ? nullptr : host.c_str(), port.c_str(), &hints, &found);
    if (gai != 0) return fail(gai_strerror(gai));
    std::string error = "no address";
    for (addrinfo* a = found; a != nullptr && listen_fd_ < 0; a = a->ai_next) {
      const int fd = socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
      if (fd < 0) continue;
      const int one = 1;
      setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
      if (bind(fd, a->ai_addr, a->ai_addrlen) == 0 && listen(fd, SOMAXCONN) == 0) {
        listen_fd_ = fd;
      } else {
        error = std::strerror(errno);
        close(fd);
      }
    }
    freeaddrinfo(found);
    if (listen_fd_ < 0) return fail(error);
    sockaddr_storage bound{};
    socklen_t len = sizeof(bound);
    getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&bound), &len);
    port_ = ntohs(bound.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port
                                              : reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
    if (pipe2(wake_, O_NONBLOCK | O_CLOEXEC) != 0) return fail(std::strerror(errno));
    // Idle clients cost descriptors: take what the hard limit allows, and keep half of it
    // for the rest of the daemon (gRPC, SQLite).
    rlimit limit{};
    if (getrlimit(RLIMIT_NOFILE, &limit) == 0) {
      if (limit.rlim_cur < limit.rlim_max) {
        limit.rlim_cur = std::min<rlim_t>(limit.rlim_max, 65536);
        setrlimit(RLIMIT_NOFILE, &limit);
        getrlimit(RLIMIT_NOFILE, &limit);
      }
      max_connections_ = std::max(1, std::min(options_.max_connections, static_cast<int>(limit.rlim_cur / 2)));
    }
    loop_ = std::thread([this] { Loop(); });
    for (int i = 0; i < std::max(1, options_.workers); ++i) workers_.emplace_back([this] { Work(); });
    return absl::OkStatus();
  }

  int port() const { return port_; }

 private:
  enum class State { kReading, kWorking, kWriting, kDraining };
  struct Conn {
    int fd = -1;
    State state = State::kReading;
    std::string in, out, body;  // out: the answer's head; body: its body (none for HEAD)
    size_t sent = 0;            // of out, then of body
    Steady::time_point deadline;
    bool head = false;
  };
  struct Job {
    uint64_t id;
    Request request;
  };

  void Wake() {
    if (wake_[1] >= 0) {
      const char c = 0;
      [[maybe_unused]] const ssize_t n = write(wake_[1], &c, 1);
    }
  }

  // The event loop: the only code that touches a socket.
  void Loop() {
    std::vector<pollfd> fds;
    std::vector<uint64_t> ids;
    Steady::time_point accept_paused_until{};
    while (!stop_) {
      const Steady::time_point now = Steady::now();
      fds.clear();
      ids.clear();
      fds.push_back({wake_[0], POLLIN, 0});
      fds.push_back({now >= accept_paused_until ? listen_fd_ : -1, POLLIN, 0});
      Steady::time_point next = now + std::chrono::seconds(1);
      for (auto& [id, c] : conns_) {
        if (c.state == State::kWorking) continue;
        fds.push_back({c.fd, static_cast<short>(c.state == State::kWriting ? POLLOUT : POLLIN), 0});
        ids.push_back(id);
        next = std::min(next, c.deadline);
      }
      const auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(next - now).count();
      if (poll(fds.data(), fds.size(), static_cast<int>(std::clamp<long>(wait, 0, 1000) + 1)) < 0 && errno != EINTR) {
        break;
      }
      if (fds[0].revents != 0) {
        char drain[256];
        while (read(wake_[0], drain, sizeof(drain)) > 0) {
        }
        TakeDone();
      }
      if (fds[1].revents != 0 && !Accept()) accept_paused_until = Steady::now() + std::chrono::milliseconds(100);
      for (size_t i = 2; i < fds.size(); ++i) {
        if (fds[i].revents == 0) continue;
        auto it = conns_.find(ids[i - 2]);
        if (it != conns_.end()) Serve(it);
      }
      Expire();
      connections_ = static_cast<int64_t>(conns_.size());
    }
  }

  // Accepts all that wait; false when out of descriptors with nothing left to close.
  bool Accept() {
    while (true) {
      const int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0) {
        if (errno == EMFILE || errno == ENFILE) return EvictOldestWaiting();
        return true;  // EAGAIN, or a connection that went away before it was taken
      }
      if (static_cast<int>(conns_.size()) >= max_connections_ && !EvictOldestWaiting()) {
        close(fd);
        continue;
      }
      Conn c;
      c.fd = fd;
      c.deadline = Steady::now() + ToChrono(options_.request_timeout);
      conns_.emplace(next_id_++, std::move(c));
    }
  }

  // Closes the connection that has waited longest for its request (ids grow with time).
  bool EvictOldestWaiting() {
    for (auto it = conns_.begin(); it != conns_.end(); ++it) {
      if (it->second.state == State::kReading) {
        ++evicted_;
        Close(it);
        return true;
      }
    }
    return false;
  }

  void Serve(std::map<uint64_t, Conn>::iterator it) {
    Conn& c = it->second;
    if (c.state == State::kWriting) {
      while (c.sent < c.out.size() + c.body.size()) {
        iovec parts[2];
        int count = 0;
        if (c.sent < c.out.size()) parts[count++] = {c.out.data() + c.sent, c.out.size() - c.sent};
        const size_t into_body = c.sent > c.out.size() ? c.sent - c.out.size() : 0;
        parts[count++] = {c.body.data() + into_body, c.body.size() - into_body};
        msghdr message{};
        message.msg_iov = parts;
        message.msg_iovlen = static_cast<size_t>(count);
        const ssize_t n = sendmsg(c.fd, &message, MSG_NOSIGNAL);
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
        if (n <= 0) return Close(it);
        c.sent += static_cast<size_t>(n);
      }
      shutdown(c.fd, SHUT_WR);
      c.state = State::kDraining;
      c.out.clear();
      c.body.clear();
      c.body.shrink_to_fit();
      c.deadline = Steady::now() + kLinger;
      return;
    }
    char buf[4096];
    while (true) {
      const ssize_t n = read(c.fd, buf, sizeof(buf));
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
      if (n <= 0) return Close(it);  // the client closed (or failed) before an answer, or after it
      if (c.state == State::kDraining) continue;
      c.in.append(buf, static_cast<size_t>(n));
      size_t end = c.in.find("\r\n\r\n");
      if (end == std::string::npos) end = c.in.find("\n\n");
      if (end == std::string::npos) {
        if (c.in.size() > kMaxHeadBytes) {
          return Answer(c, Plain(431, "Request Header Fields Too Large", "the request head is too large\n"));
        }
        continue;
      }
      std::variant<Request, Response> parsed = Parse(absl::string_view(c.in).substr(0, end));
      c.in.clear();
      if (auto* refused = std::get_if<Response>(&parsed)) return Answer(c, *refused);
      c.state = State::kWorking;
      c.head = std::get<Request>(parsed).head;
      {
        absl::MutexLock lock(&mu_);
        jobs_.push_back({it->first, std::move(std::get<Request>(parsed))});
      }
      cv_.Signal();
      return;
    }
  }

  void Answer(Conn& c, Response r) {
    c.out = Head(r);
    c.body = c.head ? std::string() : std::move(r.body);
    c.sent = 0;
    c.state = State::kWriting;
    c.deadline = Steady::now() + ToChrono(options_.write_timeout);
  }

  void TakeDone() {
    std::vector<std::pair<uint64_t, Response>> done;
    {
      absl::MutexLock lock(&mu_);
      done.swap(done_);
    }
    for (auto& [id, response] : done) {
      auto it = conns_.find(id);
      if (it == conns_.end()) continue;
      Answer(it->second, std::move(response));
      Serve(it);  // most answers fit the socket's buffer at once
    }
  }

  void Expire() {
    const Steady::time_point now = Steady::now();
    for (auto it = conns_.begin(); it != conns_.end();) {
      Conn& c = it->second;
      auto next = std::next(it);
      if (c.state != State::kWorking && now >= c.deadline) {
        if (c.state == State::kReading && !c.in.empty()) {
          ++timeouts_;
          Answer(c, Plain(408, "Request Timeout", "the request took too long to arrive\n"));
          c.deadline = now + std::chrono::seconds(1);  // one more chance to take the 408
        } else {
          if (c.state != State::kDraining) ++timeouts_;
          Close(it);
        }
      }
      it = next;
    }
  }

  void Close(std::map<uint64_t, Conn>::iterator it) {
    close(it->second.fd);
    conns_.erase(it);
  }

  static std::chrono::milliseconds ToChrono(absl::Duration d) {
    return std::chrono::milliseconds(absl::ToInt64Milliseconds(d));
  }

  void Work() {
    while (true) {
      Job job;
      {
        absl::MutexLock lock(&mu_);
        while (!workers_stop_ && jobs_.empty()) cv_.Wait(&mu_);
        if (workers_stop_) return;
        job = std::move(jobs_.front());
        jobs_.pop_front();
      }
      Response r = Handle(job.request);
      {
        absl::MutexLock lock(&mu_);
        done_.emplace_back(job.id, std::move(r));
      }
      Wake();
    }
  }

  Response Handle(const Request& req) {
    if (req.path == "/metrics") return Metrics();
    if (req.path == "/runs" || absl::StartsWith(req.path, "/runs/")) return Runs(req);
    return Plain(404, "Not Found", "not found\n");
  }

  Response Metrics() {
    try {
      const Steady::time_point start = Steady::now();
      // In the collectables' order: the families of those that give families, written as text
      // before the next that writes its own text (the runs' series).
      std::vector<prometheus::MetricFamily> families;
      std::string text;
      for (const auto& weak : collectables_) {
        if (auto c = weak.lock()) {
          if (const auto* writer = dynamic_cast<const exporters::TextCollectable*>(c.get())) {
            text += exporters::TextFormat(families);
            families.clear();
            writer->AppendText(text);
            continue;
          }
          auto more = c->Collect();
          families.insert(families.end(), std::make_move_iterator(more.begin()), std::make_move_iterator(more.end()));
        }
      }
      // As node_exporter times its collectors: what this scrape's collection took.
      const double took = std::chrono::duration<double>(Steady::now() - start).count();
      families.push_back(Family("flightplan_scrape_duration_seconds", "Seconds this scrape's collection took.",
                                prometheus::MetricType::Gauge, took));
      families.push_back(Family("flightplan_http_connections", "Connections open on the HTTP side.",
                                prometheus::MetricType::Gauge, static_cast<double>(connections_.load())));
      families.push_back(Family("flightplan_http_timeouts_total",
                                "HTTP connections closed because their request or their answer took too long.",
                                prometheus::MetricType::Counter, static_cast<double>(timeouts_.load())));
      Response r;
      r.type = "text/plain; version=0.0.4; charset=utf-8";
      r.body = std::move(text);
      r.body += exporters::TextFormat(families);
      return r;
    } catch (const std::exception&) {
      return Plain(500, "Internal Server Error", "the metrics could not be collected\n");
    }
  }

  Response Runs(const Request& req) {
    if (!Authorized(req.authorization)) {
      return Plain(401, "Unauthorized",
                   "the read token is required: Authorization: Bearer TOKEN, or the token as the password\n",
                   "WWW-Authenticate: Basic realm=\"flightplan\", charset=\"UTF-8\"\r\n");
    }
    if (req.path == "/runs") return Plain(301, "Moved Permanently", "/runs/\n", "Location: /runs/\r\n");
    const std::string name = req.path.substr(6);
    try {
      Response r;
      r.type = "text/html; charset=utf-8";
      if (name.empty()) {
        r.body = pages_.list();
        return r;
      }
      std::optional<std::string> page = pages_.run(name);
      if (!page) return Plain(404, "Not Found", "no such run\n");
      r.body = std::move(*page);
      return r;
    } catch (const std::exception&) {
      return Plain(500, "Internal Server Error", "the page could not be made\n");
    }
  }

  bool Authorized(const std::string& header) const {
    if (!auth_.read_protected()) return true;
    if (absl::StartsWithIgnoreCase(header, "Bearer ")) return auth_.ReadAllowed(header.substr(7));
    if (absl::StartsWithIgnoreCase(header, "Basic ")) {
      std::string decoded;
      if (!absl::Base64Unescape(header.substr(6), &decoded)) return false;
      const size_t colon = decoded.find(':');
      return colon != std::string::npos && auth_.ReadAllowed(decoded.substr(colon + 1));
    }
    return false;
  }

  const std::vector<std::weak_ptr<prometheus::Collectable>> collectables_;
  const HttpPages pages_;
  const Auth auth_;
  const HttpServerOptions options_;
  int listen_fd_ = -1;
  int wake_[2] = {-1, -1};
  int port_ = 0;
  int max_connections_ = 1024;
  std::atomic<bool> stop_{false};
  std::atomic<int64_t> connections_{0}, timeouts_{0}, evicted_{0};
  // The loop thread's alone.
  std::map<uint64_t, Conn> conns_;
  uint64_t next_id_ = 0;
  // Between the loop and the workers.
  absl::Mutex mu_;
  absl::CondVar cv_;
  std::deque<Job> jobs_ ABSL_GUARDED_BY(mu_);
  std::vector<std::pair<uint64_t, Response>> done_ ABSL_GUARDED_BY(mu_);
  bool workers_stop_ ABSL_GUARDED_BY(mu_) = false;
  std::thread loop_;
  std::vector<std::thread> workers_;
};

absl::StatusOr<std::unique_ptr<HttpServer>> HttpServer::Start(
    const std::string& address, std::vector<std::weak_ptr<prometheus::Collectable>> collectables, HttpPages pages,
    Auth auth, HttpServerOptions options) {
  auto impl = std::make_unique<Impl>(std::move(collectables), std::move(pages), std::move(auth), options);
  if (absl::Status st = impl->Listen(address); !st.ok()) return st;
  return std::unique_ptr<HttpServer>(new HttpServer(std::move(impl)));
}

HttpServer::HttpServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
HttpServer::~HttpServer() = default;
int HttpServer::port() const { return impl_->port(); }

}  // namespace flightplan::daemon
