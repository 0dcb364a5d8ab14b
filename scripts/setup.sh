#!/usr/bin/env bash
# Installs the Debian 12 packages DualPipe Studio builds and runs with (only those missing).
# Runs apt-get as root directly, or through sudo.
set -euo pipefail
packages=(
  cmake ninja-build g++ ccache pkg-config python3
  lld # a faster linker than GNU ld (CMakeLists.txt)
  qt6-base-dev qt6-svg-dev libqcustomplot-dev libqcustomplot2.1-qt6
  libopenmpi-dev openmpi-bin nlohmann-json3-dev libcli11-dev
  libgtest-dev libgmock-dev googletest libbenchmark-dev libopenblas-dev
  xvfb xauth imagemagick libspdlog-dev dpkg-dev file
  iproute2 # ip, for the two-host test (scripts/netns-twohost.sh)
  zlib1g-dev # gzipped PyTorch profiler traces (dpstudio import-trace)
  libdnnl-dev # oneDNN's sgemm, faster than OpenBLAS at the CPU backend's shapes (docs/performance.md)
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all ${#packages[@]} packages present"
  exit 0
fi
echo "setup: installing ${missing[*]}"
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
$sudo apt-get update -q
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends "${missing[@]}"
