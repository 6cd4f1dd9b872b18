#!/usr/bin/env bash
# The format check (tests/format.sh --check: every tracked C++ file in .clang-format's
# style), then every test, in two builds:
#   build/       the normal build (gcc, RelWithDebInfo): the whole suite;
#   build-asan/  clang with AddressSanitizer, its leak checker and UndefinedBehaviorSanitizer
#                (any report fails the test), the fuzz targets linked with libFuzzer: the
#                suite again but the four calibration sweeps (see below), plus each fuzzer
#                for FUZZ_SECONDS (default 20) from the seed corpus in tests/fuzz/corpus.
# The README's test command runs this after deploy/install-deps.sh; so does CI (.ci/run).
#
#   tests/run_all.sh            both builds
#   SANITIZERS=0 tests/run_all.sh   the normal build only (a quick local loop)
#   JOBS=4 FUZZ_SECONDS=600 tests/run_all.sh
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=${JOBS:-2}
fuzz_seconds=${FUZZ_SECONDS:-20}
start=$SECONDS

stage() { printf '\n== %s  (%d s so far)\n' "$*" $((SECONDS - start)); }

stage "format: clang-format --dry-run on every tracked C++ file"
tests/format.sh --check

# Both builds are unity builds (CMake joins each target's sources, up to 8 to a file: the
# headers parsed and the inline code compiled once per batch, not once per file). The
# generated protobuf code and forecast_test opt out (proto/, tests/CMakeLists.txt).
unity=-DCMAKE_UNITY_BUILD=ON
stage "build: gcc, RelWithDebInfo, unity (build/)"
cmake -S . -B build -G Ninja "$unity"
cmake --build build -j"$jobs"
stage "test: build/"
ctest --test-dir build --output-on-failure -j"$jobs"

if [ "${SANITIZERS:-1}" = 0 ]; then
  stage "done (SANITIZERS=0: the sanitized build was skipped)"
  exit 0
fi

stage "build: clang, ASan + UBSan + libFuzzer, unity (build-asan/)"
CC=clang CXX=clang++ cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DFLIGHTPLAN_FUZZ=ON -DFLIGHTPLAN_FUZZ_SECONDS="$fuzz_seconds" "$unity"
cmake --build build-asan -j"$jobs"
# Under the sanitizers, all but the four whole-table calibration sweeps: pure arithmetic
# (the simulator, the backtest and the forecaster over 6-16 seeds of every scenario), five
# times slower there (540 s of the 2 cores' 1,270 s). The same code runs sanitized in the
# smaller calibration tests and calibrate_smoke; the sweeps' tables are asserted in build/.
sweeps='^Calibration\.(EveryScenarioEverySeedEveryTenth|FuturesScoreBetterThanTheChangepointModel|SlowStretchesTheMixtureIsNoWorseAndBetterWhileActive|OnSlowdownsThatLastAsTheRecordsSayTheLawScoresBetter)$'
stage "test: build-asan/ (the suite under the sanitizers but the calibration sweeps, fuzzers ${fuzz_seconds} s each)"
ctest --test-dir build-asan --output-on-failure -j"$jobs" -E "$sweeps"
# What the fuzzers did, from their final statistics.
for target in plan event accounting; do
  log=$(find build-asan/Testing/Temporary -name 'LastTest*.log' -print -quit)
  [ -n "$log" ] || break
  awk -v t="fuzz_$target" '
    $0 ~ "Test: "t"$" {on=1} on && /stat::number_of_executed_units/ {runs=$2}
    on && /stat::new_units_added/ {units=$2} on && /^----------/ && runs {exit}
    END {if (runs) printf "  fuzz_%s: %s inputs run, %s new corpus units\n", substr(t,6), runs, units}' "$log"
done
stage "done: every test passed in both builds"
