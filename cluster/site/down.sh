#!/usr/bin/env bash
# Stops the local stack's site (cluster/site/up.sh) and removes what it
# made: every process by its recorded pid (site-*.pid in $STATE), the
# node's macvlan parent's peer handed back to the node's namespace when the
# node still runs (deleting the router's namespace would delete the node's
# eth1 with it), every namespace of the site ($NS_PREFIX*, the test's
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
if ns_exists router && [ -e "/run/netns/$NETNS" ] &&
	ip -n "$(ns router)" link show "$NODE_PARENT_PEER" >/dev/null 2>&1; then
	ip -n "$(ns router)" link set "$NODE_PARENT_PEER" nomaster
	ip -n "$(ns router)" link set "$NODE_PARENT_PEER" netns "$NETNS"
	ip -n "$NETNS" link set "$NODE_PARENT_PEER" up
fi
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
