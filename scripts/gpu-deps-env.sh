# shellcheck shell=bash
# Sourced by scripts/gpu-check.sh and scripts/fetch-gpu-deps.sh: unpacks the Debian packages of .deps/debs
# into a prefix and points the environment at it (a GPU machine has no Open MPI, OpenBLAS, nlohmann-json
# or CLI11 of its own, and no package registry).

# dps_unpack_debs DEBS ROOT: unpacks every .deb of DEBS into ROOT (dpkg-deb, else ar + tar, else Python),
# then adds what Debian's maintainer scripts would have made: a library's SONAME link beside it (the
# alternatives system makes some, e.g. libpsm_infinipath.so.1) and mpirun/mpicxx without ".openmpi".
dps_unpack_debs() {
  local debs=$1 root=$2 deb
  mkdir -p "$root"
  for deb in "$debs"/*.deb; do
    if command -v dpkg-deb >/dev/null; then
      dpkg-deb -x "$deb" "$root"
    elif command -v ar >/dev/null; then
      local member z=""
      member=$(ar t "$deb" | grep '^data\.tar')
      case $member in *.xz) z=-J ;; *.gz) z=-z ;; *.zst) z=--zstd ;; esac
      ar p "$deb" "$member" | tar -x $z -f - -C "$root"
    else
      python3 - "$deb" "$root" <<'PY'
import io, sys, tarfile
data = open(sys.argv[1], 'rb').read()
pos = 8  # "!<arch>\n"
while pos < len(data):
    name = data[pos:pos + 16].decode().strip().rstrip('/')
    size = int(data[pos + 48:pos + 58].decode().strip())
    body = data[pos + 60:pos + 60 + size]
    if name.startswith('data.tar'):
        tarfile.open(fileobj=io.BytesIO(body)).extractall(sys.argv[2])
    pos += 60 + size + (size % 2)
PY
    fi
  done
  dps_link_sonames "$root"
  local bin=$root/usr/bin tool
  for tool in mpirun mpiexec mpicxx mpicc; do
    [ -e "$bin/$tool.openmpi" ] && ln -sfn "$tool.openmpi" "$bin/$tool"
  done
  return 0
}

# dps_link_sonames ROOT: for every shared library whose SONAME file is missing beside it, links it.
dps_link_sonames() {
  local root=$1 lib soname
  while IFS= read -r lib; do
    soname=$(readelf -d "$lib" 2>/dev/null | sed -n 's/.*Library soname: \[\(.*\)\]/\1/p')
    [ -n "$soname" ] && [ ! -e "$(dirname "$lib")/$soname" ] && ln -s "$(basename "$lib")" "$(dirname "$lib")/$soname"
  done < <(find "$root/usr/lib" -type f -name 'lib*.so.*' 2>/dev/null)
  return 0
}

# dps_deps_env ROOT: exports the variables that make ROOT's packages usable: PATH (mpirun, mpicxx),
# OPAL_PREFIX (Open MPI relocated), LD_LIBRARY_PATH, CPATH (cblas.h), CMAKE_PREFIX_PATH (nlohmann_json,
# CLI11, OpenBLAS), and DPS_DEPS_CMAKE_ARGS for cmake (the MPI wrapper and the BLAS library to use).
dps_deps_env() {
  local root=$1
  local multiarch=$root/usr/lib/x86_64-linux-gnu
  export PATH=$root/usr/bin:$PATH
  export OPAL_PREFIX=$root/usr
  export LD_LIBRARY_PATH=$multiarch:$multiarch/openmpi/lib:$multiarch/openblas-pthread:$root/usr/lib/libpsm1${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  export CPATH=$root/usr/include/x86_64-linux-gnu/openblas-pthread${CPATH:+:$CPATH}
  export CMAKE_PREFIX_PATH=$root/usr:$multiarch/cmake${CMAKE_PREFIX_PATH:+:$CMAKE_PREFIX_PATH}
  # Components whose libraries a machine lacks (InfiniBand, OFI) must not warn on every run.
  export OMPI_MCA_mca_base_component_show_load_errors=0
  # shellcheck disable=SC2034 # read by the scripts that source this file
  DPS_DEPS_CMAKE_ARGS=(
    "-DMPI_CXX_COMPILER=$root/usr/bin/mpicxx"
    "-DBLAS_LIBRARIES=$multiarch/openblas-pthread/libopenblas.so"
    "-DDPS_CBLAS_INCLUDE_DIR=$root/usr/include/x86_64-linux-gnu/openblas-pthread"
  )
}

# dps_glibc_needed ROOT: the newest GLIBC_x.y symbol version the unpacked programs and libraries need.
dps_glibc_needed() {
  find "$1/usr" -type f \( -name '*.so*' -o -path '*/bin/*' \) -exec objdump -T {} + 2>/dev/null \
    | grep -o 'GLIBC_[0-9.]*' | sort -u -V | tail -1 | sed 's/GLIBC_//'
}
