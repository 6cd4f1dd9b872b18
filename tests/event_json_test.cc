// The fast JSON Lines event parser and printer (proto/event_json) against protobuf's own
// JSON parser, which is the definition of what a line means.
#include "convert/event_json.h"

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "convert/event_convert.h"
#include "google/protobuf/util/json_util.h"
#include "gtest/gtest.h"
#include "tests/event_log.h"

namespace flightplan::convert {
namespace {

struct General {
  bool ok;
  std::string message;
  v1::Event event;
};

General Protobuf(const std::string& line) {
  General g;
  google::protobuf::util::JsonParseOptions parse;
  parse.ignore_unknown_fields = false;
  const auto st = google::protobuf::util::JsonStringToMessage(line, &g.event, parse);
  g.ok = st.ok();
  g.message = std::string(st.message());
  return g;
}

// The contract for one line: the fast path accepts only what protobuf accepts, with the same
// message; ParseEventJson agrees with protobuf on acceptance, message and error text.
void ExpectAgrees(const std::string& line) {
  const General g = Protobuf(line);
  v1::Event fast;
  if (convert::ParseEventJsonFast(line, fast)) {
    ASSERT_TRUE(g.ok) << "fast path accepted what protobuf refuses (" << g.message << "): " << line;
    ASSERT_EQ(fast.SerializeAsString(), g.event.SerializeAsString()) << line;
  }
  v1::Event parsed;
  const absl::Status st = convert::ParseEventJson(line, parsed);
  ASSERT_EQ(st.ok(), g.ok) << line << ": " << st.message();
  if (g.ok) {
    ASSERT_EQ(parsed.SerializeAsString(), g.event.SerializeAsString()) << line;
  } else {
    ASSERT_EQ(std::string(st.message()), g.message) << line;
  }
}

std::vector<v1::Event> Sample() {
  std::vector<v1::Event> events = testing::SyntheticRun("run-1", 3000, 7);
  v1::Event odd = testing::InterruptedAt("run-1", 12.345678, "nccl", true);
  odd.mutable_interruption()->set_detail("rank 3: \"timeout\"\n\tat <ProcessGroupNCCL>");
  odd.set_id("i-1");
  odd.set_attempt(4);
  events.push_back(odd);
  events.push_back(testing::CheckpointAt("run-1", 1e-9, -1, 1.0 / 3.0));
  events.push_back(testing::CheckpointAt("run-1", 2, 7, -0.0));
  events.push_back(testing::StartedAt("run-1", 0, 4294967295u, 9007199254740993));
  // The nodes of a launch and of a stop, its GPUs, and the slowest rank (issue 39).
  v1::Event on_nodes = testing::StartedAt("run-1", 3, 5, 1200);
  for (const char* n : {"gpu-node-001", "gpu-node-002", "gpu-node-117"}) on_nodes.mutable_job_started()->add_nodes(n);
  on_nodes.mutable_job_started()->set_gpus(4088);
  events.push_back(on_nodes);
  v1::Event blamed = testing::InterruptedAt("run-1", 4, "gpu", false);
  blamed.mutable_interruption()->add_nodes("gpu-node-117");
  events.push_back(blamed);
  for (int rank : {0, 17, -1}) {
    v1::Event slow = *std::find_if(events.begin(), events.end(), [](const v1::Event& e) { return e.has_steps(); });
    slow.mutable_steps()->set_slowest_rank(rank);
    events.push_back(slow);
  }
  // Deliberate work and an operator's exclusion (issue 40).
  v1::Event span = testing::StepsAt("run-1", 5, 0, 0);
  span.clear_steps();
  span.mutable_span_started()->set_kind("eval");
  span.mutable_span_started()->set_expected_seconds(600.5);
  events.push_back(span);
  span.mutable_span_ended()->set_kind("eval");
  events.push_back(span);
  v1::Event excluded = testing::StepsAt("run-1", 6.25, 0, 0);
  excluded.clear_steps();
  excluded.mutable_excluded()->mutable_until()->set_seconds(testing::T0() + 3600);
  excluded.mutable_excluded()->mutable_until()->set_nanos(500000000);
  excluded.mutable_excluded()->set_reason("site power outage");
  events.push_back(excluded);
  return events;
}

TEST(EventJson, PrintsWhatBothParsersReadBack) {
  for (const v1::Event& e : Sample()) {
    std::string line;
    convert::AppendEventJson(e, line);
    const General g = Protobuf(line);
    ASSERT_TRUE(g.ok) << g.message << ": " << line;
    EXPECT_EQ(g.event.SerializeAsString(), e.SerializeAsString()) << line;
    v1::Event back;
    ASSERT_TRUE(convert::ParseEventJson(line, back).ok()) << line;
    EXPECT_EQ(back.SerializeAsString(), e.SerializeAsString()) << line;
  }
}

TEST(EventJson, FastPathTakesProtobufsOwnPrintingInBothNamings) {
  for (bool proto_names : {true, false}) {
    google::protobuf::util::JsonPrintOptions print;
    print.preserve_proto_field_names = proto_names;
    size_t fast = 0, total = 0;
    for (const v1::Event& e : Sample()) {
      std::string line;
      ASSERT_TRUE(google::protobuf::util::MessageToJsonString(e, &line, print).ok());
      v1::Event out;
      ++total;
      if (convert::ParseEventJsonFast(line, out)) {
        ++fast;
        EXPECT_EQ(out.SerializeAsString(), e.SerializeAsString()) << line;
      }
      ExpectAgrees(line);
    }
    // Only the interruption with escapes in its detail and the save of -0 seconds need the
    // general parser.
    EXPECT_EQ(fast, total - 2) << (proto_names ? "proto names" : "lowerCamel names");
  }
}

// Spans and exclusions (issue 40) convert both ways; an exclusion without its end, or sent
// as a launch's, is refused naming the field.
TEST(EventConvert, SpansAndExclusionsRoundTripAndAWindowNeedsItsEnd) {
  v1::Event x = testing::StepsAt("run-1", 10, 0, 0);
  x.clear_steps();
  x.mutable_excluded()->mutable_until()->set_seconds(testing::T0() + 100);
  x.mutable_excluded()->set_reason("outage");
  absl::StatusOr<forecast::Event> e = convert::EventFromProto(x);
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_EQ(e->kind, forecast::EventKind::kExcluded);
  EXPECT_EQ(e->detail, "outage");
  EXPECT_EQ(convert::EventToProto(*e, "run-1").SerializeAsString(), x.SerializeAsString());
  EXPECT_EQ(forecast::EventKey(*e, 3), absl::StrCat("~ex/t", (testing::T0() + 10) * 1000000));
  v1::Event open = x;
  open.mutable_excluded()->clear_until();
  absl::StatusOr<forecast::Event> refused = convert::EventFromProto(open);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("excluded.until is required"), std::string::npos) << refused.status();
  v1::Event launched = x;
  launched.set_attempt(2);
  refused = convert::EventFromProto(launched);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.status().message().find("event.attempt 2 on an excluded window"), std::string::npos)
      << refused.status();
  v1::Event span = testing::StepsAt("run-1", 10, 0, 0);
  span.clear_steps();
  span.set_attempt(2);
  span.mutable_span_started()->set_kind("sdc_check");
  span.mutable_span_started()->set_expected_seconds(90);
  e = convert::EventFromProto(span);
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_EQ(e->span, "sdc_check");
  EXPECT_EQ(e->expected_seconds, 90);
  EXPECT_EQ(convert::EventToProto(*e, "run-1").SerializeAsString(), span.SerializeAsString());
}

