#include "cli/plan_file.h"

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <limits>
#include <optional>
#include <set>
#include <sstream>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "convert/plan_convert.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/reflection.h"
#include "google/protobuf/timestamp.pb.h"
#include "yaml-cpp/yaml.h"

namespace flightplan::cli {
namespace {

using google::protobuf::Descriptor;
using google::protobuf::FieldDescriptor;
using google::protobuf::Message;
using google::protobuf::Reflection;

class Filler {
 public:
  explicit Filler(std::string source) : source_(std::move(source)) {}

  absl::Status Fill(const YAML::Node& node, Message& msg, const std::string& path) {
    if (node.IsNull()) return absl::OkStatus();
    if (!node.IsMap()) {
      return Err(node, path.empty() ? "the plan" : path, absl::StrCat("expected a mapping of keys, got ", Kind(node)));
    }
    const Descriptor* desc = msg.GetDescriptor();
    const Reflection* refl = msg.GetReflection();
    std::set<int> seen;
    // By value: yaml-cpp's iterator yields a temporary pair, so references into `it->first`
    // dangle (found by the plan fuzzer under ASan).
    for (const auto& entry : node) {
      const YAML::Node key_node = entry.first;
      const YAML::Node value = entry.second;
      if (!key_node.IsScalar()) return Err(key_node, path, "keys must be plain names");
      const std::string key = key_node.Scalar();
      const FieldDescriptor* field = desc->FindFieldByName(key);
      if (field == nullptr) field = desc->FindFieldByCamelcaseName(key);
      const std::string field_path = path.empty() ? key : absl::StrCat(path, ".", key);
      if (field == nullptr && key == "includes_pipeline_bubble" && desc->name() == "Efficiency") {
        return Err(key_node, field_path,
                   "was removed: efficiency.mfu and hfu are end to end now, the bubble included, as papers "
                   "state them (delete the key if it was true); for the efficiency while the pipeline is busy, "
                   "with the bubble charged on top, write busy_mfu or busy_hfu instead of mfu or hfu");
      }
      if (field == nullptr) {
        std::vector<std::string> known;
        for (int i = 0; i < desc->field_count(); ++i) known.push_back(desc->field(i)->name());
        return Err(key_node, field_path,
                   absl::StrCat("unknown key '", key, "'", path.empty() ? "" : absl::StrCat(" in ", path),
                                " (known: ", absl::StrJoin(known, ", "), ")"));
      }
      if (!seen.insert(field->number()).second) {
        return Err(key_node, field_path, "duplicate key");
      }
      if (value.IsNull()) continue;  // `key:` or `key: ~` leaves the field unset
      if (field->is_repeated()) {
        // A list of mappings (phases); a list of plain values has no field here.
        if (field->type() != FieldDescriptor::TYPE_MESSAGE) {
          return Err(value, field_path, "lists are not accepted here");
        }
        if (!value.IsSequence()) {
          return Err(value, field_path, absl::StrCat("expected a list, got ", Kind(value)));
        }
        for (size_t i = 0; i < value.size(); ++i) {
          const YAML::Node item = value[i];
          const std::string item_path = absl::StrCat(field_path, "[", i, "]");
          if (!item.IsMap()) return Err(item, item_path, absl::StrCat("expected a mapping of keys, got ", Kind(item)));
          absl::Status st = Fill(item, *refl->AddMessage(&msg, field), item_path);
          if (!st.ok()) return st;
        }
        continue;
      }
      absl::Status st = SetField(value, msg, *refl, *field, field_path);
      if (!st.ok()) return st;
    }
    return absl::OkStatus();
  }

