#!/usr/bin/env bash
# CUDA is optional at run time: install the build into a scratch prefix, check that no program links a CUDA
# library (only the CUDA module does) and that the installed programs find the installed module, then hide the CUDA toolkit's folders (a private mount namespace with a
# tmpfs over each) and run the installed programs: `dpstudio --version`, `dpstudio devices` (it says why CUDA
# is unavailable), CPU and auto runs of a tiny project through mpirun (auto records why it chose the CPU),
# `--backend cuda` (exit 3, "CUDA backend not available: …") and the designer offscreen.
#
# Usage: cuda_optional.sh BUILD_DIR TEST_DATA_DIR MODULE_SUBDIR [FOLDER_TO_HIDE...]
#   MODULE_SUBDIR    where the CUDA module is installed, relative to the prefix (lib/dpstudio)
#   FOLDER_TO_HIDE   the CUDA toolkit's folders (its root, its library folder, NCCL's); none in a build
#                    without the CUDA module, which then runs the same checks expecting "cuda: not built"
# Exits 77 (skipped) when mpirun is missing or the folders cannot be hidden (unshare --mount and mount -t
# tmpfs need root, as in CI); the link checks have run by then.
set -u

if [ "${1:-}" = "--hidden" ]; then
    hidden=1
    shift
else
    hidden=0
