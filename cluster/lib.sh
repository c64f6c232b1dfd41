# shellcheck shell=bash disable=SC2034 # the variables are used by the scripts that source this
# What the scripts of cluster/ share: the state directories, messages, the
# process supervisor and the ports. Sourced (by cluster/*/lib.sh and
# hack/stack-memory.sh), not run.
#
# The supervisor keeps its files in $SV_DIR (set by the sourcing lib):
# `start NAME CMD...` runs CMD as the leader of a session of its own (no
# terminal signal reaches it; `stop NAME` stops what it started with it),
# its output in $SV_LOGS/NAME.log (default $SV_DIR), its pid in NAME.pid and
# in NAME.pid.started the boot and time it started, so that a pid given to
# another process since (pids wrap at 32768 here) is never taken for ours.

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# The local stack's state (cluster/local, node, site) and that of its
# Keystone + Neutron (cluster/openstack): .work/openstack beside the default
# stack, $STATE-openstack beside another, so that a second stack needs only
# its STATE.
STATE=${STATE:-$ROOT/.work/local}
os_state=$STATE-openstack
[ "$STATE" != "$ROOT/.work/local" ] || os_state=$ROOT/.work/openstack
export OS_STATE=${OS_STATE:-$os_state}
# Names what a stack makes outside $STATE (network namespaces, cgroups) and
# where its ports are looked for first.
STATE_ID=$(printf '%s' "$STATE" | sha256sum | cut -c1-8)

log() { printf '%s %s\n' "$(date +%T)" "$*"; }

die() {
	printf 'error: %s\n' "$*" >&2
	exit 1
}

# elapsed T0 prints the seconds since T0 (date +%s%N), to a tenth.
elapsed() {
	local ds=$((($(date +%s%N) - $1) / 100000000))
	printf '%d.%d' $((ds / 10)) $((ds % 10))
}

