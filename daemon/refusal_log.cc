#include "daemon/refusal_log.h"

#include <algorithm>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "forecast/event.h"

namespace flightplan::daemon {

void RefusalLog::Note(const std::string& run, absl::string_view kind, uint32_t count, absl::string_view message) {
  const absl::Time now = clock_->Now();
  std::string line;
  {
    absl::MutexLock lock(&mu_);
    Key key{run, std::string(kind)};
    auto it = seen_.find(key);
    if (it != seen_.end() && now - it->second.logged < kPeriod) {
      ++it->second.quiet;
      it->second.quiet_events += count;
      return;
    }
    if (it == seen_.end()) {
      if (seen_.size() >= kMaxKeys) {
        seen_.erase(std::min_element(seen_.begin(), seen_.end(),
                                     [](const auto& a, const auto& b) { return a.second.logged < b.second.logged; }));
      }
      it = seen_.emplace(std::move(key), Seen{}).first;
    }
    const std::string what = count > 0 ? absl::StrCat(count, count == 1 ? " event" : " events") : "a call";
    const std::string earlier =
        it->second.quiet == 0
            ? ""
            : absl::StrCat(" (and ", it->second.quiet, " more like it since ", forecast::FormatUtc(it->second.logged),
                           it->second.quiet_events > 0 ? absl::StrCat(", ", it->second.quiet_events, " events") : "",
                           ")");
    line = absl::StrCat("flightpland: refused ", what, run.empty() ? "" : absl::StrCat(" of run '", run, "'"), " (",
                        kind, "): ", message, earlier, "\n");
    it->second = Seen{now, 0, 0};
  }
  std::fputs(line.c_str(), out_);
  std::fflush(out_);
}

}  // namespace flightplan::daemon
