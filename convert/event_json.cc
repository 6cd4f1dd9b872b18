#include "convert/event_json.h"

#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include "google/protobuf/util/json_util.h"

namespace flightplan::convert {
namespace {

// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's days_from_civil).
int64_t DaysFromCivil(int64_t y, unsigned m, unsigned d) {
  y -= m <= 2;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const unsigned yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<int64_t>(doe) - 719468;
}

void CivilFromDays(int64_t z, int64_t& y, unsigned& m, unsigned& d) {
  z += 719468;
  const int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  const unsigned doe = static_cast<unsigned>(z - era * 146097);
  const unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  const unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const unsigned mp = (5 * doy + 2) / 153;
  d = doy - (153 * mp + 2) / 5 + 1;
  m = mp < 10 ? mp + 3 : mp - 9;
  y = static_cast<int64_t>(yoe) + era * 400 + (m <= 2);
}

bool Leap(int64_t y) { return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0; }

unsigned DaysIn(int64_t y, unsigned m) {
  static constexpr unsigned kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  return m == 2 && Leap(y) ? 29 : kDays[m - 1];
}

// A cursor over one line. Every Read* returns false when the input is outside the fast
// path's subset (not necessarily invalid JSON).
class Reader {
 public:
  explicit Reader(std::string_view s) : p_(s.data()), end_(s.data() + s.size()) {}

  void Space() {
    while (p_ < end_ && (*p_ == ' ' || *p_ == '\t' || *p_ == '\r' || *p_ == '\n')) ++p_;
  }
  bool Eat(char c) {
    Space();
    if (p_ < end_ && *p_ == c) {
      ++p_;
      return true;
    }
    return false;
  }
  bool Peek(char c) {
    Space();
    return p_ < end_ && *p_ == c;
  }
  bool AtEnd() {
    Space();
    return p_ == end_;
  }

  // A string of printable ASCII without escapes; the view points into the line.
  bool ReadString(std::string_view& out) {
    if (!Eat('"')) return false;
    const char* start = p_;
    while (p_ < end_) {
      const unsigned char c = static_cast<unsigned char>(*p_);
      if (c == '"') {
        out = std::string_view(start, static_cast<size_t>(p_ - start));
        ++p_;
        return true;
      }
      if (c == '\\' || c < 0x20 || c >= 0x7f) return false;
      ++p_;
    }
    return false;
  }

  // An integer, bare or quoted: an optional '-' (when `negative_ok`), then 0 or a nonzero
  // digit and at most 17 more (so the value is exact in int64 without checking).
  bool ReadInteger(int64_t& out, bool negative_ok) {
    Space();
    const bool quoted = p_ < end_ && *p_ == '"';
    if (quoted) ++p_;
    bool negative = false;
    if (p_ < end_ && *p_ == '-') {
      if (!negative_ok) return false;
      negative = true;
      ++p_;
    }
    const char* start = p_;
    int64_t v = 0;
    size_t digits = 0;
    for (; p_ < end_ && *p_ >= '0' && *p_ <= '9'; ++p_, ++digits) {
      if (digits < 18) v = v * 10 + (*p_ - '0');  // more are refused below; no overflow meanwhile
    }
    if (digits == 0 || digits > 18 || (digits > 1 && *start == '0') || (negative && v == 0)) return false;
    if (quoted) {
      if (p_ >= end_ || *p_ != '"') return false;
      ++p_;
    } else if (p_ < end_ && (*p_ == '.' || *p_ == 'e' || *p_ == 'E')) {
      return false;  // 1.0 and 1e3 are the general parser's to judge
    }
    out = negative ? -v : v;
    return true;
  }

  // A bare JSON number (RFC 8259 grammar), finite.
  bool ReadDouble(double& out) {
    Space();
    const char* start = p_;
    if (p_ < end_ && *p_ == '-') ++p_;
    if (p_ >= end_ || *p_ < '0' || *p_ > '9') return false;
    if (*p_ == '0') {
      ++p_;
    } else {
      while (p_ < end_ && *p_ >= '0' && *p_ <= '9') ++p_;
    }
    if (p_ < end_ && *p_ == '.') {
      ++p_;
      const char* frac = p_;
      while (p_ < end_ && *p_ >= '0' && *p_ <= '9') ++p_;
      if (p_ == frac) return false;
    }
    if (p_ < end_ && (*p_ == 'e' || *p_ == 'E')) {
      ++p_;
      if (p_ < end_ && (*p_ == '+' || *p_ == '-')) ++p_;
      const char* exp = p_;
      while (p_ < end_ && *p_ >= '0' && *p_ <= '9') ++p_;
      if (p_ == exp) return false;
    }
    const auto [ptr, ec] = std::from_chars(start, p_, out);
    // A negative zero is the general parser's to judge ("-0" may read as the integer 0).
    return ec == std::errc() && ptr == p_ && std::isfinite(out) && !(out == 0 && std::signbit(out));
  }

