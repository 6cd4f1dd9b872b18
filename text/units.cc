#include "text/units.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace flightplan::text::units {

std::string Si(double value, const std::string& unit) {
  static const char* const kPrefixes[] = {"", "k", "M", "G", "T", "P", "E", "Z", "Y"};
  int i = 0;
  double v = value;
  while (std::fabs(v) >= 1000 && i < 8) {
    v /= 1000;
    ++i;
  }
  const int decimals = std::fabs(v) >= 100 ? 0 : std::fabs(v) >= 10 ? 1 : 2;
  return absl::StrFormat("%.*f %s%s", decimals, v, kPrefixes[i], unit);
}

std::string Count(double value) {
  std::string digits = absl::StrFormat("%.0f", std::fabs(value));
  std::string out;
  int n = 0;
  for (auto it = digits.rbegin(); it != digits.rend(); ++it) {
    if (n > 0 && n % 3 == 0) out.insert(out.begin(), ',');
    out.insert(out.begin(), *it);
    ++n;
  }
  return value < 0 ? "-" + out : out;
}

std::string Sci(double value) {
  if (value == 0) return "0";
  const int exp = static_cast<int>(std::floor(std::log10(std::fabs(value)) / 3) * 3);
  if (exp < 6) return Count(value);
  std::string mant = absl::StrFormat("%.3g", value / std::pow(10.0, exp));
  return absl::StrCat(mant, "e", exp);
}

std::string Duration(double seconds) {
  const double a = std::fabs(seconds);
  if (a < 10) return absl::StrFormat("%.2g s", seconds);
  if (a < 120) return absl::StrFormat("%.0f s", seconds);
  if (a < 2 * 3600) return absl::StrFormat("%.1f min", seconds / 60);
  if (a < 2 * 86400) return absl::StrFormat("%.1f h", seconds / 3600);
  return absl::StrFormat("%.1f days", seconds / 86400);
}

std::string Days(double seconds) { return absl::StrFormat("%.1f", seconds / 86400); }

std::string Percent(double ratio, int decimals) { return absl::StrFormat("%.*f%%", decimals, ratio * 100); }

std::string Date(absl::Time t) { return absl::FormatTime("%Y-%m-%d %H:%M UTC", t, absl::UTCTimeZone()); }
std::string DateOnly(absl::Time t) { return absl::FormatTime("%Y-%m-%d", t, absl::UTCTimeZone()); }

std::string Counted(double value, const std::string& noun) {
  return Count(value) + " " + noun + (value == 1 ? "" : "s");
}

}  // namespace flightplan::text::units
