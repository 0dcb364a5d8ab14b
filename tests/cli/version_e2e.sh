#!/usr/bin/env bash
# The programs' versions come from the build: `dpstudio --version`, `dpstudio-worker --version` and
# `dualpipe-studio --version` print the version of project(VERSION) in the top CMakeLists.txt.
# Usage: version_e2e.sh DPSTUDIO WORKER STUDIO VERSION (STUDIO may be "-" when the designer is not built).
set -u
dp=$1 worker=$2 studio=$3 version=$4
fail=0
err=$(mktemp)
trap 'rm -f "$err"' EXIT
check() { # check NAME EXPECTED COMMAND...: the command's stdout is exactly EXPECTED, exit 0
    local name=$1 expected=$2
    shift 2
    local out rc
    out=$("$@" 2>"$err")
    rc=$?
    if [ $rc -eq 0 ] && [ "$out" = "$expected" ]; then
        echo "ok: $name"
    else
        echo "FAIL: $name: exit $rc, printed '$out' (stderr: $(cat "$err")), expected '$expected'"
        fail=1
    fi
}
check "dpstudio --version" "dpstudio $version" "$dp" --version
check "dpstudio-worker --version" "dpstudio-worker $version" "$worker" --version
if [ "$studio" != "-" ]; then
    check "dualpipe-studio --version" "dualpipe-studio $version" env QT_QPA_PLATFORM=offscreen "$studio" --version
fi
exit $fail