  bool ReadBool(bool& out) {
    Space();
    if (end_ - p_ >= 4 && std::memcmp(p_, "true", 4) == 0) {
      p_ += 4;
      out = true;
    } else if (end_ - p_ >= 5 && std::memcmp(p_, "false", 5) == 0) {
      p_ += 5;
      out = false;
    } else {
      return false;
    }
    return p_ == end_ || !((*p_ >= 'a' && *p_ <= 'z') || (*p_ >= '0' && *p_ <= '9'));
  }

  // "YYYY-MM-DDTHH:MM:SS[.f{1,9}]Z", a valid date and time of day, years 1..9999.
  bool ReadTime(google::protobuf::Timestamp& out) {
    std::string_view s;
    if (!ReadString(s) || s.size() < 20) return false;
    auto num = [&](size_t at, size_t n, int64_t& v) {
      v = 0;
      for (size_t i = at; i < at + n; ++i) {
        if (s[i] < '0' || s[i] > '9') return false;
        v = v * 10 + (s[i] - '0');
      }
      return true;
    };
    int64_t y, mo, d, h, mi, sec;
    if (!num(0, 4, y) || s[4] != '-' || !num(5, 2, mo) || s[7] != '-' || !num(8, 2, d) || s[10] != 'T' ||
        !num(11, 2, h) || s[13] != ':' || !num(14, 2, mi) || s[16] != ':' || !num(17, 2, sec)) {
      return false;
    }
    if (y < 1 || mo < 1 || mo > 12 || d < 1 || d > DaysIn(y, static_cast<unsigned>(mo)) || h > 23 || mi > 59 ||
        sec > 59) {
      return false;
    }
    size_t i = 19;
    int64_t nanos = 0;
    if (s[i] == '.') {
      const size_t from = ++i;
      while (i < s.size() && s[i] >= '0' && s[i] <= '9') nanos = nanos * 10 + (s[i++] - '0');
      const size_t digits = i - from;
      if (digits == 0 || digits > 9) return false;
      for (size_t k = digits; k < 9; ++k) nanos *= 10;
    }
    if (i + 1 != s.size() || s[i] != 'Z') return false;
    out.set_seconds(DaysFromCivil(y, static_cast<unsigned>(mo), static_cast<unsigned>(d)) * 86400 + h * 3600 + mi * 60 +
                    sec);
    out.set_nanos(static_cast<int32_t>(nanos));
    return true;
  }