fi
BUILD=$(realpath "$1")
DATA=$(realpath "$2")
SUBDIR=$3
shift 3
HIDE=("$@")
[ ${#HIDE[@]} -gt 0 ] && with_module=1 || with_module=0
failures=0

fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }
check() { if eval "$2"; then echo "ok: $1"; else fail "$1"; fi; }

# ------------------------------------------------------------------ inside the namespace: hide, then run
if [ "$hidden" -eq 1 ]; then
    PREFIX=$DPS_PREFIX
    WORK=$DPS_WORK
    for dir in "${HIDE[@]}"; do
        # A folder inside one hidden already is gone: nothing to do.
        [ -d "$dir" ] || continue
        mount -t tmpfs none "$dir" || { echo "cannot mount a tmpfs over $dir" >&2; exit 77; }
    done
    module=$PREFIX/$SUBDIR/libdpstudio-cuda.so
    if [ "$with_module" -eq 1 ]; then
        check "the CUDA runtime is hidden (the module's libcudart is not found)" \
            'ldd "$module" 2>&1 | grep -Eq "libcudart\.so[.0-9]* => not found"'
        why="CUDA backend not available: $module: libcudart\\.so[.0-9]*: cannot open shared object file: No such file or directory"
    else
        why="cuda: not built"
    fi

    out=$("$PREFIX/bin/dpstudio" --version 2>&1)
    rc=$?
    check "dpstudio --version runs (exit 0)" '[ $rc -eq 0 ] && printf "%s\n" "$out" | grep -Eq "^dpstudio [0-9]"'

    devices=$("$PREFIX/bin/dpstudio" devices 2>&1)
    rc=$?
    check "dpstudio devices runs (exit 0)" '[ $rc -eq 0 ] || { printf "%s\n" "$devices" >&2; false; }'
    if [ "$with_module" -eq 1 ]; then
        check "dpstudio devices says why CUDA is not available" \
            'printf "%s\n" "$devices" | grep -Eqx "cuda: $why" || { printf "%s\n" "$devices" >&2; false; }'
    else
        check "dpstudio devices says cuda: not built" 'printf "%s\n" "$devices" | grep -qx "cuda: not built"'
    fi
    check "dpstudio devices finds the installed worker" \
        'printf "%s\n" "$devices" | grep -qx "worker: $PREFIX/libexec/dpstudio-worker"'
    json=$("$PREFIX/bin/dpstudio" devices --json 2>&1)
    check "dpstudio devices --json: cuda.built is false" 'printf "%s" "$json" | python3 -c "
import json, sys
d = json.load(sys.stdin)
sys.exit(0 if d[\"cuda\"][\"built\"] is False and d[\"gpus\"] == [] else 1)"'
    if ! printf '%s' "$json" | python3 -c 'import json,sys; sys.exit(0 if json.load(sys.stdin)["mpirun"]["path"] else 1)'; then
        echo "skipped: mpirun not found, no run checked"
        [ "$failures" -eq 0 ] && exit 77 || exit 1
    fi

    project=$DATA/launch/tiny.dpstudio.json
    run() { "$PREFIX/bin/dpstudio" run "$project" --steps 1 --warmup 0 --timeout 120 "$@"; }
    run -o "$WORK/cpu.json" --backend cpu >"$WORK/cpu.log" 2>&1
    rc=$?
    check "a CPU run exits 0" '[ $rc -eq 0 ] || { tail -20 "$WORK/cpu.log" >&2; false; }'
    check "the CPU run's trace: backend cpu, correctness passed" 'python3 - "$WORK/cpu.json" <<PY
import json, sys
m = json.load(open(sys.argv[1]))
assert m["backend"] == "cpu" and m["correctness"]["passed"], (m["backend"], m["correctness"])
PY'

    run -o "$WORK/auto.json" --backend auto >"$WORK/auto.log" 2>&1
    rc=$?
    check "an auto run exits 0 on the CPU" '[ $rc -eq 0 ] || { tail -20 "$WORK/auto.log" >&2; false; }'
    check "the auto run records why it chose the CPU" 'python3 - "$WORK/auto.json" "$why" <<PY
import json, re, sys
m = json.load(open(sys.argv[1]))
choice = m["backend_choice"]
assert m["backend"] == "cpu", m["backend"]
assert re.fullmatch(r"backend cpu, comm mpi: cpu \(auto: " + sys.argv[2] + r"\)", choice), choice
PY'

    run -o "$WORK/cuda.json" --backend cuda >"$WORK/cuda.log" 2>&1
    rc=$?
    check "--backend cuda exits 3" '[ $rc -eq 3 ] || { echo "exit $rc" >&2; tail -20 "$WORK/cuda.log" >&2; false; }'
    check "--backend cuda says why" \
        'grep -Eq -- "--backend cuda: $why" "$WORK/cuda.log" || { tail -20 "$WORK/cuda.log" >&2; false; }'
    check "--backend cuda leaves no trace" '[ ! -e "$WORK/cuda.json" ]'

    if [ -x "$PREFIX/bin/dualpipe-studio" ]; then
        mkdir -p "$WORK/xdg" && chmod 700 "$WORK/xdg"
        QT_QPA_PLATFORM=offscreen XDG_RUNTIME_DIR=$WORK/xdg XDG_CONFIG_HOME=$WORK/config \
            timeout 120 "$PREFIX/bin/dualpipe-studio" --screenshot "$WORK/main.png" >"$WORK/studio.log" 2>&1
        rc=$?
        check "the designer starts offscreen and exits 0" '[ $rc -eq 0 ] || { tail -20 "$WORK/studio.log" >&2; false; }'
        check "the designer drew a PNG" '[ "$(head -c 8 "$WORK/main.png" 2>/dev/null | od -An -tx1 | tr -d " \n")" = "89504e470d0a1a0a" ]'
    else
        echo "note: the designer is not installed (built without Qt): not started"
    fi
    [ "$failures" -eq 0 ] && exit 0 || exit 1
fi

# ------------------------------------------------------------------ outside: install, link checks
WORK=$(mktemp -d "${TMPDIR:-/tmp}/dps-install-XXXXXX")
trap 'rm -rf "$WORK"' EXIT
export XDG_CACHE_HOME="$WORK/cache" # the runs' CPU profile: never the user's cache
PREFIX=$WORK/prefix
if ! cmake --install "$BUILD" --prefix "$PREFIX" >"$WORK/install.log" 2>&1; then
    tail -20 "$WORK/install.log" >&2
    echo "FAIL: cmake --install $BUILD --prefix $PREFIX" >&2
    exit 1
fi
echo "ok: installed into $PREFIX"

for exe in bin/dpstudio libexec/dpstudio-worker bin/dualpipe-studio; do
    [ -e "$PREFIX/$exe" ] || continue
    check "$exe links no CUDA library" \
        '! ldd "$PREFIX/$exe" | grep -E "lib(cudart|cublas|cublasLt|nccl)\.so" >&2'
done
module=$PREFIX/$SUBDIR/libdpstudio-cuda.so
if [ "$with_module" -eq 1 ]; then
    check "the CUDA module is installed to $SUBDIR" '[ -f "$module" ]'
    check "the CUDA module links the CUDA runtime and cuBLAS" \
        'readelf -d "$module" | grep -q "NEEDED.*libcudart" && readelf -d "$module" | grep -q "NEEDED.*libcublas"'
else
    check "no CUDA module without CUDA" '[ ! -e "$module" ]'
fi

# With CUDA in place, the installed programs find the installed module (bin/ and libexec/ both look in
# ../$SUBDIR): devices lists GPUs or the driver's reason, and the worker's auto choice does not miss the module.
if [ "$with_module" -eq 1 ]; then
    devices=$("$PREFIX/bin/dpstudio" devices 2>&1)
    check "installed dpstudio loads the installed module" \
        '! printf "%s\n" "$devices" | grep -q "CUDA backend not available" || { printf "%s\n" "$devices" >&2; false; }'
    if printf '%s\n' "$devices" | grep -q "^mpirun: /"; then
        "$PREFIX/bin/dpstudio" run "$DATA/launch/tiny.dpstudio.json" --steps 1 --warmup 0 --timeout 120 \
            -o "$WORK/found.json" >"$WORK/found.log" 2>&1
        rc=$?
        check "the installed worker loads the installed module (auto run, exit 0)" 'python3 - "$WORK/found.json" <<PY
import json, sys
choice = json.load(open(sys.argv[1]))["backend_choice"]
assert "CUDA backend not available" not in choice and "not built" not in choice, choice
PY
[ $rc -eq 0 ] || { tail -20 "$WORK/found.log" >&2; false; }'
    fi
fi

# A program copied away from the module says where it looked.
if [ "$with_module" -eq 1 ]; then
    mkdir -p "$WORK/alone/bin" && cp "$PREFIX/bin/dpstudio" "$WORK/alone/bin/"
    devices=$("$WORK/alone/bin/dpstudio" devices 2>&1)
    check "without the module, devices names the places looked in" 'printf "%s\n" "$devices" | grep -qxF \
        "cuda: CUDA backend not available: libdpstudio-cuda.so not found in $WORK/alone/bin or $WORK/alone/$SUBDIR (set DPSTUDIO_CUDA_MODULE to its path)" \
        || { printf "%s\n" "$devices" >&2; false; }'
    devices=$(DPSTUDIO_CUDA_MODULE=$module "$WORK/alone/bin/dpstudio" devices 2>&1)
    check "DPSTUDIO_CUDA_MODULE points it at the module" \
        '! printf "%s\n" "$devices" | grep -q "CUDA backend not available" || { printf "%s\n" "$devices" >&2; false; }'
fi

export DPS_PREFIX=$PREFIX DPS_WORK=$WORK
if [ "$with_module" -eq 0 ]; then
    bash "$0" --hidden "$BUILD" "$DATA" "$SUBDIR"
    rc=$?
else
    if ! probe=$(unshare --mount --fork sh -c "mount -t tmpfs none '$WORK'" 2>&1); then
        echo "skipped: cannot hide the CUDA folders (unshare --mount, mount -t tmpfs: $probe); run as root"
        [ "$failures" -eq 0 ] && exit 77 || exit 1
    fi
    unshare --mount --fork bash "$0" --hidden "$BUILD" "$DATA" "$SUBDIR" "${HIDE[@]}"
    rc=$?
fi
if [ "$rc" -ne 0 ] && [ "$rc" -ne 77 ]; then
    failures=$((failures + 1))
fi
[ "$failures" -eq 0 ] && exit "$rc" || exit 1
