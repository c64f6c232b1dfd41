# Shared settings and helpers of the local stack scripts. Sourced, not run.
#
# Everything the stack writes lives in $STATE (default .work/local in the
# repository); every process it starts has a pid file there and is stopped
# by that pid. Only loopback addresses are used.

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
STATE=${STATE:-$ROOT/.work/local}
TOOLS_BIN=${TOOLS_BIN:-$("$ROOT/hack/tools.sh" bindir)}
export KUBECONFIG=$STATE/kubeconfig

ETCD_PORT=${ETCD_PORT:-12379}
APISERVER_PORT=${APISERVER_PORT:-16443}
XP_METRICS_PORT=${XP_METRICS_PORT:-18080}
XP_HEALTH_PORT=${XP_HEALTH_PORT:-18081}
FN_PORT=${FN_PORT:-19444}
PROVIDER_METRICS_PORT=${PROVIDER_METRICS_PORT:-18082}
PROVIDER_HEALTH_PORT=${PROVIDER_HEALTH_PORT:-18083}
XP_NAMESPACE=crossplane-system
# NODE=1 (the default as root) brings up the node too (cluster/node/up.sh),
# so that pods run; NODE=0 leaves it out.
NODE=${NODE:-$([ "$(id -u)" = 0 ] && echo 1 || echo 0)}
# The node's address, inside the node's network namespace: the
# kube-apiserver advertises it, so the `kubernetes` Service leads pods to
# the API (through cluster/node/apirelay).
NODE_IP=10.99.0.1
# With the node, the kube-apiserver reaches the kubelet (logs, exec,
# port-forward) through the relay's HTTP CONNECT proxy on this socket.
EGRESS_SOCK=$STATE/apirelay.sock

# The function's package is referenced by digest under a host that is never
# resolved: with packagePullPolicy Never, Crossplane reads it from its cache.
FPT_SOURCE=xpkg.ipsecgw.invalid/crossplane-contrib/function-patch-and-transform
# The repository of this project's packages (make xpkg), likewise.
XPKG_REPO=xpkg.ipsecgw.invalid/ipsecgw
XPKG_DIR=${XPKG_DIR:-$ROOT/_output/xpkg}

kubectl() { "$TOOLS_BIN/kubectl" "$@"; }

log() { printf '%s %s\n' "$(date +%T)" "$*"; }

die() {
	printf 'error: %s\n' "$*" >&2
	exit 1
}

# running NAME succeeds when the process of $STATE/NAME.pid is alive.
running() {
	local f=$STATE/$1.pid
	[ -f "$f" ] && alive "$(cat "$f")"
}

# start NAME CMD...: runs CMD in the background, logging to $STATE/NAME.log,
# and records its pid in $STATE/NAME.pid.
start() {
	local name=$1
	shift
	"$@" >"$STATE/$name.log" 2>&1 &
	echo $! >"$STATE/$name.pid"
}

# alive PID succeeds while the process runs. A process that has exited but
# is not reaped yet (a zombie: init here reaps every second or two) has not.
alive() {
	local s
	s=$(ps -o stat= -p "$1" 2>/dev/null) && [ "${s:0:1}" != Z ]
}

# stop NAME: sends SIGTERM to the recorded pid, waits up to 20 s, then kills.
stop() {
	local f=$STATE/$1.pid pid i
	[ -f "$f" ] || return 0
	pid=$(cat "$f")
	if kill "$pid" 2>/dev/null; then
		for i in $(seq 1 100); do
			alive "$pid" || break
			sleep 0.2
		done
		kill -9 "$pid" 2>/dev/null || true
	fi
	rm -f "$f"
}

# wait_for WHAT SECONDS CMD...: retries CMD every half second until it
# succeeds, or fails naming WHAT after SECONDS.
wait_for() {
	local what=$1 secs=$2 i
	shift 2
	for i in $(seq 1 $((secs * 2))); do
		"$@" >/dev/null 2>&1 && return 0
		sleep 0.5
	done
	die "$what not ready after ${secs}s"
}

# port_free PORT succeeds when nothing listens on 127.0.0.1:PORT.
port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# keep_failed_logs DOWN WHAT [DEST [GLOB]]: after a failed bring-up, copies
# the logs of $STATE (GLOB, default *.log) to DEST (default $STATE.failed),
# runs the DOWN script so that nothing half-started is left to be mistaken
# for a running stack, and says so.
keep_failed_logs() {
	local dest=${3:-$STATE.failed} glob=${4:-*.log}
	rm -rf "$dest"
	mkdir -p "$dest"
	# shellcheck disable=SC2086 # $glob is a pattern
	cp "$STATE"/$glob "$dest/" 2>/dev/null || true
	"$1" >/dev/null
	echo "$2 failed; logs kept in $dest" >&2
}
