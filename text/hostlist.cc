#include "text/hostlist.h"

#include <cstdint>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace flightplan::text {
namespace {

absl::Status Invalid(absl::string_view expression, absl::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat("hostlist '", expression, "': ", why));
}

// One number of a bracket, with the width its digits were written in.
struct Bound {
  uint64_t value = 0;
  size_t width = 0;
  bool padded = false;  // written with a leading zero ("08"), so its width is kept
};

bool ParseBound(absl::string_view digits, Bound& out) {
  if (digits.empty() || digits.size() > 18) return false;
  out = {};
  for (char c : digits) {
    if (!absl::ascii_isdigit(static_cast<unsigned char>(c))) return false;
    out.value = out.value * 10 + static_cast<uint64_t>(c - '0');
  }
  out.width = digits.size();
  out.padded = digits.size() > 1 && digits[0] == '0';
  return true;
}

std::string Padded(uint64_t value, size_t width) {
  std::string s = absl::StrCat(value);
  if (s.size() < width) s.insert(0, width - s.size(), '0');
  return s;
}

// The values of one bracket's body ("001-004,009"), as text.
absl::StatusOr<std::vector<std::string>> Bracket(absl::string_view expression, absl::string_view body) {
  std::vector<std::string> out;
  if (body.empty()) return Invalid(expression, "an empty bracket");
  size_t start = 0;
  while (start <= body.size()) {
    size_t comma = body.find(',', start);
    if (comma == absl::string_view::npos) comma = body.size();
    const absl::string_view part = body.substr(start, comma - start);
    const size_t dash = part.find('-');
    Bound lo, hi;
    if (!ParseBound(part.substr(0, dash), lo) ||
        (dash != absl::string_view::npos && !ParseBound(part.substr(dash + 1), hi))) {
      return Invalid(expression, absl::StrCat("'", part, "' in a bracket is not a number or a range lo-hi"));
    }
    if (dash == absl::string_view::npos) hi = lo;
    if (hi.value < lo.value) {
      return Invalid(expression, absl::StrCat("the range ", part, " runs backwards"));
    }
    if (hi.value - lo.value >= kMaxHostlistHosts) {
      return Invalid(expression, absl::StrCat("the range ", part, " names more than ", kMaxHostlistHosts, " hosts"));
    }
    const size_t width = lo.padded ? lo.width : 0;
    for (uint64_t v = lo.value; v <= hi.value; ++v) out.push_back(Padded(v, width));
    start = comma + 1;
  }
  return out;
}

// One host expression, brackets and all ("rack[1-2]-n[01-02]"), appended to `out`.
absl::Status ExpandOne(absl::string_view expression, absl::string_view host, std::vector<std::string>& out) {
  std::vector<std::string> names = {""};
  size_t at = 0;
  while (at < host.size()) {
    const size_t open = host.find('[', at);
    if (open == absl::string_view::npos) {
      const absl::string_view rest = host.substr(at);
      if (rest.find(']') != absl::string_view::npos) {
        return Invalid(expression, absl::StrCat("a ']' without its '[' in '", host, "'"));
      }
      if (at > 0) {
        return Invalid(expression, absl::StrCat("'", rest, "' after the last bracket of '", host,
                                                "' (Slurm allows nothing there)"));
      }
      names = {std::string(host)};
      break;
    }
    const absl::string_view prefix = host.substr(at, open - at);
    if (prefix.find(']') != absl::string_view::npos) {
      return Invalid(expression, absl::StrCat("a ']' without its '[' in '", host, "'"));
    }
    const size_t close = host.find(']', open);
    if (close == absl::string_view::npos) return Invalid(expression, absl::StrCat("an unclosed '[' in '", host, "'"));
    absl::StatusOr<std::vector<std::string>> values = Bracket(expression, host.substr(open + 1, close - open - 1));
    if (!values.ok()) return values.status();
    if (names.size() * values->size() > kMaxHostlistHosts) {
      return Invalid(expression, absl::StrCat("it names more than ", kMaxHostlistHosts, " hosts"));
    }
    std::vector<std::string> next;
    next.reserve(names.size() * values->size());
    for (const std::string& n : names) {
      for (const std::string& v : *values) next.push_back(absl::StrCat(n, prefix, v));
    }
    names = std::move(next);
    at = close + 1;
  }
  if (out.size() + names.size() > kMaxHostlistHosts) {
    return Invalid(expression, absl::StrCat("it names more than ", kMaxHostlistHosts, " hosts"));
  }
  for (std::string& n : names) out.push_back(std::move(n));
  return absl::OkStatus();
}

bool Separator(char c) { return c == ',' || absl::ascii_isspace(static_cast<unsigned char>(c)); }

}  // namespace

absl::StatusOr<std::vector<std::string>> ExpandHostlist(absl::string_view expression) {
  std::vector<std::string> out;
  size_t i = 0;
  while (i < expression.size()) {
    while (i < expression.size() && Separator(expression[i])) ++i;
    if (i == expression.size()) break;
    // A host runs to the next separator outside brackets.
    size_t end = i;
    int depth = 0;
    for (; end < expression.size(); ++end) {
      const char c = expression[end];
      if (c == '[') {
        if (++depth > 1) return Invalid(expression, "a '[' inside a bracket");
      } else if (c == ']') {
        --depth;
      } else if (depth == 0 && Separator(c)) {
        break;
      }
    }
    if (depth > 0) return Invalid(expression, "an unclosed '['");
    absl::Status s = ExpandOne(expression, expression.substr(i, end - i), out);
    if (!s.ok()) return s;
    i = end;
  }
  return out;
}

std::string JoinHostlist(const std::vector<std::string>& hosts) { return absl::StrJoin(hosts, ","); }

}  // namespace flightplan::text
