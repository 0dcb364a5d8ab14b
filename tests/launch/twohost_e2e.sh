#!/usr/bin/env bash
# End to end across two "hosts": `dpstudio run --hostfile` of a 4-rank DualPipeV (and 1F1B) schedule, 2 ranks
# per host, on two network namespaces of this machine joined by a veth pair (scripts/netns-twohost.sh; Open
# MPI starts the second host's daemon through scripts/netns-agent.sh instead of ssh) over Open MPI's TCP
# transport. Checks: correctness passes; measured.json records each rank's host (ranks 0, 1 on hostA and 2, 3
# on hostB) so that exactly the rank 1 <-> 2 transfers cross hosts; those transfers went through the veth
# pair; a rank killed on hostB ends the run with exit 3, and so does a timeout; no daemon, rank or namespace
# is left behind.
# Usage: twohost_e2e.sh DPSTUDIO. Exits 77 (skipped) with the reason when mpirun is not Open MPI 4, the worker
# is missing, or this machine cannot create the namespaces (no user namespaces, no iproute2).
set -u

fail() { echo "FAIL: $*" >&2; failures=$((failures + 1)); }
check() { if eval "$2"; then echo "ok: $1"; else fail "$1"; fi; }
failures=0

# Processes (not zombies) whose command line mentions $1; pid $2 (the caller) left out.
live_with() {
    local dir pid
    for dir in /proc/[0-9]*; do
        pid=${dir#/proc/}
        [ "$pid" = "$2" ] && continue
        grep -qa -- "$1" "/proc/$pid/cmdline" 2>/dev/null || continue
        [ "$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null)" = "Z" ] && continue
        echo "$pid"
    done
}

# ---------------------------------------------------------------------------------------------------------
# Inside the namespaces, on hostA (run by netns-twohost.sh): twohost_e2e.sh --inside DPSTUDIO PROJECT WORK
# HOSTFILE. Exits with the number of failed checks (0: all passed).
if [ "${1:-}" = --inside ]; then
    DPSTUDIO=$2 PROJECT=$3 WORK=$4 HOSTFILE=$5
    B=$DPS_TWOHOST_B_PID

    # Daemons and ranks left in these namespaces (they all live in our PID namespace).
    leftovers() {
        local dir pid
        for dir in /proc/[0-9]*; do
            pid=${dir#/proc/}
            [ "$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null)" = "Z" ] && continue
            tr '\0' ' ' 2>/dev/null <"/proc/$pid/cmdline" | grep -qE '(^|/)(orted|mpirun|dpstudio-worker) ' && echo "$pid"
        done
    }
    no_leftovers() {
        for _ in $(seq 100); do [ -z "$(leftovers)" ] && return 0; sleep 0.1; done
        ps -ef >&2
        return 1
    }
    # Bytes through hostA's end of the veth pair (received + sent), from this namespace's /proc/net/dev.
    veth_bytes() { awk '$1 == "dps-a:" { print $2 + $10 }' /proc/net/dev; }
    # Waits (at most 60 s) until the progress stream in $1 has a progress event.
    wait_progress() {
        for _ in $(seq 600); do
            grep -q '"event":"progress"' "$1" 2>/dev/null && return 0
            sleep 0.1
        done
        return 1
    }

    check "two hosts: this is hostA, the other namespace is hostB" \
        '[ "$(hostname)" = hostA ] && [ "$(nsenter --target "$B" --uts hostname)" = hostB ]'
    check "the hostfile lists both addresses with 2 slots each" \
        '[ "$(cat "$HOSTFILE")" = "$(printf "10.77.0.1 slots=2\n10.77.0.2 slots=2")" ]'

    # --- DualPipeV on 4 ranks, 2 per host ----------------------------------------------------------------
    before=$(veth_bytes)
    "$DPSTUDIO" run "$PROJECT" --variant dualpipev -o "$WORK/dualpipev.json" --hostfile "$HOSTFILE" --steps 3 \
        --warmup 1 --timeout 60 --trace-dir "$WORK/trace" >"$WORK/out" 2>"$WORK/err"
    rc=$?
    after=$(veth_bytes)
    echo "veth pair: $((after - before)) bytes during the dualpipev run"
    check "dualpipev across two hosts exits 0" '[ $rc -eq 0 ] || { cat "$WORK/err" >&2; false; }'
    check "mpirun got the hostfile and the TCP transport" \
        'grep -q -- "--hostfile $HOSTFILE --mca btl self,vader,tcp" "$WORK/err" || { cat "$WORK/err" >&2; false; }'
    # DualPipeV on 4 ranks: rank r holds stages r and 7 - r. Messages cross between ranks at the stage
    # boundaries 0|1, 1|2, 2|3 (ranks 0-1, 1-2, 2-3), 4|5, 5|6, 6|7 (ranks 3-2, 2-1, 1-0); 3|4 stays on rank 3.
    # Per step: 6 boundaries x 8 microbatches x 2 (activation, gradient) = 96 transfers; those of the
    # boundaries 1|2 and 5|6 join rank 1 (hostA) and rank 2 (hostB): 2 x 8 x 2 = 32 cross hosts. Each message
    # is microbatch 1 x seq_len 8 x hidden 64 x 4 bytes = 2048 bytes; 4 steps (1 warm-up) move at least
    # 4 x 32 x 2048 = 262144 bytes over the veth pair.
    check "measured.json: correctness passed, ranks 0, 1 on hostA and 2, 3 on hostB, 1<->2 transfers cross" \
        'python3 - "$WORK/dualpipev.json" "$WORK/trace/combined.trace.json" <<PY
import json, sys
m = json.load(open(sys.argv[1]))
assert m["correctness"]["passed"], m["correctness"]
assert m["host"] == "hostA", m["host"]
hosts = [r["host"] for r in sorted(m["ranks"], key=lambda r: r["rank"])]
assert hosts == ["hostA", "hostA", "hostB", "hostB"], hosts
sent = {a["bytes_sent"] for r in m["ranks"] for a in r["actions"]}
assert sent <= {0, 2048, 4096}, sent
trace = json.load(open(sys.argv[2]))
assert trace["otherData"]["hosts"] == hosts, trace["otherData"]
starts = {e["id"]: e["pid"] for e in trace["traceEvents"] if e.get("ph") == "s"}
ends = {e["id"]: e["pid"] for e in trace["traceEvents"] if e.get("ph") == "f"}
assert len(starts) == 96 and starts.keys() == ends.keys(), (len(starts), len(ends))
crossing = [(starts[i], ends[i]) for i in starts if hosts[starts[i]] != hosts[ends[i]]]
assert len(crossing) == 32 and set(crossing) == {(1, 2), (2, 1)}, crossing
PY'
    check "the prediction puts ranks 0-1 and 2-3 on two nodes, the 1<->2 transfers over the inter-node link" \
        'grep -q "ranks on 2 hosts (0–1; 2–3): transfers between hosts take the inter-node link" "$WORK/out" \
            || { cat "$WORK/out" >&2; false; }'
    check "the crossing transfers went through the veth pair (>= 262144 bytes)" \
        '[ $((after - before)) -ge 262144 ] || { echo "veth moved $((after - before)) bytes" >&2; false; }'
    check "no daemon or rank is left after the run" no_leftovers

    # --- 1F1B on 4 ranks: one stage per rank, only the 1|2 boundary crosses --------------------------------
    "$DPSTUDIO" run "$PROJECT" --variant 1f1b -o "$WORK/1f1b.json" --hostfile "$HOSTFILE" --steps 2 --warmup 1 \
        --timeout 60 >"$WORK/out2" 2>"$WORK/err2"
    rc=$?
    check "1f1b across two hosts exits 0 with correctness passed and the same placement" \
        '[ $rc -eq 0 ] && python3 - "$WORK/1f1b.json" <<PY || { cat "$WORK/err2" >&2; false; }
import json, sys
m = json.load(open(sys.argv[1]))
assert m["correctness"]["passed"], m["correctness"]
assert [r["host"] for r in sorted(m["ranks"], key=lambda r: r["rank"])] == ["hostA", "hostA", "hostB", "hostB"]
PY'
    check "no daemon or rank is left after the run" no_leftovers

    # --- a rank killed on hostB ends the run everywhere ---------------------------------------------------
    OUT="$WORK/killed.json"
    "$DPSTUDIO" run "$PROJECT" -o "$OUT" --hostfile "$HOSTFILE" --steps 1000000 --timeout 60 --progress-json \
        >"$WORK/kstream" 2>"$WORK/kerr" &
    runner=$!
    wait_progress "$WORK/kstream"
    victim=""
    for pid in $(live_with "$OUT" $$); do
        if tr '\0' '\n' <"/proc/$pid/environ" 2>/dev/null | grep -q '^OMPI_COMM_WORLD_RANK=3$'; then victim=$pid; fi
    done
    check "found rank 3 of the run, on hostB" \
        '[ -n "$victim" ] && [ "$(readlink "/proc/$victim/ns/uts")" = "$(readlink "/proc/$B/ns/uts")" ]'
    [ -n "$victim" ] && kill -KILL "$victim"
    wait $runner
    rc=$?
    check "a rank killed on hostB ends the run with exit 3" \
        '[ $rc -eq 3 ] || { echo "exit $rc" >&2; cat "$WORK/kerr" >&2; false; }'
    check "the message names rank 3" 'grep -q "run failed: .*rank 3" "$WORK/kerr" || { cat "$WORK/kerr" >&2; false; }'
    check "no daemon or rank is left on either host" no_leftovers

    # --- a timeout ends the ranks on both hosts: rank 0 (hostA) hangs in its first step -------------------
    DPSTUDIO_WORKER_HANG_RANK=0 "$DPSTUDIO" run "$PROJECT" -o "$WORK/timeout.json" --hostfile "$HOSTFILE" \
        --steps 3 --timeout 2 >/dev/null 2>"$WORK/terr"
    rc=$?
    check "a timeout ends the two-host run with exit 3" \
        '[ $rc -eq 3 ] && grep -q "timed out after 2 s without progress" "$WORK/terr"'
    check "no daemon or rank is left on either host after the timeout" no_leftovers
    exit $failures
fi

# ---------------------------------------------------------------------------------------------------------
# On this machine: preconditions, then the checks above inside the namespaces.
DPSTUDIO=$(realpath "$1")
HERE=$(dirname "$(realpath "$0")")
TWOHOST=$(realpath "$HERE/../../scripts/netns-twohost.sh")
PROJECT="$HERE/twohost.dpstudio.json"

devices=$("$DPSTUDIO" devices --json)
if ! printf '%s' "$devices" | python3 -c 'import json,sys; d=json.load(sys.stdin); sys.exit(0 if d["mpirun"]["path"] and d["worker"]["path"] else 1)'; then
    echo "skipped: mpirun or dpstudio-worker not found"; printf '%s\n' "$devices"; exit 77
fi
mpirun=$(printf '%s' "$devices" | python3 -c 'import json,sys; print(json.load(sys.stdin)["mpirun"]["path"])')
version=$("$mpirun" --version 2>&1 | head -n 1)
# plm_rsh_agent, oob_tcp_if_include and the "vader" transport the launcher names are Open MPI 4's.
if ! printf '%s' "$version" | grep -qE '\(Open MPI\) 4\.'; then
    echo "skipped: needs Open MPI 4.x (the launch agent is its plm_rsh_agent); mpirun --version says: $version"
    exit 77
fi
echo "mpirun: $version"
if ! why=$("$TWOHOST" --check); then
    echo "skipped: $why"
    exit 77
fi

WORK=$(mktemp -d "${TMPDIR:-/tmp}/dps-twohost-XXXXXX")
trap 'rm -rf "$WORK"' EXIT
export XDG_CACHE_HOME="$WORK/cache" # the runs' CPU profile: never the user's cache
mkdir -p "$WORK/tmp"
start=$(date +%s)
# Open MPI's session folders go under WORK (and with it): its daemons carry the setting on their command
# line, so every process of the test names WORK.
OMPI_MCA_orte_tmpdir_base="$WORK/tmp" "$TWOHOST" "$WORK/hostfile" bash "$(realpath "$0")" --inside "$DPSTUDIO" \
    "$PROJECT" "$WORK" "$WORK/hostfile"
rc=$?
if [ $rc -eq 77 ]; then
    echo "skipped: the namespaces could not be set up (see above)"
    exit 77
fi
[ $rc -eq 0 ] || fail "inside the namespaces: exit $rc (the number of failed checks; above 128: killed by a signal)"
check "under 60 s" '[ $(( $(date +%s) - start )) -lt 60 ]'
check "nothing of the test is left on this machine (ranks, daemons, hostB's holder)" '[ -z "$(live_with "$WORK" $$)" ]'

if [ $failures -ne 0 ]; then
    echo "$failures check(s) failed" >&2
    exit 1
fi
echo "all checks passed"
