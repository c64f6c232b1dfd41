#!/usr/bin/env bash
# Stops the Keystone and Neutron started by up.sh, by their recorded pids
# (SIGTERM, then SIGKILL after 20 s), together with the other processes of
# their sessions (the uwsgi worker), and removes $OS_STATE. The golden
# database cache is kept. Does nothing harmful when nothing runs.
set -euo pipefail
# shellcheck source=cluster/openstack/lib.sh
source "$(dirname "$0")/lib.sh"

# Inside the repository, only a directory under .work/ is ours to remove.
case "$OS_STATE" in
"$OS_ROOT"/.work/?*) ;;
/ | "$HOME" | "$OS_ROOT" | "$OS_ROOT"/*) die "refusing to remove OS_STATE=$OS_STATE" ;;
esac

# ours PID PATTERN succeeds when PID lives and its command line matches PATTERN.
ours() {
	local cmd
	cmd=$(tr '\0' ' ' 2>/dev/null <"/proc/$1/cmdline") || return 1
	[[ $cmd =~ $2 ]]
}

# members SID PATTERN prints the pids of the session SID that match PATTERN.
members() {
	local p
	for p in $(ps -o pid= --sid "$1" 2>/dev/null); do
		if ours "$p" "$2"; then echo "$p"; fi
	done
}

# halt NAME PATTERN: stops the server of $OS_STATE/NAME.pid and its session.
# up.sh starts each server with setsid, so its pid is also its session id.
halt() {
	local f=$OS_STATE/$1.pid pid p _ seen
	[ -s "$f" ] || return 0
	pid=$(cat "$f")
	if ! [[ $pid =~ ^[0-9]+$ ]]; then
		rm -f "$f"
		return 0
	fi
	seen=$({
		echo "$pid"
		members "$pid" "$2"
	} | paste -sd,)
	if ours "$pid" "$2"; then
		kill -TERM "$pid" 2>/dev/null || true
		for _ in $(seq 1 80); do
			ours "$pid" "$2" || break
			sleep 0.25
		done
	fi
	# What is left of the session: workers the server did not take down.
	for p in $(members "$pid" "$2"); do
		kill -TERM "$p" 2>/dev/null || true
	done
	for _ in $(seq 1 20); do
		[ -n "$(members "$pid" "$2")" ] || break
		sleep 0.25
	done
	for p in $(members "$pid" "$2"); do
		kill -KILL "$p" 2>/dev/null || true
	done
	# Orphans are reaped by init: wait for that, so that not even a zombie
	# of ours is left when this script returns.
	for _ in $(seq 1 20); do
		ps -o stat= -p "$seen" 2>/dev/null | grep -q Z || break
		sleep 0.25
	done
	rm -f "$f"
	say "stopped $1 (pid $pid)"
}

# Both take a few seconds to exit: stop them side by side.
halt neutron 'neutron-server' &
n=$!
halt keystone 'uwsgi|keystone' &
k=$!
wait "$n"
wait "$k"
rm -rf "$OS_STATE"
say "OpenStack down; golden cache kept in $OS_GOLDEN_ROOT"
