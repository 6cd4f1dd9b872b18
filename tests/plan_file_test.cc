// Plan files: YAML and JSON, numbers in e-notation, and errors that name line and key.
#include "cli/plan_file.h"

#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "convert/plan_convert.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/util/message_differencer.h"
#include "gtest/gtest.h"
#include "planner/plan_engine.h"

namespace flightplan::cli {
namespace {

constexpr char kYaml[] = R"(name: t
start_time: "2027-01-04T00:00:00Z"
model:
  params: 70e9
  seq_len: 8192
data:
  tokens: 10e12
  dataset_tokens: "15.6e12"
hardware:
  peak_flops: 989e12
  gpus_per_node: 8
fleet:
  gpus: 4096
layout:
  tp: 8
checkpoint:
  async: yes
)";

TEST(PlanFile, NumbersInENotationWorkEverywhere) {
  absl::StatusOr<v1::Plan> plan = ParsePlan(kYaml, "plan.yaml");
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_DOUBLE_EQ(plan->model().params(), 70e9);
  EXPECT_EQ(plan->data().tokens(), 10'000'000'000'000u);          // uint64 from 10e12
  EXPECT_EQ(plan->data().dataset_tokens(), 15'600'000'000'000u);  // quoted works too
  EXPECT_DOUBLE_EQ(plan->hardware().peak_flops(), 989e12);
  EXPECT_EQ(plan->fleet().gpus(), 4096u);
  EXPECT_TRUE(plan->layout().has_tp());
  EXPECT_FALSE(plan->layout().has_pp());  // presence is kept for defaults
  EXPECT_TRUE(plan->checkpoint().async());
  EXPECT_EQ(plan->start_time().seconds(), 1799020800);
}

TEST(PlanFile, JsonAndCamelCaseGiveTheSamePlan) {
  constexpr char kJson[] = R"({
  "name": "t", "startTime": "2027-01-04T00:00:00Z",
  "model": {"params": 70e9, "seqLen": 8192},
  "data": {"tokens": 10000000000000, "dataset_tokens": "15.6e12"},
  "hardware": {"peak_flops": 9.89e14, "gpusPerNode": 8},
  "fleet": {"gpus": 4096}, "layout": {"tp": 8}, "checkpoint": {"async": true}
})";
  absl::StatusOr<v1::Plan> yaml = ParsePlan(kYaml, "plan.yaml");
  absl::StatusOr<v1::Plan> json = ParsePlan(kJson, "plan.json");
  ASSERT_TRUE(yaml.ok()) << yaml.status();
  ASSERT_TRUE(json.ok()) << json.status();
  EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(*yaml, *json)) << yaml->DebugString() << "\nvs\n"
                                                                                << json->DebugString();
}

struct BadCase {
  const char* name;
  const char* text;
  const char* expected;  // a substring of the message: source, line and key
};

void PrintTo(const BadCase& c, std::ostream* os) { *os << c.name; }

class BadPlans : public ::testing::TestWithParam<BadCase> {};

TEST_P(BadPlans, NameTheLineAndTheKey) {
  absl::StatusOr<v1::Plan> plan = ParsePlan(GetParam().text, "plan.yaml");
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(std::string(plan.status().message()).find(GetParam().expected), std::string::npos)
      << plan.status().message();
}