// The nodes an event names and its slowest rank (issue 39), as the daemon takes them.
TEST(EventConvert, NodesAreHostnamesAndTheSlowestRankARank) {
  v1::Event started = testing::StartedAt("run-1", 0, 1, 0);
  for (const char* n : {"gpu-node-117", "10.0.35.1", "n_7.cluster"}) started.mutable_job_started()->add_nodes(n);
  started.mutable_job_started()->set_gpus(16);
  absl::StatusOr<forecast::Event> e = convert::EventFromProto(started);
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_EQ(e->nodes, (std::vector<std::string>{"gpu-node-117", "10.0.35.1", "n_7.cluster"}));
  EXPECT_EQ(e->gpus, 16u);
  EXPECT_EQ(convert::EventToProto(*e, "run-1").SerializeAsString(), started.SerializeAsString());
  for (const char* bad : {"gpu-node-[1-2]", "a,b", "gpu node", ""}) {
    v1::Event b = started;
    b.mutable_job_started()->set_nodes(1, bad);
    absl::StatusOr<forecast::Event> refused = convert::EventFromProto(b);
    ASSERT_FALSE(refused.ok()) << bad;
    EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(refused.status().message().find(std::string("job_started.nodes[1] '") + bad + "' is not a hostname"),
              std::string::npos)
        << refused.status();
  }
  v1::Event stop = testing::InterruptedAt("run-1", 4, "gpu", false);
  stop.mutable_interruption()->add_nodes("bad/host");
  EXPECT_NE(convert::EventFromProto(stop).status().message().find("interruption.nodes[0] 'bad/host'"),
            std::string::npos);
  v1::Event steps = testing::SyntheticRun("run-1", 3, 1)[1];
  ASSERT_TRUE(steps.has_steps());
  EXPECT_EQ(convert::EventFromProto(steps)->slowest_rank, -1);  // not said
  steps.mutable_steps()->set_slowest_rank(17);
  EXPECT_EQ(convert::EventFromProto(steps)->slowest_rank, 17);
  steps.mutable_steps()->set_slowest_rank(-2);
  EXPECT_NE(convert::EventFromProto(steps).status().message().find("steps.slowest_rank -2 is not a rank"),
            std::string::npos);
}

