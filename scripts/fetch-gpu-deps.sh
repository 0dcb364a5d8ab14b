#!/usr/bin/env bash
# Fetches what a lent GPU machine needs to build and run the engine beyond its own nvcc, CMake and ninja:
# Debian 12's packages for Open MPI (with the libraries its components load), OpenBLAS, nlohmann-json and
# CLI11, downloaded with `apt-get download` into .deps/debs (ignored by git; it travels with the working
# tree). scripts/gpu-check.sh unpacks them there with `dpkg -x` (or ar + tar) into .deps/root.
#
# Usage: scripts/fetch-gpu-deps.sh [--check]
#   --check   also unpack into a temporary folder and list shared libraries the unpacked programs need
#             that neither the packages nor a base system (glibc, libstdc++, libgcc, zlib) provide.
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(
  # Open MPI 4.1: mpirun/orterun, the libraries, headers and compiler-wrapper data.
  openmpi-bin openmpi-common libopenmpi3 libopenmpi-dev
  libevent-core-2.1-7 libevent-pthreads-2.1-7 libhwloc15 libpmix2 libltdl7 libnuma1 libudev1
  # Libraries Open MPI's transport components load (shared memory needs none of them, but a component
  # that cannot load prints warnings).
  libfabric1 libucx0 libibverbs1 librdmacm1 libpsm2-2 libpsm-infinipath1 libnl-3-200 libnl-route-3-200
  ibverbs-providers libmunge2 libxnvctrl0 libx11-6 libxext6 libxcb1 libxau6 libxdmcp6 libbsd0 libmd0
  libpciaccess0 libatomic1 libuuid1
  # OpenBLAS (pthreads) with cblas.h, and the Fortran runtime it links.
  libopenblas0-pthread libopenblas-pthread-dev libgfortran5 libquadmath0
  # Header-only: JSON and the command line.
  nlohmann-json3-dev libcli11-dev
)

debs=.deps/debs
mkdir -p "$debs"
missing=()
for p in "${packages[@]}"; do
  compgen -G "$debs/${p}_*.deb" >/dev/null || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "fetch-gpu-deps: downloading ${#missing[@]} packages: ${missing[*]}"
  (cd "$debs" && apt-get download "${missing[@]}")
else
  echo "fetch-gpu-deps: all ${#packages[@]} packages already in $debs"
fi
echo "fetch-gpu-deps: $(find "$debs" -name "*.deb" | wc -l) packages, $(du -sh "$debs" | cut -f1) in $debs"

[ "${1:-}" = "--check" ] || exit 0

# Unpack into a scratch prefix as gpu-check.sh does and list the NEEDED libraries nothing provides.
# shellcheck source=scripts/gpu-deps-env.sh
source scripts/gpu-deps-env.sh
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
dps_unpack_debs "$debs" "$scratch"
echo "fetch-gpu-deps: unpacked size $(du -sh "$scratch" | cut -f1), needs glibc $(dps_glibc_needed "$scratch")"
provided=$(find "$scratch" -name '*.so*' -printf '%f\n' | sort -u)
base='^(libc|libm|libdl|librt|libpthread|libutil|libresolv|ld-linux-x86-64|libstdc\+\+|libgcc_s|libz)\.so'
unmet=$( (find "$scratch" -type f \( -name '*.so*' -o -path '*/bin/*' \) -exec readelf -d {} + 2>/dev/null || true) \
  | sed -n 's/.*Shared library: \[\(.*\)\]/\1/p' | sort -u \
  | while read -r lib; do
      grep -qxF "$lib" <<<"$provided" || [[ "$lib" =~ $base ]] || echo "$lib"
    done)
if [ -n "$unmet" ]; then
  echo "fetch-gpu-deps: needed but not provided:"
  while read -r lib; do echo "  $lib"; done <<<"$unmet"
  exit 1
fi
echo "fetch-gpu-deps: every needed library is provided (beyond glibc, libstdc++, libgcc_s, zlib)"