const BadCase kBadCases[] = {
    {"UnknownTopLevelKey", "name: x\nmodle:\n  params: 1\n", "plan.yaml:2: modle: unknown key 'modle'"},
    {"UnknownNestedKey", "name: x\nmodel:\n  params: 1\n  layer: 80\n",
     "plan.yaml:4: model.layer: unknown key 'layer' in model"},
    {"NotANumber", "model:\n  params: 1\n  hidden: abc\n",
     "plan.yaml:3: model.hidden: expected a whole number, got 'abc'"},
    {"FractionForAnInteger", "fleet:\n  gpus: 40.5\n", "plan.yaml:2: fleet.gpus: expected a whole number, got '40.5'"},
    {"NegativeForUnsigned", "fleet:\n  gpus: -8\n", "plan.yaml:2: fleet.gpus: expected a non-negative"},
    {"TooBigForUint32", "fleet:\n  gpus: 1e10\n", "plan.yaml:2: fleet.gpus: value 1e10 is out of range"},
    {"DoubleNotNumeric", "efficiency:\n  mfu: forty\n", "plan.yaml:2: efficiency.mfu: expected a number, got 'forty'"},
    {"InfinityRefused", "efficiency:\n  mfu: .inf\n", "efficiency.mfu: expected a number"},
    {"MappingForAScalar", "model:\n  params:\n    a: 1\n",
     "plan.yaml:3: model.params: expected a single value, got a mapping"},
    {"ScalarForASection", "model: 70e9\n", "plan.yaml:1: model: expected a mapping of keys"},
    {"ListRefused", "model:\n  params: [1, 2]\n", "plan.yaml:2: model.params: expected a single value, got a list"},
    {"BadBool", "checkpoint:\n  async: maybe\n", "plan.yaml:2: checkpoint.async: expected true or false, got 'maybe'"},
    {"BadTime", "start_time: next monday\n", "plan.yaml:1: start_time: expected an RFC 3339"},
    {"DuplicateKey", "fleet:\n  gpus: 8\n  gpus: 16\n", "plan.yaml:3: fleet.gpus: duplicate key"},
    {"SyntaxError", "model:\n  params: [1, 2\n", "plan.yaml:2:11: syntax error: this '[' is never closed"},
    // Where the bad construct begins (line 3), not only where the parser gave up (line 4).
    {"UnclosedFlowNamesItsLine", "name: x\nmodel:\n  params: [unclosed\n  layers: 80\n",
     "plan.yaml:3:11: syntax error: this '[' is never closed (the YAML parser gave up at 4:"},
    {"WrongClosingBracket", "name: it's [a] # a [ in a comment\nmodel: {params: 70e9, layers: [1, 2}\n",
     "plan.yaml:2:31: syntax error: this '[' is never closed"},
    {"UnclosedQuote", "name: \"dense\nmodel:\n  params: 70e9\n",
     "plan.yaml:1:7: syntax error: this quoted string is never closed"},
    {"BlockScalarSkipped", "notes: |\n  a [ and a \" inside\nmodel:\n  params: {a: 1\n",
     "plan.yaml:4:11: syntax error: this '{' is never closed"},
    {"OtherSyntaxErrorsAsTheParserSaysThem", "model:\n  params: 70e9\n   layers: 3\n",
     "plan.yaml:3:10: syntax error: illegal map value"},
    {"NotAMapping", "- a\n- b\n", "expected a mapping of keys"},
    {"Empty", "", "plan.yaml: the plan is empty"},
    {"PhasesNotAList", "phases: 3\n", "plan.yaml:1: phases: expected a list, got '3'"},
    {"PhaseNotAMapping", "phases:\n  - 5\n", "plan.yaml:2: phases[0]: expected a mapping of keys"},
    {"PhaseUnknownKey", "phases:\n  - name: a\n    tokens: 1\n  - name: b\n    tokenz: 2\n",
     "plan.yaml:5: phases[1].tokenz: unknown key 'tokenz' in phases[1]"},
    {"RemovedBubbleKey", "efficiency:\n  mfu: 0.4\n  includes_pipeline_bubble: false\n",
     "plan.yaml:3: efficiency.includes_pipeline_bubble: was removed: efficiency.mfu and hfu are end to end now"},
    {"RemovedBubbleKeyInAPhase", "phases:\n  - efficiency:\n      includes_pipeline_bubble: true\n",
     "plan.yaml:3: phases[0].efficiency.includes_pipeline_bubble: was removed"},
    {"PhaseBadRamp", "phases:\n  - ramp:\n      from_sequences: many\n",
     "plan.yaml:3: phases[0].ramp.from_sequences: expected a whole number, got 'many'"},
};