 private:
  const char* p_;
  const char* end_;
};

// Field bits, to send a repeated field to the general parser.
enum : uint32_t {
  kRun = 1,
  kTime = 2,
  kId = 4,
  kAttempt = 8,
  kKind = 16,
  kSource = 32,
};

// An object of known fields: `field(name)` reads the value of one and returns false when
// it is unknown or outside the subset.
template <typename Field>
bool ReadObject(Reader& r, Field field) {
  if (!r.Eat('{')) return false;
  if (r.Eat('}')) return true;
  do {
    std::string_view name;
    if (!r.ReadString(name) || !r.Eat(':') || !field(name)) return false;
  } while (r.Eat(','));
  return r.Eat('}');
}

// ["a", "b"]: strings only, appended to `out`.
bool ReadStrings(Reader& r, google::protobuf::RepeatedPtrField<std::string>* out) {
  if (!r.Eat('[')) return false;
  if (r.Eat(']')) return true;
  do {
    std::string_view s;
    if (!r.ReadString(s)) return false;
    out->Add(std::string(s));
  } while (r.Eat(','));
  return r.Eat(']');
}

bool Is(std::string_view name, std::string_view proto, std::string_view camel) {
  return name == proto || name == camel;
}

bool ReadKind(Reader& r, std::string_view name, v1::Event& e) {
  uint32_t seen = 0;
  auto once = [&seen](uint32_t bit) {
    if (seen & bit) return false;
    seen |= bit;
    return true;
  };
  int64_t v = 0;
  if (name == "steps") {
    v1::Steps* s = e.mutable_steps();
    return ReadObject(r, [&](std::string_view f) {
      if (f == "step") return once(1) && r.ReadInteger(v, true) && (s->set_step(v), true);
      if (f == "tokens") return once(2) && r.ReadInteger(v, true) && (s->set_tokens(v), true);
      if (Is(f, "rank_spread", "rankSpread")) {
        double d = 0;
        return once(4) && r.ReadDouble(d) && (s->set_rank_spread(d), true);
      }
      if (Is(f, "slowest_rank", "slowestRank")) {
        return once(8) && r.ReadInteger(v, true) && v >= std::numeric_limits<int32_t>::min() &&
               v <= std::numeric_limits<int32_t>::max() && (s->set_slowest_rank(static_cast<int32_t>(v)), true);
      }
      return false;
    });
  }
  if (Is(name, "checkpoint_saved", "checkpointSaved")) {
    v1::CheckpointSaved* c = e.mutable_checkpoint_saved();
    return ReadObject(r, [&](std::string_view f) {
      if (f == "step") return once(1) && r.ReadInteger(v, true) && (c->set_step(v), true);
      if (Is(f, "blocking_seconds", "blockingSeconds")) {
        double d = 0;
        return once(2) && r.ReadDouble(d) && (c->set_blocking_seconds(d), true);
      }
      return false;
    });
  }
  if (Is(name, "job_started", "jobStarted")) {
    v1::JobStarted* j = e.mutable_job_started();
    return ReadObject(r, [&](std::string_view f) {
      if (f == "attempt") {
        return once(1) && r.ReadInteger(v, false) && v <= std::numeric_limits<uint32_t>::max() &&
               (j->set_attempt(static_cast<uint32_t>(v)), true);
      }
      if (Is(f, "restored_step", "restoredStep"))
        return once(2) && r.ReadInteger(v, true) && (j->set_restored_step(v), true);
      if (f == "launch") {
        std::string_view s;
        return once(4) && r.ReadString(s) && (j->set_launch(s.data(), s.size()), true);
      }
      if (f == "nodes") return once(8) && ReadStrings(r, j->mutable_nodes());
      if (f == "gpus") {
        return once(16) && r.ReadInteger(v, false) && v <= std::numeric_limits<uint32_t>::max() &&
               (j->set_gpus(static_cast<uint32_t>(v)), true);
      }
      return false;
    });
  }
  if (name == "interruption") {
    v1::Interruption* in = e.mutable_interruption();
    return ReadObject(r, [&](std::string_view f) {
      std::string_view s;
      if (f == "cause") return once(1) && r.ReadString(s) && (in->set_cause(s.data(), s.size()), true);
      if (f == "detail") return once(2) && r.ReadString(s) && (in->set_detail(s.data(), s.size()), true);
      if (f == "planned") {
        bool b = false;
        return once(4) && r.ReadBool(b) && (in->set_planned(b), true);
      }
      if (f == "nodes") return once(8) && ReadStrings(r, in->mutable_nodes());
      return false;
    });
  }
  if (Is(name, "run_finished", "runFinished")) {
    e.mutable_run_finished();
    return ReadObject(r, [](std::string_view) { return false; });
  }
  if (Is(name, "span_started", "spanStarted")) {
    v1::SpanStarted* sp = e.mutable_span_started();
    return ReadObject(r, [&](std::string_view f) {
      std::string_view s;
      if (f == "kind") return once(1) && r.ReadString(s) && (sp->set_kind(s.data(), s.size()), true);
      if (Is(f, "expected_seconds", "expectedSeconds")) {
        double d = 0;
        return once(2) && r.ReadDouble(d) && (sp->set_expected_seconds(d), true);
      }
      return false;
    });
  }
  if (Is(name, "span_ended", "spanEnded")) {
    v1::SpanEnded* sp = e.mutable_span_ended();
    return ReadObject(r, [&](std::string_view f) {
      std::string_view s;
      if (f == "kind") return once(1) && r.ReadString(s) && (sp->set_kind(s.data(), s.size()), true);
      return false;
    });
  }
  if (name == "excluded") {
    v1::Excluded* x = e.mutable_excluded();
    return ReadObject(r, [&](std::string_view f) {
      std::string_view s;
      if (f == "until") return once(1) && r.ReadTime(*x->mutable_until());
      if (f == "reason") return once(2) && r.ReadString(s) && (x->set_reason(s.data(), s.size()), true);
      return false;
    });
  }
  return false;
}

void AppendString(std::string_view s, std::string& out) {
  out += '"';
  for (const char ch : s) {
    const unsigned char c = static_cast<unsigned char>(ch);
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\r':
        out += "\\r";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (c < 0x20) {
          static constexpr char kHex[] = "0123456789abcdef";
          out += "\\u00";
          out += kHex[c >> 4];
          out += kHex[c & 15];
        } else {
          out += ch;
        }
    }
  }
  out += '"';
}

void AppendStrings(const google::protobuf::RepeatedPtrField<std::string>& v, std::string& out) {
  out += '[';
  for (int i = 0; i < v.size(); ++i) {
    if (i > 0) out += ',';
    AppendString(v[i], out);
  }
  out += ']';
}

void AppendInt(int64_t v, std::string& out, bool quoted) {
  char buf[24];
  const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  if (quoted) out += '"';
  out.append(buf, end);
  if (quoted) out += '"';
}

void AppendDouble(double v, std::string& out) {
  if (std::isnan(v)) {
    out += "\"NaN\"";
  } else if (std::isinf(v)) {
    out += v > 0 ? "\"Infinity\"" : "\"-Infinity\"";
  } else if (v == 0 && std::signbit(v)) {
    out += "-0.0";
  } else {
    char buf[32];
    const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);  // shortest round trip
    out.append(buf, end);
  }
}

