// flightpland's HTTP side (daemon/http_server.h) on 127.0.0.1 port 0, with real sockets:
// slow and idle clients do not starve a scrape, requests are parsed as HTTP/1.x is, and a
// page that cannot be made is a 500, not a hang.
#include "daemon/http_server.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "prometheus/counter.h"
#include "prometheus/registry.h"
#include "tests/http_get.h"

namespace flightplan::daemon {
namespace {

using testing::HttpGet;

int Connect(int port) { return testing::ConnectLoopback(port); }

// Whatever `fd` receives until the peer closes or `seconds` pass; `closed` says which.
std::string ReadUntilClosed(int fd, double seconds, bool* closed) {
  std::string out;
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  *closed = false;
  while (std::chrono::steady_clock::now() < end) {
    pollfd p{fd, POLLIN, 0};
    const int left = static_cast<int>(
        std::chrono::duration_cast<std::chrono::milliseconds>(end - std::chrono::steady_clock::now()).count());
    if (poll(&p, 1, std::max(1, left)) <= 0) continue;
    char buf[4096];
    const ssize_t n = read(fd, buf, sizeof(buf));
    if (n <= 0) {
      *closed = true;
      break;
    }
    out.append(buf, static_cast<size_t>(n));
  }
  return out;
}

// A run's page of `page_bytes` bytes for "big", a list, and a page that fails for "boom".
struct Fixture {
  std::shared_ptr<prometheus::Registry> registry = std::make_shared<prometheus::Registry>();
  std::unique_ptr<HttpServer> server;
  explicit Fixture(HttpServerOptions options = {}, size_t page_bytes = 1000) {
    prometheus::BuildCounter().Name("test_events_total").Help("events").Register(*registry).Add({}).Increment(3);
    HttpPages pages;
    pages.list = [] { return std::string("<html>runs</html>"); };
    pages.run = [page_bytes](const std::string& run) -> std::optional<std::string> {
      if (run == "boom") throw std::runtime_error("no page");
      if (run == "big") return std::string(page_bytes, 'x');
      if (run == "a b" || run == "r.") return "<html>run " + run + "</html>";
      return std::nullopt;
    };
    absl::StatusOr<std::unique_ptr<HttpServer>> s =
        HttpServer::Start("127.0.0.1:0", {registry}, std::move(pages), Auth(), options);
    EXPECT_TRUE(s.ok()) << s.status();
    if (s.ok()) server = std::move(*s);
  }
  int port() const { return server->port(); }
};

double SecondsOf(const std::function<void()>& f) {
  const auto start = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// 256 clients that connected and sent nothing, or half a request line (a port scanner, a
// stuck tab, slowloris): the scrape and the pages still answer, within a second.
TEST(HttpServer, SlowClientsDoNotStarveTheScrape) {
  Fixture f;
  std::vector<int> slow;
  for (int i = 0; i < 256; ++i) {
    const int fd = Connect(f.port());
    ASSERT_GE(fd, 0) << i;
    if (i % 2 == 1) {
      ASSERT_GT(write(fd, "GET /metr", 9), 0);
    }
    slow.push_back(fd);
  }
  std::string metrics, list;
  const double scrape = SecondsOf([&] { metrics = HttpGet(f.port(), "/metrics"); });
  const double page = SecondsOf([&] { list = HttpGet(f.port(), "/runs/"); });
  std::printf("with %zu slow connections: /metrics in %.1f ms, /runs/ in %.1f ms\n", slow.size(), 1e3 * scrape,
              1e3 * page);
  EXPECT_EQ(metrics.rfind("HTTP/1.1 200", 0), 0u) << metrics.substr(0, 200);
  EXPECT_NE(metrics.find("test_events_total 3"), std::string::npos);
  EXPECT_NE(metrics.find("flightplan_http_connections "), std::string::npos);
  EXPECT_EQ(list.rfind("HTTP/1.1 200", 0), 0u) << list.substr(0, 200);
  EXPECT_LT(scrape, 1.0);
  EXPECT_LT(page, 1.0);
  for (int fd : slow) close(fd);
}

// A client that asks for a large page and never reads it holds no worker: the others are
// served meanwhile.
TEST(HttpServer, AClientThatDoesNotReadHoldsNoWorker) {
  HttpServerOptions options;
  options.workers = 1;
  Fixture f(options, /*page_bytes=*/32 << 20);
  std::vector<int> stuck;
  for (int i = 0; i < 4; ++i) {
    const int fd = Connect(f.port());
    ASSERT_GE(fd, 0);
    const std::string req = "GET /runs/big HTTP/1.1\r\nHost: x\r\n\r\n";
    ASSERT_GT(write(fd, req.data(), req.size()), 0);
    stuck.push_back(fd);
  }
  std::string metrics;
  const double scrape = SecondsOf([&] { metrics = HttpGet(f.port(), "/metrics"); });
  EXPECT_EQ(metrics.rfind("HTTP/1.1 200", 0), 0u);
  EXPECT_LT(scrape, 5.0);
  for (int fd : stuck) close(fd);
}

// A connection that does not finish its request in time is closed, with a 408 when it had
// started one.
TEST(HttpServer, AnUnfinishedRequestTimesOut) {
  HttpServerOptions options;
  options.request_timeout = absl::Milliseconds(300);
  Fixture f(options);
  const int idle = Connect(f.port());
  const int partial = Connect(f.port());
  ASSERT_GT(write(partial, "GET /metrics HTTP/1.1\r\n", 23), 0);
  bool closed = false;
  EXPECT_EQ(ReadUntilClosed(idle, 5, &closed), "");
  EXPECT_TRUE(closed);
  const std::string answer = ReadUntilClosed(partial, 5, &closed);
  EXPECT_TRUE(closed);
  EXPECT_EQ(answer.rfind("HTTP/1.1 408", 0), 0u) << answer;
  close(idle);
  close(partial);
  EXPECT_NE(HttpGet(f.port(), "/metrics").find("flightplan_http_timeouts_total 2"), std::string::npos);
}

// Past the connection limit, the oldest connection that has not sent a request makes room.
TEST(HttpServer, PastTheLimitTheOldestIdleConnectionMakesRoom) {
  HttpServerOptions options;
  options.max_connections = 8;
  Fixture f(options);
  std::vector<int> idle;
  for (int i = 0; i < 8; ++i) idle.push_back(Connect(f.port()));
  EXPECT_EQ(HttpGet(f.port(), "/metrics").rfind("HTTP/1.1 200", 0), 0u);
  bool closed = false;
  ReadUntilClosed(idle.front(), 5, &closed);
  EXPECT_TRUE(closed);  // the oldest gave way
  for (int fd : idle) close(fd);
}

TEST(HttpServer, RequestsAreReadAsHttp) {
  Fixture f;
  // The path is percent-decoded, the query left out, and a trailing '.' kept.
  EXPECT_NE(HttpGet(f.port(), "/runs/a%20b?x=1").find("<html>run a b</html>"), std::string::npos);
  EXPECT_NE(HttpGet(f.port(), "/runs/r.").find("<html>run r.</html>"), std::string::npos);
  EXPECT_EQ(HttpGet(f.port(), "/runs/nope").rfind("HTTP/1.1 404", 0), 0u);
  EXPECT_EQ(HttpGet(f.port(), "/runs").rfind("HTTP/1.1 301", 0), 0u);
  EXPECT_EQ(HttpGet(f.port(), "/runs/boom").rfind("HTTP/1.1 500", 0), 0u);
  EXPECT_EQ(HttpGet(f.port(), "/metricsx").rfind("HTTP/1.1 404", 0), 0u);
  EXPECT_EQ(HttpGet(f.port(), "/METRICS").rfind("HTTP/1.1 404", 0), 0u);
  EXPECT_EQ(HttpGet(f.port(), "/runs/%zz").rfind("HTTP/1.1 400", 0), 0u);
  auto raw = [&](const std::string& request) {
    const int fd = Connect(f.port());
    EXPECT_GT(write(fd, request.data(), request.size()), 0);
    bool closed = false;
    std::string out = ReadUntilClosed(fd, 5, &closed);
    close(fd);
    return out;
  };
  EXPECT_EQ(raw("POST /metrics HTTP/1.1\r\n\r\n").rfind("HTTP/1.1 405", 0), 0u);
  EXPECT_EQ(raw("nonsense\r\n\r\n").rfind("HTTP/1.1 400", 0), 0u);
  EXPECT_EQ(raw(std::string(20000, 'G')).rfind("HTTP/1.1 431", 0), 0u);
  // HEAD: the headers of a GET, no body.
  const std::string head = raw("HEAD /runs/r. HTTP/1.1\r\nHost: x\r\n\r\n");
  EXPECT_EQ(head.rfind("HTTP/1.1 200", 0), 0u) << head;
  EXPECT_NE(head.find("Content-Length: 19"), std::string::npos) << head;
  EXPECT_EQ(head.find("<html>"), std::string::npos);
  // The scrape times itself.
  EXPECT_NE(HttpGet(f.port(), "/metrics").find("flightplan_scrape_duration_seconds "), std::string::npos);
}

TEST(HttpServer, ABadAddressIsUnavailable) {
  absl::StatusOr<std::unique_ptr<HttpServer>> s = HttpServer::Start("127.0.0.1:notaport", {}, {}, Auth());
  EXPECT_EQ(s.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_NE(s.status().message().find("127.0.0.1:notaport"), std::string::npos) << s.status();
}

}  // namespace
}  // namespace flightplan::daemon