 private:
  absl::Status SetField(const YAML::Node& value, Message& msg, const Reflection& refl, const FieldDescriptor& field,
                        const std::string& path) {
    if (field.type() == FieldDescriptor::TYPE_MESSAGE) {
      Message* sub = refl.MutableMessage(&msg, &field);
      if (field.message_type()->full_name() == "google.protobuf.Timestamp") {
        if (!value.IsScalar()) return Err(value, path, "expected a timestamp");
        absl::StatusOr<absl::Time> t = ParseTimestamp(value.Scalar());
        if (!t.ok()) return Err(value, path, std::string(t.status().message()));
        static_cast<google::protobuf::Timestamp&>(*sub) = convert::TimeToProto(*t);
        return absl::OkStatus();
      }
      return Fill(value, *sub, path);
    }
    if (!value.IsScalar()) {
      return Err(value, path, absl::StrCat("expected a single value, got ", Kind(value)));
    }
    const std::string text = std::string(absl::StripAsciiWhitespace(value.Scalar()));
    switch (field.cpp_type()) {
      case FieldDescriptor::CPPTYPE_STRING:
        refl.SetString(&msg, &field, value.Scalar());
        return absl::OkStatus();
      case FieldDescriptor::CPPTYPE_BOOL: {
        const std::string b = absl::AsciiStrToLower(text);
        if (b == "true" || b == "yes" || b == "on") {
          refl.SetBool(&msg, &field, true);
        } else if (b == "false" || b == "no" || b == "off") {
          refl.SetBool(&msg, &field, false);
        } else {
          return Err(value, path, absl::StrCat("expected true or false, got '", text, "'"));
        }
        return absl::OkStatus();
      }
      case FieldDescriptor::CPPTYPE_DOUBLE:
      case FieldDescriptor::CPPTYPE_FLOAT: {
        double v = 0;
        if (!ParseNumber(text, v)) {
          return Err(value, path, absl::StrCat("expected a number, got '", text, "'"));
        }
        if (field.cpp_type() == FieldDescriptor::CPPTYPE_DOUBLE) {
          refl.SetDouble(&msg, &field, v);
        } else {
          refl.SetFloat(&msg, &field, static_cast<float>(v));
        }
        return absl::OkStatus();
      }
      case FieldDescriptor::CPPTYPE_INT32:
      case FieldDescriptor::CPPTYPE_INT64:
      case FieldDescriptor::CPPTYPE_UINT32:
      case FieldDescriptor::CPPTYPE_UINT64:
        return SetInteger(value, text, msg, refl, field, path);
      case FieldDescriptor::CPPTYPE_ENUM: {
        const auto* ev = field.enum_type()->FindValueByName(text);
        if (ev == nullptr) return Err(value, path, absl::StrCat("unknown value '", text, "'"));
        refl.SetEnum(&msg, &field, ev);
        return absl::OkStatus();
      }
      default:
        return Err(value, path, "unsupported field type");
    }
  }

