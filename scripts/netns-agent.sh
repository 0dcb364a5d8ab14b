#!/usr/bin/env bash
# Open MPI launch agent (MCA parameter plm_rsh_agent) that starts a remote daemon inside another network
# namespace of this machine instead of over ssh: scripts/netns-twohost.sh sets it up so that `mpirun
# --hostfile` (and `dpstudio run --hostfile`) treats two namespaces as two hosts.
#
# Usage (as Open MPI calls ssh): netns-agent.sh [-OPTION ...] HOST COMMAND-WORD...
#   HOST is looked up in $DPS_NETNS_HOSTS, a space-separated list of NAME=PID (e.g.
#   "10.77.0.2=42 hostB=42"); COMMAND-WORDS are joined with spaces and run by /bin/sh, as sshd would, in
#   the network and UTS (host name) namespaces of that PID (nsenter -n -u). Leading options (ssh's, such
#   as -x) are ignored. Exit status: the command's; 255 (ssh's "could not connect") when HOST is unknown.
set -u
while [ $# -gt 0 ] && [ "${1#-}" != "$1" ]; do
    shift
done
if [ $# -lt 2 ]; then
    echo "netns-agent.sh: usage: netns-agent.sh [-OPTION ...] HOST COMMAND..." >&2
    exit 255
fi
host=$1
shift
pid=""
for entry in ${DPS_NETNS_HOSTS:-}; do
    if [ "${entry%%=*}" = "$host" ]; then
        pid=${entry#*=}
    fi
done
if [ -z "$pid" ]; then
    echo "netns-agent.sh: unknown host '$host' (not in DPS_NETNS_HOSTS='${DPS_NETNS_HOSTS:-}')" >&2
    exit 255
fi
exec nsenter --target "$pid" --net --uts -- /bin/sh -c "$*"
