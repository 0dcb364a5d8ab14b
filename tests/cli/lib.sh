# Shared helpers of the tests/cli/*_e2e.sh scripts, sourced by each one: . "$(dirname "$0")/lib.sh"
# POSIX sh (some scripts run under #!/bin/sh). The caller sets WORK (a scratch folder) before calling expect or
# check_py; each helper counts a failed check in $failures, and finish ends the script with the count.
failures=0

# fail MESSAGE...: reports a failed check on stderr and counts it.
fail() {
    echo "FAIL: $*" >&2
    failures=$((failures + 1))
}

# expect CODE NAME -- COMMAND...: runs the command (stdout → $WORK/out, stderr → $WORK/err), checks the exit code.
expect() {
    code="$1"
    name="$2"
    shift 3
    "$@" >"$WORK/out" 2>"$WORK/err"
    got=$?
    if [ "$got" -ne "$code" ]; then
        fail "$name: exit $got, expected $code"
        sed 's/^/  | /' "$WORK/err" >&2
    fi
}

# contains FILE TEXT NAME: the file holds the text (fixed string).
contains() {
    grep -qF -- "$2" "$1" || { fail "$3: '$2' not in $(basename "$1")"; sed 's/^/  | /' "$1" | head -20 >&2; }
}

# check_py NAME PYTHON [ARGS...]: runs the Python code (sys.argv[1:] = ARGS); a failed assert fails the check
# with its message.
check_py() {
    name="$1"
    shift
    python3 -c "$@" >"$WORK/py" 2>&1 || { fail "$name"; sed 's/^/  | /' "$WORK/py" >&2; }
}

# check NAME SHELL-CODE: evaluates the code; prints "ok: NAME" when it succeeds, fails the check otherwise.
check() { if eval "$2"; then echo "ok: $1"; else fail "$1"; fi; }

# finish MESSAGE: exits 1 when a check failed (saying how many), otherwise prints MESSAGE.
finish() {
    if [ "$failures" -ne 0 ]; then
        echo "$failures check(s) failed" >&2
        exit 1
    fi
    echo "$1"
}