// Valid YAML the unclosed-quote check must not refuse (the review's cases): comments in
// column 1, apostrophes and quotes in plain scalars and continuation lines, anchors and
// tags, CRLF block scalars, closed multi-line quotes, quoted keys, '' escapes.
TEST(PlanFile, QuotesAndBracketsInValidYamlAreNotErrors) {
  const std::vector<std::string> texts = {
      "name: x\n# Note: 'tis the season\nmodel:\n  params: 70e9\n",
      "name: x\n# usage: \"flightplan plan\nmodel:\n  params: 70e9\n",
      "name: this run follows the\n  'tis recipe\nmodel:\n  params: 70e9\n",
      "name: &n \"see: 'x\"\nmodel:\n  params: 70e9\n",
      "name: !!str \"see: 'x\"\nmodel:\n  params: 70e9\n",
      "name: |\r\n  a\r\n\r\n  Note: 'tis \"x\r\nmodel:\r\n  params: 70e9\r\n",
      "name: \"two\n  lines\"\nmodel:\n  params: 70e9\n",
      "\"name\": 'it''s'\nmodel: {params: 70e9, layers: 80}\n",
      "name: a[1] it's\nmodel:\n  params: 70e9\n",
  };
  for (const std::string& text : texts) {
    absl::StatusOr<v1::Plan> plan = ParsePlan(text, "plan.yaml");
    EXPECT_TRUE(plan.ok()) << text << "\n" << plan.status();
  }
}

INSTANTIATE_TEST_SUITE_P(PlanFile, BadPlans, ::testing::ValuesIn(kBadCases),
                         [](const auto& param_info) { return std::string(param_info.param.name); });

TEST(PlanFile, PhasesAreAListOfPartialPlans) {
  absl::StatusOr<v1::Plan> plan = ParsePlan(R"(data:
  tokens: 366e9
layout:
  grad_accum: 128
phases:
  - name: ramp-up
    tokens: 20e9
    ramp: {from_sequences: 192, step_sequences: 16}
  - name: long
    tokens: 346e9
    model: {seq_len: 131072}
    fleet: {gpus: 192}
    layout: {cp: 16}
    efficiency: {hfu: 0.4, recompute: full}
  - name: typo
    tokens: 0
    model: {params: 8e9, seq_len: 4096}
)",
                                            "plan.yaml");
  ASSERT_TRUE(plan.ok()) << plan.status();
  const planner::PlanSpec spec = convert::PlanFromProto(*plan);
  ASSERT_EQ(spec.phases.size(), 3u);
  // A field that cannot change between phases is carried to the engine, which refuses it.
  EXPECT_TRUE(spec.phases[1].unchangeable.empty());
  EXPECT_EQ(spec.phases[2].unchangeable, std::vector<std::string>{"model.params"});
  const planner::PlanReport r = planner::ComputePlan(spec);
  bool named = false;
  for (const planner::Finding& f : r.findings) {
    named |= f.message.rfind("phases[2].model.params cannot change between phases", 0) == 0;
  }
  EXPECT_TRUE(named);
  EXPECT_EQ(spec.phases[0].name, "ramp-up");
  EXPECT_EQ(spec.phases[0].tokens, 20'000'000'000u);
  ASSERT_TRUE(spec.phases[0].ramp.has_value());
  EXPECT_EQ(spec.phases[0].ramp->from_sequences, 192u);
  EXPECT_EQ(spec.phases[0].ramp->step_sequences, 16u);
  EXPECT_FALSE(spec.phases[0].efficiency.has_value());
  EXPECT_FALSE(spec.phases[0].layout.grad_accum.has_value());  // the plan's applies
  EXPECT_EQ(spec.phases[1].seq_len, 131072u);
  EXPECT_EQ(spec.phases[1].gpus, 192u);
  EXPECT_EQ(spec.phases[1].layout.cp, 16u);
  ASSERT_TRUE(spec.phases[1].efficiency.has_value());
  EXPECT_DOUBLE_EQ(spec.phases[1].efficiency->hfu.value_or(0), 0.4);
  EXPECT_EQ(spec.phases[1].efficiency->recompute, "full");
}

