#!/usr/bin/env bash
# Two "hosts" on this machine for Open MPI, without root and without ssh: an unprivileged user namespace
# holding two network namespaces joined by a veth pair, hostA (10.77.0.1, where COMMAND runs) and hostB
# (10.77.0.2), each with its own host name (UTS namespace). Open MPI starts its daemon on hostB through
# scripts/netns-agent.sh (plm_rsh_agent) instead of ssh, so `mpirun --hostfile HOSTFILE` and
# `dpstudio run --hostfile HOSTFILE` run as across two machines, over TCP between the hosts.
#
# Usage: netns-twohost.sh --check
#          exit 0 when the namespaces can be created here; else prints why and exits 77.
#        netns-twohost.sh [--slots N] HOSTFILE COMMAND [ARG...]
#          writes HOSTFILE ("10.77.0.1 slots=N" and "10.77.0.2 slots=N"; N defaults to 2) and runs COMMAND on
#          hostA with, exported: OMPI_MCA_plm_rsh_agent (the agent), OMPI_MCA_oob_tcp_if_include and
#          OMPI_MCA_btl_tcp_if_include (10.77.0.0/24), OMPI_MCA_mpi_yield_when_idle=1 (both hosts share this
#          machine's cores: a rank waiting for data must give its core away), OMPI_ALLOW_RUN_AS_ROOT and
#          OMPI_ALLOW_RUN_AS_ROOT_CONFIRM (root there is the caller mapped), DPS_NETNS_HOSTS (for the
#          agent) and DPS_TWOHOST_B_PID (a process on hostB: `nsenter -t $DPS_TWOHOST_B_PID -n -u CMD` runs
#          CMD there). Exit status: COMMAND's; 77 when the namespaces cannot be created (the reason on
#          stderr); 2 for a usage error.
#
# Everything runs in a new PID namespace whose first process is this script: when it ends (or is killed,
# or unshare is), the kernel ends every process left in it, daemons included, and the namespaces and the
# veth pair go with their last process. Needs util-linux (unshare, nsenter) and iproute2 (ip), and a kernel
# that lets unprivileged users create user namespaces (or root).
set -u
here=$(dirname "$(realpath "$0")")
readonly ADDR_A=10.77.0.1 ADDR_B=10.77.0.2 SUBNET=10.77.0.0/24
UNSHARE=(unshare --user --map-root-user --net --uts --mount --pid --fork --mount-proc --kill-child)

usage() {
    echo "usage: netns-twohost.sh --check | netns-twohost.sh [--slots N] HOSTFILE COMMAND [ARG...]" >&2
    exit 2
}

# Prints why the namespaces cannot be created here, or nothing.
why_not() {
    local tool out
    for tool in unshare nsenter ip hostname; do
        command -v "$tool" >/dev/null 2>&1 || { echo "'$tool' not found (install util-linux and iproute2)"; return; }
    done
    if ! out=$("${UNSHARE[@]}" /bin/sh -c 'ip link add dps-probe type veth peer name dps-probe-b' 2>&1); then
        echo "cannot create user and network namespaces with a veth pair: ${out:-unshare failed}"
    fi
}

# Inside the namespaces (PID 1 of the new PID namespace): build the two hosts, run the command.
inside() {
    local slots=$1 hostfile=$2
    shift 2
    hostname hostA && ip link set lo up || exit 77
    # hostB: a process sitting in its own network and UTS namespaces (nested in our user namespace, so we
    # may enter it); named after the hostfile so that a leftover one could be found.
    unshare --net --uts /bin/bash -c 'hostname hostB && ip link set lo up && exec -a "$0" sleep 86400' \
        "netns-twohost hostB for $hostfile" &
    local b=$!
    for _ in $(seq 100); do
        [ "$(nsenter --target "$b" --uts hostname 2>/dev/null)" = hostB ] && break
        sleep 0.05
    done
    [ "$(nsenter --target "$b" --uts hostname 2>/dev/null)" = hostB ] || { echo "netns-twohost: hostB did not start" >&2; exit 77; }
    ip link add dps-a type veth peer name dps-b \
        && ip link set dps-b netns "$b" \
        && ip addr add "$ADDR_A/24" dev dps-a \
        && ip link set dps-a up \
        && nsenter --target "$b" --net -- /bin/sh -c "ip addr add $ADDR_B/24 dev dps-b && ip link set dps-b up" \
        || { echo "netns-twohost: cannot set up the veth pair" >&2; exit 77; }
    for _ in $(seq 100); do
        ip -o link show dps-a | grep -q 'state UP' && break
        sleep 0.05
    done
    printf '%s slots=%s\n%s slots=%s\n' "$ADDR_A" "$slots" "$ADDR_B" "$slots" >"$hostfile" || exit 2
    export DPS_NETNS_HOSTS="$ADDR_A=$$ hostA=$$ $ADDR_B=$b hostB=$b"
    export DPS_TWOHOST_B_PID=$b
    export OMPI_MCA_plm_rsh_agent="$here/netns-agent.sh"
    export OMPI_MCA_oob_tcp_if_include=$SUBNET OMPI_MCA_btl_tcp_if_include=$SUBNET
    export OMPI_MCA_mpi_yield_when_idle=1
    # Everyone is root in a user namespace (mapped to the caller's own user): let mpirun run as "root".
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
    "$@"
    local status=$?
    kill "$b" 2>/dev/null
    wait "$b" 2>/dev/null
    exit $status
}

if [ "${DPS_TWOHOST_INSIDE:-}" = 1 ]; then
    unset DPS_TWOHOST_INSIDE
    inside "$@"
fi
[ $# -ge 1 ] || usage
if [ "$1" = --check ]; then
    reason=$(why_not)
    [ -z "$reason" ] && exit 0
    echo "$reason"
    exit 77
fi
slots=2
if [ "$1" = --slots ]; then
    [ $# -ge 2 ] && [ "$2" -ge 1 ] 2>/dev/null || usage
    slots=$2
    shift 2
fi
[ $# -ge 2 ] || usage
hostfile=$(realpath -m "$1")
shift
reason=$(why_not)
if [ -n "$reason" ]; then
    echo "netns-twohost: $reason" >&2
    exit 77
fi
DPS_TWOHOST_INSIDE=1 exec "${UNSHARE[@]}" /bin/bash "$here/netns-twohost.sh" "$slots" "$hostfile" "$@"
