#!/usr/bin/env bash
# Stops the Keystone and Neutron started by up.sh, by their recorded pids
# (SIGTERM, then SIGKILL after 20 s), together with the other processes of
# their sessions (the uwsgi worker), and the agents, their broker and relay
# if they run (agents.sh), deletes the agents' namespaces (with them every
# bridge, tap and rule the agents made); then their MariaDB, and any other
# mariadbd of this $OS_STATE (db_strays); and removes $OS_STATE and the
# lock file up.sh keeps beside it. The golden
# database cache is kept. Does nothing harmful when nothing runs.
set -euo pipefail
# shellcheck source=cluster/openstack/lib.sh
source "$(dirname "$0")/lib.sh"
# shellcheck source=cluster/openstack/agents.sh
source "$OS_DIR/agents.sh"
removable OS_STATE

# halt NAME: stops the server NAME, and says so.
halt() {
	local pid
	pid=$(cat "$OS_STATE/$1.pid" 2>/dev/null) || return 0
	stop "$1"
	say "stopped $1 (pid $pid)"
}
# Each takes a few seconds to exit: stop them side by side.
halt neutron &
halt keystone &
agents_stop &
wait
# The database last: its clients log errors while it is gone.
halt mariadb
db_strays_stop
rm -rf "$OS_STATE" "$OS_STATE.lock"
say "OpenStack down; golden cache kept in $OS_GOLDEN_ROOT"