TEST(EventJson, EdgesAgreeWithProtobuf) {
  const std::vector<std::string> lines = {
      R"({})",
      R"({"run":"r","time":"2028-02-29T23:59:59.5Z","steps":{"step":"10","tokens":20}})",
      R"({"run":"r","time":"2027-02-29T00:00:00Z","steps":{"step":1,"tokens":2}})",
      R"({"run":"r","time":"2027-01-01T24:00:00Z"})",
      R"({"run":"r","time":"0000-01-01T00:00:00Z"})",
      R"({"run":"r","time":"0001-01-01T00:00:00Z"})",
      R"({"run":"r","time":"9999-12-31T23:59:59.999999999Z"})",
      R"({"run":"r","time":"2027-01-01T00:00:00.1234567890Z"})",
      R"({"run":"r","time":"2027-01-01T00:00:00.Z"})",
      R"({"run":"r","time":"2027-01-01T00:00:00+01:00"})",
      R"({"run":"r","time":"2027-01-01T00:00:00z"})",
      R"({"run":"r","time":"2027-01-01 00:00:00Z"})",
      R"({"run":"r","attempt":-1})",
      R"({"run":"r","attempt":4294967296})",
      R"({"run":"r","attempt":"7"})",
      R"({"run":"r","attempt":1.0})",
      R"({"run":"r","attempt":1e2})",
      R"({"run":"r","attempt":007})",
      R"({"run":"r","steps":{"step":-0}})",
      R"({"run":"r","steps":{"step":"-12","tokens":"9223372036854775807"}})",
      R"({"run":"r","steps":{"step":"9223372036854775808"}})",
      R"({"run":"r","steps":{"step":1,"step":2}})",
      R"({"run":"r","run":"s"})",
      R"({"run":"r","steps":{},"runFinished":{}})",
      R"({"run":"r","job_started":{},"jobStarted":{}})",
      R"({"run":"r","checkpointSaved":{"step":3,"blockingSeconds":1.5e-3}})",
      R"({"run":"r","checkpoint_saved":{"step":3,"blocking_seconds":"NaN"}})",
      R"({"run":"r","checkpoint_saved":{"step":3,"blocking_seconds":1e999}})",
      R"({"run":"r","checkpoint_saved":{"step":3,"blocking_seconds":.5}})",
      R"({"run":"r","checkpoint_saved":{"step":3,"blocking_seconds":-0.0}})",
      R"({"run":"r","checkpoint_saved":{"step":3,"blocking_seconds":-0}})",
      R"({"run":"r","checkpoint_saved":{"step":3,"blocking_seconds":-0e5}})",
      R"({"run":"r","time":"0001-01-01T00:00:00+01:00"})",
      R"({"run":"r","interruption":{"cause":"gpu","planned":true,"detail":"x"}})",
      R"({"run":"r","interruption":{"cause":"gpu","planned":"true"}})",
      R"({"run":"r","interruption":{"cause":"gpu","planned":truex}})",
      R"({"run":"r","interruption":{"cause":"caf\u00e9"}})",
      "{\"run\":\"caf\xc3\xa9\"}",
      "{\"run\":\"\xff\"}",
      R"({"run":null})",
      R"({"run":"r","steps":null})",
      R"({"run":"r","unknown":1})",
      R"({"run":"r",})",
      R"({"run":"r"} x)",
      R"({"run":"r"}   )",
      R"(  { "run" : "r" , "steps" : { "step" : 1 , "tokens" : 2 } }  )",
      R"([1,2])",
      R"({"run":"r","runFinished":{"x":1}})",
      "",
      "not json",
  };
  for (const std::string& line : lines) ExpectAgrees(line);
}