# removable VAR fails unless the directory in VAR is one a down.sh may
# remove: inside the repository only one below .work/.
removable() {
	case ${!1} in
	"$ROOT"/.work/?*) ;;
	/ | "$HOME" | "$ROOT" | "$ROOT"/*) die "refusing to remove $1=${!1}" ;;
	esac
}

# alive PID succeeds while the process runs: not once it has exited, even
# before it is reaped (a zombie: init here reaps every second or two).
alive() {
	local s
	s=$(ps -o stat= -p "$1" 2>/dev/null) && [ "${s:0:1}" != Z ]
}

# stamp PID prints the boot and the start time (clock ticks since boot) of
# the process PID, which no later process given the same pid shares.
stamp() {
	local s fields
	s=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
	read -ra fields <<<"${s##*) }"
	echo "$(cat /proc/sys/kernel/random/boot_id) ${fields[19]}"
}

# start NAME CMD...: starts CMD (see above), without the lock a bring-up
# may hold on fd 9. CMD must not fork itself away: env, nsenter, unshare
# without --fork and sh -c 'exec ...' keep the pid.
start() {
	local name=$1
	shift
	setsid "$@" >"${SV_LOGS:-$SV_DIR}/$name.log" 2>&1 </dev/null 9>&- &
	echo $! >"$SV_DIR/$name.pid"
	stamp $! >"$SV_DIR/$name.pid.started" || true
}

# running NAME succeeds while the process start NAME began runs.
running() {
	local f=$SV_DIR/$1.pid
	[ -f "$f" ] && alive "$(cat "$f")" && [ "$(stamp "$(cat "$f")")" = "$(cat "$f.started" 2>/dev/null)" ]
}

# session SID prints the processes of the session SID that have not exited
# (and fails when there are none).
session() { ps -o pid=,stat= --sid "$1" 2>/dev/null | awk '$2 !~ /^Z/ {print $1; n++} END {exit !n}'; }

# awhile TICKS CMD...: waits while CMD succeeds, TICKS quarter seconds at most.
awhile() { local i; for ((i = 0; i < $1; i++)); do "${@:2}" >/dev/null || return 0; sleep 0.25; done; }

# stop [-SIGNAL] NAME...: stops each NAME in turn: sends its process SIGNAL
# (default TERM) and waits for it (SIGKILL after 20 s), then stops what is
# left of its session (TERM, KILL after 5 s); removes its pid files. Then
# waits until init has reaped them all, so that not even a zombie is left.
# A pid file whose process has gone (or whose pid is another's now) is
# only removed.
stop() {
	local sig=TERM sids='' n pid s
	[[ ${1:-} != -* ]] || { sig=${1#-} && shift; }
	for n in "$@"; do
		if running "$n"; then
			pid=$(cat "$SV_DIR/$n.pid")
			sids+=${sids:+,}$pid
			kill -"$sig" "$pid" 2>/dev/null || true
			awhile 80 alive "$pid"
			# A leader that did not heed SIGTERM gets no second one.
			for s in $(alive "$pid" || echo TERM) KILL; do
				session "$pid" | xargs -r kill -"$s" 2>/dev/null || true
				awhile 20 session "$pid"
			done
		fi
		rm -f "$SV_DIR/$n.pid" "$SV_DIR/$n.pid.started"
	done
	[ -z "$sids" ] || awhile 20 ps -o pid= --sid "$sids"
}

# wait_for WHAT SECONDS CMD...: retries CMD every half second until it
# succeeds, or fails naming WHAT after SECONDS.
wait_for() { wait_ready "" "$@"; }

# wait_ready NAME WHAT SECONDS CMD...: wait_for, but fails at once, naming
# its log, when the process of NAME has exited. (CMD may be a function of
# the caller's: the locals here have names no caller uses.)
wait_ready() {
	local sv_name=$1 sv_what=$2 sv_secs=$3 sv_end=$((SECONDS + $3))
	shift 3
	until "$@" >/dev/null 2>&1; do
		[ -z "$sv_name" ] || running "$sv_name" || die "$sv_what: $sv_name exited; see ${SV_LOGS:-$SV_DIR}/$sv_name.log"
		[ "$SECONDS" -lt "$sv_end" ] || die "$sv_what not ready after ${sv_secs}s"
		sleep 0.5
	done
}

# answers URL succeeds when a GET of URL succeeds (5 s at most).
answers() { curl -fsS -o /dev/null -m 5 "$1" 2>/dev/null; }

# on_failure DOWN WHAT DEST GLOB...: until `succeeded`, the script's exit
# (a failure: set -e, die) copies the files GLOB... of $SV_DIR to DEST,
# runs the DOWN script so that nothing half-started is left to be mistaken
# for a running one, and says so.
# shellcheck disable=SC2064 # the arguments are quoted into the trap now
on_failure() { trap "sv_failed $(printf '%q ' "$@")" EXIT; }
succeeded() { trap - EXIT; }
sv_failed() {
	rm -rf "$3"
	mkdir -p "$3"
	# shellcheck disable=SC2068 # the GLOBs are patterns
	(cd "$SV_DIR" && cp -a ${@:4} "$3/") 2>/dev/null || true
	"$1" >/dev/null || true
	echo "$2 failed; logs kept in $3" >&2
}

# Ports, on 127.0.0.1. A variable NAME set in the environment is the port
# of NAME; otherwise the first bring-up of a state directory finds free
# ones (choose_ports) and records them in a file there, which the scripts
# after it read (read_ports).
#
# A port is free when nothing listens on it and no other state directory
# has claimed it: between choosing a port and listening on it a server
# takes seconds (Keystone about 20), and two bring-ups at the same moment
# (the e2e's lanes) both found 5000 free and started two Keystones on it.
# A claim is the file $PORT_CLAIMS/PORT naming the ports file that
# recorded PORT; it lapses when that file no longer records it (its state
# directory removed or its ports chosen again). Claims are made under one
# lock, so that choosing is one at a time; they are per user (the
# directory's files are the user's).
PORT_CLAIMS=${PORT_CLAIMS:-${TMPDIR:-/tmp}/provider-ipsec-ports-$(id -u)}

# listening PORT succeeds when something accepts connections on PORT.
listening() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# need_free NAME... fails unless the port of each variable NAME is free.
need_free() {
	local n
	for n in "$@"; do
		! listening "${!n}" || die "127.0.0.1:${!n} ($n) is in use by another process; stop it or set $n to another port"
	done
}

# claimed_elsewhere FILE PORT succeeds when a ports file other than FILE
# claims PORT and still records it.
claimed_elsewhere() {
	local owner
	owner=$(cat "$PORT_CLAIMS/$2" 2>/dev/null) || return 1
	[ "$owner" != "$1" ] && grep -qs "=$2\$" "$owner"
}

# from_env NAME succeeds when the environment sets NAME.
from_env() { [[ -n ${!1:-} && $(declare -p "$1") =~ ^declare\ -[a-z]*x ]]; }

# read_ports FILE NAME[=PORT]...: sets each NAME the environment does not
# set from FILE (NAME=PORT lines), when there is one.
read_ports() {
	local file=$1 k v
	shift
	[ -f "$file" ] || return 0
	while IFS='=' read -r k v; do
		if [[ " ${*%%=*} " == *" $k "* ]] && ! from_env "$k"; then printf -v "$k" %s "$v"; fi
	done <"$file"
}

# choose_ports FILE FIRST COUNT STEP NAME=PORT...: each NAME the environment
# does not set becomes PORT + k*STEP for the first k of FIRST, FIRST+1, ...
# (COUNT of them, wrapping at COUNT to 0) at which all of those are free
# and claimed by no other state directory; those it sets must be free.
# Exports every NAME, records them in FILE and claims the chosen ones.
choose_ports() {
	local file=$1 first=$2 count=$3 step=$4 spec n i lock found=() fixed=()
	shift 4
	file=$(realpath -m "$file")
	for spec in "$@"; do
		if from_env "${spec%%=*}"; then fixed+=("${spec%%=*}"); else found+=("$spec"); fi
	done
	need_free "${fixed[@]}"
	mkdir -p "$PORT_CLAIMS" "$(dirname "$file")"
	exec {lock}>"$PORT_CLAIMS/lock"
	flock "$lock"
	for ((i = 0; i <= count; i++)); do
		[ "$i" -lt "$count" ] || die "no free ports for ${found[*]%%=*} (tried $count ranges)"
		for spec in "${found[@]}"; do
			printf -v "${spec%%=*}" %s $((${spec#*=} + (first + i) % count * step))
		done
		for spec in "${found[@]}"; do
			n=${spec%%=*}
			! claimed_elsewhere "$file" "${!n}" || continue 2
		done
		(need_free "${found[@]%%=*}") 2>/dev/null && break
	done
	for spec in "$@"; do
		n=${spec%%=*}
		export "${n?}"
		echo "$n=${!n}"
	done >"$file"
	for spec in "${found[@]}"; do
		n=${spec%%=*}
		echo "$file" >"$PORT_CLAIMS/${!n}"
	done
	exec {lock}>&-
}
