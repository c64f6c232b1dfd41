# shellcheck shell=bash disable=SC2034 # the variables are used by the scripts that source this
# Settings and helpers shared by the OpenStack test-API scripts. Sourced, not run.
#
# Keystone and Neutron run on 127.0.0.1 only. Everything a running instance
# writes (configuration, SQLite databases, keys, logs, pid files, clouds.yaml,
# fixtures.json) lives in $OS_STATE; freshly initialised databases are cached
# outside the repository in $OS_GOLDEN_ROOT so that later starts skip the slow
# schema creation and bootstrap.

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

# Debian's interpreter: the OpenStack libraries live in its dist-packages.
PY=/usr/bin/python3

# The servers' packages (install.sh prints their versions), and those whose
# versions define what an initialised database looks like.
OS_PACKAGES=(neutron-server keystone)
AGENTS_PACKAGES=(neutron-linuxbridge-agent neutron-l3-agent rabbitmq-server)
OS_VERSIONED_PACKAGES=(neutron-server python3-neutron keystone python3-keystone python3-oslo.db python3-sqlalchemy python3-alembic)
# Bump when the way the golden databases are made changes.
OS_GOLDEN_FORMAT=1

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