  absl::Status SetInteger(const YAML::Node& value, const std::string& text, Message& msg, const Reflection& refl,
                          const FieldDescriptor& field, const std::string& path) {
    // Exact integers first (no rounding above 2^53), then e-notation such as 10e12.
    bool negative = !text.empty() && text[0] == '-';
    uint64_t magnitude = 0;
    const char* begin = text.data() + (negative ? 1 : 0);
    const char* end = text.data() + text.size();
    auto [ptr, ec] = std::from_chars(begin, end, magnitude);
    if (ec != std::errc() || ptr != end || begin == end) {
      double v = 0;
      if (!ParseNumber(text, v) || v != std::floor(v)) {
        return Err(value, path, absl::StrCat("expected a whole number, got '", text, "'"));
      }
      negative = v < 0;
      if (std::fabs(v) >= 18446744073709551616.0) {
        return Err(value, path, absl::StrCat("value ", text, " is out of range"));
      }
      magnitude = static_cast<uint64_t>(std::fabs(v));
    }
    const bool is_unsigned =
        field.cpp_type() == FieldDescriptor::CPPTYPE_UINT32 || field.cpp_type() == FieldDescriptor::CPPTYPE_UINT64;
    if (negative && is_unsigned && magnitude != 0) {
      return Err(value, path, absl::StrCat("expected a non-negative whole number, got '", text, "'"));
    }
    uint64_t max = 0;
    switch (field.cpp_type()) {
      case FieldDescriptor::CPPTYPE_INT32:
        max = std::numeric_limits<int32_t>::max();
        break;
      case FieldDescriptor::CPPTYPE_INT64:
        max = std::numeric_limits<int64_t>::max();
        break;
      case FieldDescriptor::CPPTYPE_UINT32:
        max = std::numeric_limits<uint32_t>::max();
        break;
      default:
        max = std::numeric_limits<uint64_t>::max();
        break;
    }
    if (magnitude > max) {
      return Err(value, path, absl::StrCat("value ", text, " is out of range (max ", max, ")"));
    }
    const int64_t signed_value = negative ? -static_cast<int64_t>(magnitude) : static_cast<int64_t>(magnitude);
    switch (field.cpp_type()) {
      case FieldDescriptor::CPPTYPE_INT32:
        refl.SetInt32(&msg, &field, static_cast<int32_t>(signed_value));
        break;
      case FieldDescriptor::CPPTYPE_INT64:
        refl.SetInt64(&msg, &field, signed_value);
        break;
      case FieldDescriptor::CPPTYPE_UINT32:
        refl.SetUInt32(&msg, &field, static_cast<uint32_t>(magnitude));
        break;
      default:
        refl.SetUInt64(&msg, &field, magnitude);
        break;
    }
    return absl::OkStatus();
  }

  static bool ParseNumber(const std::string& text, double& out) {
    if (text.empty()) return false;
    // Digits, sign, point and exponent only: no hex, "inf" or "nan".
    for (char c : text) {
      if (!(std::isdigit(static_cast<unsigned char>(c)) || c == '.' || c == 'e' || c == 'E' || c == '+' || c == '-' ||
            c == '_')) {
        return false;
      }
    }
    std::string clean;
    for (char c : text) {
      if (c != '_') clean.push_back(c);  // YAML 1.1 allows 10_000
    }
    errno = 0;
    char* end = nullptr;
    const double v = std::strtod(clean.c_str(), &end);
    if (end != clean.c_str() + clean.size() || errno == ERANGE || !std::isfinite(v)) return false;
    out = v;
    return true;
  }

  static std::string Kind(const YAML::Node& n) {
    if (n.IsMap()) return "a mapping";
    if (n.IsSequence()) return "a list";
    if (n.IsScalar()) return absl::StrCat("'", n.Scalar(), "'");
    return "nothing";
  }

  absl::Status Err(const YAML::Node& node, const std::string& path, const std::string& what) const {
    const YAML::Mark mark = node.Mark();
    const std::string where = mark.is_null() ? std::string(source_) : absl::StrCat(source_, ":", mark.line + 1);
    return absl::InvalidArgumentError(absl::StrCat(where, ": ", path.empty() ? "" : absl::StrCat(path, ": "), what));
  }