void AppendTime(const google::protobuf::Timestamp& t, std::string& out) {
  const int64_t days = t.seconds() >= 0 ? t.seconds() / 86400 : (t.seconds() - 86399) / 86400;
  const int64_t rem = t.seconds() - days * 86400;
  int64_t y = 0;
  unsigned m = 0, d = 0;
  CivilFromDays(days, y, m, d);
  char buf[48];
  int n = std::snprintf(buf, sizeof buf, "\"%04lld-%02u-%02uT%02lld:%02lld:%02lld", static_cast<long long>(y), m, d,
                        static_cast<long long>(rem / 3600), static_cast<long long>(rem / 60 % 60),
                        static_cast<long long>(rem % 60));
  out.append(buf, static_cast<size_t>(n));
  if (t.nanos() != 0) {
    // 3, 6 or 9 digits, as protobuf prints them.
    if (t.nanos() % 1000000 == 0) {
      n = std::snprintf(buf, sizeof buf, ".%03d", t.nanos() / 1000000);
    } else if (t.nanos() % 1000 == 0) {
      n = std::snprintf(buf, sizeof buf, ".%06d", t.nanos() / 1000);
    } else {
      n = std::snprintf(buf, sizeof buf, ".%09d", t.nanos());
    }
    out.append(buf, static_cast<size_t>(n));
  }
  out += "Z\"";
}

}  // namespace

bool ParseEventJsonFast(std::string_view line, v1::Event& e) {
  e.Clear();
  Reader r(line);
  uint32_t seen = 0;
  auto once = [&seen](uint32_t bit) {
    if (seen & bit) return false;
    seen |= bit;
    return true;
  };
  const bool ok = ReadObject(r, [&](std::string_view name) {
    std::string_view s;
    if (name == "run") return once(kRun) && r.ReadString(s) && (e.set_run(s.data(), s.size()), true);
    if (name == "id") return once(kId) && r.ReadString(s) && (e.set_id(s.data(), s.size()), true);
    if (name == "time") return once(kTime) && r.ReadTime(*e.mutable_time());
    if (name == "attempt") {
      int64_t v = 0;
      return once(kAttempt) && r.ReadInteger(v, false) && v <= std::numeric_limits<uint32_t>::max() &&
             (e.set_attempt(static_cast<uint32_t>(v)), true);
    }
    if (name == "source") return once(kSource) && r.ReadString(s) && (e.set_source(s.data(), s.size()), true);
    return once(kKind) && ReadKind(r, name, e);
  });
  return ok && r.AtEnd();
}

