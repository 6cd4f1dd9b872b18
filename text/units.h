// Humane renderings of numbers: 4.37e24 FLOPs, 980 GB, 37.2 days. One rendering for the
// command line and the run page (text/run_figures), so they print a figure alike.
#ifndef FLIGHTPLAN_TEXT_UNITS_H_
#define FLIGHTPLAN_TEXT_UNITS_H_

#include <string>

#include "absl/time/time.h"

namespace flightplan::text::units {

// Decimal SI prefix with three significant digits: Si(1.62e18, "FLOP/s") = "1.62 EFLOP/s".
std::string Si(double value, const std::string& unit);
// Plain counts with thousands separators: 596,047.
std::string Count(double value);
// A count and its noun, singular for exactly one: Counted(1, "event") = "1 event",
// Counted(2048, "event") = "2,048 events".
std::string Counted(double value, const std::string& noun);
// Compact scientific for big inputs: 70e9, 10e12, 4.37e24.
std::string Sci(double value);
// A duration chosen for its size: 42 s, 17.5 min, 3.9 h, 31.2 days.
std::string Duration(double seconds);
std::string Days(double seconds);  // "31.2"
std::string Percent(double ratio, int decimals = 1);
std::string Date(absl::Time t);      // 2027-02-10 14:05 UTC
std::string DateOnly(absl::Time t);  // 2027-02-10

}  // namespace flightplan::text::units

#endif  // FLIGHTPLAN_TEXT_UNITS_H_