  std::string source_;
};

}  // namespace

absl::StatusOr<absl::Time> ParseTimestamp(std::string_view text) {
  const std::string s(absl::StripAsciiWhitespace(std::string(text)));
  absl::Time t;
  std::string err;
  if (absl::ParseTime(absl::RFC3339_full, s, &t, &err)) return t;
  if (absl::ParseTime("%Y-%m-%d", s, absl::UTCTimeZone(), &t, &err)) return t;
  return absl::InvalidArgumentError(
      absl::StrCat("expected an RFC 3339 time such as 2027-03-01T00:00:00Z or a date such as 2027-03-01, "
                   "got '",
                   s, "'"));
}

namespace {

// Where a construct the YAML parser gave up on begins: the first flow collection ('[' or
// '{') or quoted scalar still open at the end of the text, as line and column (1-based)
// and the character. yaml-cpp reports where it stopped (often the next key, or the end),
// which is not where the mistake is. A bracket or quote counts only where a value can
// start (after "key: ", "- ", inside a flow collection after '[', '{' or ','), so that
// plain scalars like "it's" or "a[1]" do not; comments and block scalars are skipped.
struct Opener {
  int line = 0, column = 0;
  char what = 0;
};
std::optional<Opener> Unclosed(std::string_view text) {
  std::vector<Opener> open;  // flow collections, innermost last
  std::optional<Opener> quote;
  int line = 1, column = 0;
  bool value_start = true;  // a scalar, bracket or quote may start here
  int block_indent = -1;    // inside a block scalar indented more than this
  size_t i = 0;
  // A line of a block scalar (indented past its key, or blank) is skipped whole: the
  // position of its newline (npos at the end of the text), or nullopt.
  auto block_line = [&](size_t k) -> std::optional<size_t> {
    size_t indent = 0;
    while (k + indent < text.size() && text[k + indent] == ' ') ++indent;
    const bool blank = k + indent >= text.size() || text[k + indent] == '\n' || text[k + indent] == '\r';
    if (block_indent >= 0 && (blank || static_cast<int>(indent) > block_indent)) return text.find('\n', k);
    block_indent = -1;
    return std::nullopt;
  };
  size_t line_start = 0;
  for (bool new_line = true; i < text.size(); ++i) {
    if (new_line) {
      new_line = false;
      line_start = i;
      if (!quote) {
        if (const std::optional<size_t> skip = block_line(i)) {
          if (*skip == std::string_view::npos) break;
          i = *skip;
          ++line;
          new_line = true;
          continue;
        }
        value_start = true;
      }
    }
    const char c = text[i];
    column = static_cast<int>(i - line_start) + 1;
    if (c == '\n') {
      ++line;
      new_line = true;
      continue;
    }
    if (quote) {
      if (quote->what == '"' && c == '\\') {
        ++i;
      } else if (c == quote->what) {
        if (quote->what == '\'' && i + 1 < text.size() && text[i + 1] == '\'') {
          ++i;  // '' inside single quotes
        } else {
          quote.reset();
          value_start = false;
        }
      }
      continue;
    }
    if (c == '#' && (i == line_start || text[i - 1] == ' ' || text[i - 1] == '\t')) {
      const size_t end = text.find('\n', i);
      if (end == std::string_view::npos) break;
      i = end - 1;
      continue;
    }
    if (c == ' ' || c == '\t' || c == '\r') continue;
    if (value_start && (c == '&' || c == '!')) {
      // An anchor or a tag before the value: skip the token, the value starts after it.
      while (i + 1 < text.size() && text[i + 1] != ' ' && text[i + 1] != '\n') ++i;
      continue;
    }
    if (value_start && (c == '"' || c == '\'')) {
      quote = Opener{line, column, c};
      continue;
    }
    if (value_start && (c == '[' || c == '{')) {
      open.push_back(Opener{line, column, c});
      continue;  // still at a value's start
    }
    if (!open.empty() && (c == ']' || c == '}')) {
      if ((c == ']') != (open.back().what == '[')) return open.back();  // closed by the wrong bracket
      open.pop_back();
      value_start = false;
      continue;
    }
    if (!open.empty() && c == ',') {
      value_start = true;
      continue;
    }
    if (c == '-' && value_start && (i + 1 >= text.size() || text[i + 1] == ' ' || text[i + 1] == '\n')) continue;
    if (c == ':' && (i + 1 >= text.size() || text[i + 1] == ' ' || text[i + 1] == '\n' ||
                     (!open.empty() && (text[i + 1] == ',' || text[i + 1] == ']' || text[i + 1] == '}')))) {
      value_start = true;
      continue;
    }
    if (value_start && open.empty() && (c == '|' || c == '>')) {
      block_indent = static_cast<int>(text.find_first_not_of(' ', line_start) - line_start);
      const size_t end = text.find('\n', i);
      if (end == std::string_view::npos) break;
      i = end - 1;
      continue;
    }
    value_start = false;
  }
  if (!open.empty()) return open.front();
  if (quote) return quote;
  return std::nullopt;
}

// Whether a scalar of the document (a value or a key) starts at this 0-based line and column.
bool HasScalarAt(const YAML::Node& node, int line, int column) {
  if (!node.IsDefined()) return false;
  const YAML::Mark mark = node.Mark();
  if (node.IsScalar()) return !mark.is_null() && mark.line == line && mark.column == column;
  if (node.IsSequence()) {
    for (const YAML::Node& item : node) {
      if (HasScalarAt(item, line, column)) return true;
    }
  } else if (node.IsMap()) {
    for (const auto& kv : node) {
      if (HasScalarAt(kv.first, line, column) || HasScalarAt(kv.second, line, column)) return true;
    }
  }
  return false;
}

}  // namespace

absl::StatusOr<v1::Plan> ParsePlan(std::string_view text, std::string_view source_view) {
  // Debian's abseil is built with its own string_view, so StrCat takes std::string here.
  const std::string source(source_view);
  YAML::Node root;
  try {
    root = YAML::Load(std::string(text));
  } catch (const YAML::Exception& e) {
    const std::optional<Opener> cause = Unclosed(text);
    if (cause &&
        (cause->line < e.mark.line + 1 || (cause->line == e.mark.line + 1 && cause->column <= e.mark.column + 1))) {
      const char* what = cause->what == '['   ? "this '[' is never closed"
                         : cause->what == '{' ? "this '{' is never closed"
                                              : "this quoted string is never closed";
      return absl::InvalidArgumentError(absl::StrCat(source, ":", cause->line, ":", cause->column,
                                                     ": syntax error: ", what, " (the YAML parser gave up at ",
                                                     e.mark.line + 1, ":", e.mark.column + 1, ": ", e.msg, ")"));
    }
    return absl::InvalidArgumentError(
        absl::StrCat(source, ":", e.mark.line + 1, ":", e.mark.column + 1, ": syntax error: ", e.msg));
  }
  // yaml-cpp takes a double-quoted string left open to the end of the text as one long
  // value (YAML requires the closing quote): say where it began instead. Only when the
  // parsed document has a scalar starting at that very quote, so that nothing the scanner
  // misreads (a comment, a plain scalar) can refuse a valid plan.
  if (const std::optional<Opener> cause = Unclosed(text);
      cause && cause->what == '"' && HasScalarAt(root, cause->line - 1, cause->column - 1)) {
    return absl::InvalidArgumentError(absl::StrCat(source, ":", cause->line, ":", cause->column,
                                                   ": syntax error: this quoted string is never closed"));
  }
  if (!root.IsDefined() || root.IsNull()) {
    return absl::InvalidArgumentError(absl::StrCat(source, ": the plan is empty"));
  }
  v1::Plan plan;
  try {
    absl::Status st = Filler(source).Fill(root, plan, "");
    if (!st.ok()) return st;
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(absl::StrCat(source, ":", e.mark.line + 1, ": ", e.msg));
  }
  return plan;
}

absl::StatusOr<v1::Plan> LoadPlanFile(const std::string& path) {
  std::string text;
  if (path == "-") {
    text.assign(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
    return ParsePlan(text, "<stdin>");
  }
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": is a directory, not a plan file"));
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    const int err = errno;
    const std::string why = absl::StrCat(path, ": cannot read: ", std::strerror(err));
    if (err == ENOENT) return absl::NotFoundError(why);
    if (err == EACCES) return absl::PermissionDeniedError(why);
    return absl::InvalidArgumentError(why);
  }
  std::ostringstream buf;
  buf << in.rdbuf();
  if (in.bad()) return absl::InvalidArgumentError(absl::StrCat(path, ": read error"));
  return ParsePlan(buf.str(), path);
}

}  // namespace flightplan::cli