// Random damage to real lines: bytes flipped, JSON-ish tokens inserted, spans deleted or
// doubled. Bounded: 60,000 lines.
TEST(EventJson, MutatedLinesAgreeWithProtobuf) {
  std::vector<std::string> seeds;
  for (const v1::Event& e : Sample()) {
    std::string line;
    convert::AppendEventJson(e, line);
    seeds.push_back(line);
    if (seeds.size() > 40) break;
  }
  static const std::vector<std::string> kTokens = {"\"",
                                                   "\\",
                                                   "{",
                                                   "}",
                                                   ":",
                                                   ",",
                                                   "-",
                                                   "0",
                                                   "9",
                                                   ".",
                                                   "e",
                                                   "Z",
                                                   "T",
                                                   "null",
                                                   "true",
                                                   " ",
                                                   "\"steps\":{}",
                                                   "\"attempt\":",
                                                   "1e3",
                                                   "\"runFinished\":{}",
                                                   "+01:00",
                                                   "\\u0041",
                                                   "\xc3\xa9"};
  std::mt19937 rng(11);
  size_t fast_ok = 0;
  for (int i = 0; i < 60000; ++i) {
    std::string line = seeds[rng() % seeds.size()];
    const int edits = 1 + static_cast<int>(rng() % 3);
    for (int k = 0; k < edits && !line.empty(); ++k) {
      const size_t at = rng() % line.size();
      switch (rng() % 4) {
        case 0:
          line[at] = static_cast<char>(32 + rng() % 95);
          break;
        case 1:
          line.insert(at, kTokens[rng() % kTokens.size()]);
          break;
        case 2:
          line.erase(at, 1 + rng() % 6);
          break;
        default:
          line.insert(at, line.substr(at, 1 + rng() % 12));
          break;
      }
    }
    ExpectAgrees(line);
    if (::testing::Test::HasFatalFailure()) return;
    v1::Event e;
    fast_ok += convert::ParseEventJsonFast(line, e) ? 1 : 0;
  }
  // The comparison means something only if many mutants still take the fast path.
  EXPECT_GT(fast_ok, 1000u);  // 1,656 with this seed
}

}  // namespace
}  // namespace flightplan::convert
