# shellcheck shell=bash disable=SC2034 # the variables are used by the scripts that source this
# Settings and helpers shared by the OpenStack test-API scripts. Sourced, not run.
#
# Keystone and Neutron run on 127.0.0.1 only, their databases in a MariaDB
# server of their own that listens only on a unix socket. Everything a
# running instance writes (configuration, the server's data directory, keys,
# logs, pid files, clouds.yaml, fixtures.json) lives in $OS_STATE; a freshly
# initialised data directory is cached outside the repository in
# $OS_GOLDEN_ROOT so that later starts skip the slow migrations and bootstrap.

# shellcheck source=cluster/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
OS_DIR=$ROOT/cluster/openstack
SV_DIR=$OS_STATE
SV_LOGS=$OS_STATE/log
# The servers' ports, unless set: 5000 and 9696 (those of
# examples/providerconfig), else the first free pair after them, chosen by
# up.sh and recorded in $OS_STATE/ports.
OS_PORTS=(OS_KEYSTONE_PORT=5000 OS_NEUTRON_PORT=9696)
read_ports "$OS_STATE/ports" "${OS_PORTS[@]}"
# The agents' (AGENTS=1, agents.sh): names made from $OS_STATE, so that two
# instances never share a namespace; the host the agents report (a port
# bound there, binding:host_id, is wired by them); the host side of the
# AMQP relay, chosen by the up.sh that starts the agents and recorded apart
# (the servers' ports are taken by then).
OS_ID=$(printf '%s' "$OS_STATE" | sha256sum | cut -c1-8)
AGENTS_NS=osagents-$OS_ID
AGENTS_EXT_NS=osext-$OS_ID
AGENTS_HOST=lab-compute
AGENTS_VTEP_IP=192.168.77.1
AGENTS_PROCS=(rabbitmq amqp-ns amqp-host linuxbridge-agent l3-agent)
read_ports "$OS_STATE/amqp.port" OS_AMQP_PORT=5672
OS_GOLDEN_ROOT=${OS_GOLDEN_ROOT:-${XDG_CACHE_HOME:-$HOME/.cache}/provider-ipsec}

# Fixed test credentials (the admin password is baked into the golden
# databases). fixtures.py reads them from the environment.
export OS_ADMIN_PASSWORD=admin-test-password
export OS_NEUTRON_SERVICE_USER=neutron
export OS_NEUTRON_SERVICE_PASSWORD=neutron-test-password
# The database users' passwords (baked into the golden data directory too).
OS_DB_KEYSTONE_PASSWORD=keystone-db-test-password
OS_DB_NEUTRON_PASSWORD=neutron-db-test-password

# MariaDB: its configuration, data directory and socket. A unix socket
# path has room for 107 bytes, which up.sh checks.
DB_CNF=$OS_STATE/etc/my.cnf
DB_DATA=$OS_STATE/mysql
DB_SOCKET=$OS_STATE/db.sock

# Debian's interpreter: the OpenStack libraries live in its dist-packages.
PY=/usr/bin/python3

# The servers' packages (install.sh prints their versions), and those whose
# versions define what an initialised database looks like.
OS_PACKAGES=(neutron-server keystone mariadb-server)
AGENTS_PACKAGES=(neutron-linuxbridge-agent neutron-l3-agent rabbitmq-server)
OS_VERSIONED_PACKAGES=(neutron-server python3-neutron keystone python3-keystone python3-oslo.db python3-sqlalchemy python3-alembic mariadb-server)
# Bump when the way the golden databases are made changes.
OS_GOLDEN_FORMAT=2

OS_T0=${OS_T0:-$(date +%s%N)}
export OS_T0

# say MSG...: progress line with the seconds since the first script of this
# run started.
say() { printf '[openstack %6ss] %s\n' "$(elapsed "$OS_T0")" "$*"; }

# golden_dir prints the cache directory for the installed package versions.
golden_dir() {
	local key
	key=$({
		echo "format=$OS_GOLDEN_FORMAT"
		dpkg-query -W -f='${Package}=${Version}\n' "${OS_VERSIONED_PACKAGES[@]}" 2>/dev/null
	} | sha256sum | cut -c1-16)
	echo "$OS_GOLDEN_ROOT/openstack-golden-$key"
}

# db_strays prints the pids of the mariadbd processes running with this
# state directory's configuration, whether a pid file names them or not
# (one of a run killed before it recorded its pid, or whose state directory
# was removed under it).
db_strays() {
	local p
	for p in $(pgrep -x mariadbd); do
		tr '\0' '\n' <"/proc/$p/cmdline" 2>/dev/null | grep -qxF -- "--defaults-file=$DB_CNF" && echo "$p"
	done
	return 0
}

# db_strays_stop stops the db_strays: SIGTERM (mariadbd shuts down
# cleanly), SIGKILL after 20 s.
db_strays_stop() {
	local pids s
	for s in TERM KILL; do
		pids=$(db_strays)
		[ -n "$pids" ] || return 0
		# shellcheck disable=SC2086 # one word a pid
		kill -"$s" $pids 2>/dev/null || true
		awhile 80 db_strays_left
	done
}
db_strays_left() { [ -n "$(db_strays)" ]; }
