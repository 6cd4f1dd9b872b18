// The fast JSON Lines event parser and printer (proto/event_json) against protobuf's own
// JSON parser, which is the definition of what a line means.
#include "convert/event_json.h"

#include <random>
#include <string>
#include <vector>

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
