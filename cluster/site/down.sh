#!/usr/bin/env bash
# Stops the local stack's site (cluster/site/up.sh) and removes what it
# made: every process by its recorded pid (site-*.pid in $STATE), each
# node's tenant link handed back to the node's namespace when the node
# still runs (deleting the router's namespace would delete the node's eth1
# with it), every namespace of the site ($NS_PREFIX*, the test's
# stand-in gateway's too), $SITE_DIR and the site's pid and log files.
# Safe to run when nothing runs, also after a failed up.sh.
set -euo pipefail
# shellcheck source=cluster/site/lib.sh
source "$(dirname "$0")/lib.sh"

# charon would spend seconds sending IKE DELETEs: nothing of it outlives
# its namespaces.
stop -KILL site-client site-vm site-gw &
stop site-fipnat site-echo &
wait
for f in "$STATE"/node/*/tenant-link; do
	[ -f "$f" ] || continue
	read -r netns link <"$f"
	[ -e "/run/netns/$netns" ] || continue
	ip -n "$(ns router)" link show "$link" >/dev/null 2>&1 || continue
	ip -n "$(ns router)" link set "$link" nomaster
	ip -n "$(ns router)" link set "$link" netns "$netns"
	ip -n "$netns" link set "$link" up
done
for r in $SITE_ROLES; do
	if ns_exists "$r"; then
		# Whatever still runs in it (a probe, an exec'd command).
		ip netns pids "$(ns "$r")" 2>/dev/null | xargs -r kill -9 2>/dev/null || true
		ip netns del "$(ns "$r")"
	fi
done
rm -rf "$SITE_DIR"
rm -f "$STATE"/site-*.log
rmdir "$STATE" 2>/dev/null || true
log "site down"