absl::Status ParseEventJson(std::string_view line, v1::Event& out) {
  if (ParseEventJsonFast(line, out)) return absl::OkStatus();
  out.Clear();
  google::protobuf::util::JsonParseOptions parse;
  parse.ignore_unknown_fields = false;
  const auto st =
      google::protobuf::util::JsonStringToMessage(google::protobuf::StringPiece(line.data(), line.size()), &out, parse);
  if (st.ok()) return absl::OkStatus();
  out.Clear();
  return absl::InvalidArgumentError(std::string(st.message()));
}

void AppendEventJson(const v1::Event& e, std::string& out) {
  out += '{';
  bool first = true;
  auto key = [&](const char* name) {
    if (!first) out += ',';
    first = false;
    out += '"';
    out += name;
    out += "\":";
  };
  if (!e.run().empty()) key("run"), AppendString(e.run(), out);
  if (e.has_time()) key("time"), AppendTime(e.time(), out);
  if (!e.id().empty()) key("id"), AppendString(e.id(), out);
  if (e.attempt() != 0) key("attempt"), AppendInt(e.attempt(), out, false);
  if (!e.source().empty()) key("source"), AppendString(e.source(), out);
  auto open = [&](const char* name) {
    key(name);
    out += '{';
    first = true;
  };
  switch (e.kind_case()) {
    case v1::Event::kJobStarted:
      open("job_started");
      if (e.job_started().attempt() != 0) key("attempt"), AppendInt(e.job_started().attempt(), out, false);
      if (e.job_started().restored_step() != 0)
        key("restored_step"), AppendInt(e.job_started().restored_step(), out, true);
      if (!e.job_started().launch().empty()) key("launch"), AppendString(e.job_started().launch(), out);
      if (!e.job_started().nodes().empty()) key("nodes"), AppendStrings(e.job_started().nodes(), out);
      if (e.job_started().gpus() != 0) key("gpus"), AppendInt(e.job_started().gpus(), out, false);
      out += '}';
      break;
    case v1::Event::kSteps:
      open("steps");
      if (e.steps().step() != 0) key("step"), AppendInt(e.steps().step(), out, true);
      if (e.steps().tokens() != 0) key("tokens"), AppendInt(e.steps().tokens(), out, true);
      if (e.steps().rank_spread() != 0) key("rank_spread"), AppendDouble(e.steps().rank_spread(), out);
      if (e.steps().has_slowest_rank()) key("slowest_rank"), AppendInt(e.steps().slowest_rank(), out, false);
      out += '}';
      break;
    case v1::Event::kCheckpointSaved:
      open("checkpoint_saved");
      if (e.checkpoint_saved().step() != 0) key("step"), AppendInt(e.checkpoint_saved().step(), out, true);
      if (e.checkpoint_saved().blocking_seconds() != 0 || std::signbit(e.checkpoint_saved().blocking_seconds())) {
        key("blocking_seconds"), AppendDouble(e.checkpoint_saved().blocking_seconds(), out);
      }
      out += '}';
      break;
    case v1::Event::kInterruption:
      open("interruption");
      if (!e.interruption().cause().empty()) key("cause"), AppendString(e.interruption().cause(), out);
      if (e.interruption().planned()) key("planned"), out += "true";
      if (!e.interruption().detail().empty()) key("detail"), AppendString(e.interruption().detail(), out);
      if (!e.interruption().nodes().empty()) key("nodes"), AppendStrings(e.interruption().nodes(), out);
      out += '}';
      break;
    case v1::Event::kRunFinished:
      open("run_finished");
      out += '}';
      break;
    case v1::Event::kSpanStarted:
      open("span_started");
      if (!e.span_started().kind().empty()) key("kind"), AppendString(e.span_started().kind(), out);
      if (e.span_started().expected_seconds() != 0) {
        key("expected_seconds"), AppendDouble(e.span_started().expected_seconds(), out);
      }
      out += '}';
      break;
    case v1::Event::kSpanEnded:
      open("span_ended");
      if (!e.span_ended().kind().empty()) key("kind"), AppendString(e.span_ended().kind(), out);
      out += '}';
      break;
    case v1::Event::kExcluded:
      open("excluded");
      if (e.excluded().has_until()) key("until"), AppendTime(e.excluded().until(), out);
      if (!e.excluded().reason().empty()) key("reason"), AppendString(e.excluded().reason(), out);
      out += '}';
      break;
    case v1::Event::KIND_NOT_SET:
      break;
  }
  out += '}';
}

}  // namespace flightplan::convert
