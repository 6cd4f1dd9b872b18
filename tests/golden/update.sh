#!/usr/bin/env bash
# Rewrites tests/golden/metrics.txt from the golden scrape test's run (the flagship plan and
# its example events in the real flightpland), after a change to /metrics that is meant.
# Review the diff before committing it. BUILD: the build directory (default build/).
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${BUILD:-build}
cmake --build "$build" --target golden_scrape_test flightplan flightpland
FLIGHTPLAN_UPDATE_GOLDEN=1 "$build/tests/golden_scrape_test"
git diff --stat -- tests/golden/metrics.txt