TEST(PlanFile, NullLeavesAFieldUnset) {
  absl::StatusOr<v1::Plan> plan = ParsePlan("deadline: ~\nfleet:\n  pue:\n", "p");
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_FALSE(plan->has_deadline());
  EXPECT_FALSE(plan->fleet().has_pue());
}

TEST(PlanFile, BigIntegersAreExact) {
  absl::StatusOr<v1::Plan> plan = ParsePlan("data:\n  tokens: 18446744073709551615\n", "p");
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->data().tokens(), 18446744073709551615u);
}

TEST(PlanFile, TimestampsAcceptRfc3339AndDates) {
  absl::StatusOr<absl::Time> t = ParseTimestamp("2027-03-01");
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(absl::ToUnixSeconds(*t), 1803859200);  // 2027-03-01T00:00:00Z
  t = ParseTimestamp("2027-03-01T02:00:00+02:00");
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(absl::ToUnixSeconds(*t), 1803859200);
  EXPECT_FALSE(ParseTimestamp("March").ok());
}

TEST(PlanFile, MissingFileIsNotFound) {
  absl::StatusOr<v1::Plan> plan = LoadPlanFile("/nonexistent/plan.yaml");
  ASSERT_FALSE(plan.ok());
  EXPECT_EQ(plan.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(std::string(plan.status().message()).find("/nonexistent/plan.yaml"), std::string::npos);
}

TEST(PlanFile, DirectoryIsRefused) {
  absl::StatusOr<v1::Plan> plan = LoadPlanFile("/tmp");
  ASSERT_FALSE(plan.ok());
  EXPECT_NE(std::string(plan.status().message()).find("/tmp"), std::string::npos);
}

// docs/planner.md's "Every key" table names every key a plan file can hold, as the user
// writes it: each field of flightplan.v1.Plan by its dotted path (`phases[].tokens`), a
// message already listed at the top (a phase's layout) by its own path only.
void KeyPaths(const google::protobuf::Descriptor* d, const std::string& prefix,
              std::set<const google::protobuf::Descriptor*>& seen, std::vector<std::string>& out) {
  seen.insert(d);
  for (int i = 0; i < d->field_count(); ++i) {
    const google::protobuf::FieldDescriptor* f = d->field(i);
    const std::string path = prefix + f->name();
    const google::protobuf::Descriptor* m = f->message_type();
    if (m == nullptr || m->full_name() == "google.protobuf.Timestamp" || seen.count(m) > 0) {
      out.push_back(path);
    } else {
      KeyPaths(m, path + (f->is_repeated() ? "[]." : "."), seen, out);
    }
  }
}

TEST(PlanDocs, EveryKeyIsInThePlannersTable) {
  std::ifstream in(std::string(FLIGHTPLAN_DOCS_DIR) + "/planner.md");
  ASSERT_TRUE(in.good());
  std::stringstream text;
  text << in.rdbuf();
  const std::string doc = text.str();
  const size_t table = doc.find("## Every key");
  ASSERT_NE(table, std::string::npos);
  std::set<const google::protobuf::Descriptor*> seen;
  std::vector<std::string> keys;
  KeyPaths(v1::Plan::descriptor(), "", seen, keys);
  EXPECT_GT(keys.size(), 90u);
  for (const std::string& key : keys) {
    EXPECT_NE(doc.find("| `" + key + "` |", table), std::string::npos) << key << " is not in docs/planner.md's table";
  }
}

}  // namespace
}  // namespace flightplan::cli
