#!/usr/bin/env bash
# Installs every Debian package that flightplan's build, tests and quickstart need.
# Idempotent: packages already present are skipped, and apt is not touched at all when
# nothing is missing. Needs root (or sudo) only when something has to be installed.
set -euo pipefail

packages=(
  # toolchain
  build-essential cmake ninja-build pkg-config git openssl curl
  # the sanitized and fuzzing build of the test suite: clang 14 with libFuzzer's runtime
  clang libclang-rt-14-dev llvm  # llvm: llvm-symbolizer, for readable sanitizer reports
  clang-format  # the format check of tests/run_all.sh (.clang-format)
  # a one-node Slurm 22.05 cluster for `flightplan slurm`'s test (tests/slurm/cluster.py)
  slurmctld slurmd slurm-client munge
  # and its accounting, for sacct and sacctmgr: slurmdbd on a MariaDB the test starts itself
  # (the -core packages: the server's binaries, no system service)
  slurmdbd mariadb-server-core mariadb-client-core
  # gRPC 1.51 and protobuf 3.21 (module-mode FindProtobuf, gRPC CMake config)
  libgrpc++-dev libgrpc-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler
  # the rest of the C++ stack
  prometheus-cpp-dev libcivetweb-dev libsqlite3-dev sqlite3 libabsl-dev libyaml-cpp-dev libcli11-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  # end-to-end tests: a real Prometheus and promtool; systemd-analyze checks the unit
  prometheus systemd
  # alerts delivered: Alertmanager with the project's routing (deploy/alertmanager)
  prometheus-alertmanager
  # the training-side Python client and its tests (Debian's /usr/bin/python3)
  python3 python3-grpcio python3-protobuf python3-pytest
  # `pip install ./clients/python` into a venv (its test makes one)
  python3-venv python3-pip
  # the end-to-end test of a real PyTorch training loop (CPU)
  python3-torch
  # the run page checked in a real browser (headless)
  chromium
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi

echo "install-deps: installing ${missing[*]}"
sudo=""
if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
echo "install-deps: done"
