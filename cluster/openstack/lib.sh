# shellcheck shell=bash disable=SC2034 # the variables are used by the scripts that source this
# Settings and helpers shared by the OpenStack test-API scripts. Sourced, not run.
#
# Keystone and Neutron run on 127.0.0.1 only. Everything a running instance
# writes (configuration, SQLite databases, keys, logs, pid files, clouds.yaml,
# fixtures.json) lives in $OS_STATE; freshly initialised databases are cached
# outside the repository in $OS_GOLDEN_ROOT so that later starts skip the slow
# schema creation and bootstrap.

OS_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
OS_DIR=$OS_ROOT/cluster/openstack
OS_STATE=${OS_STATE:-$OS_ROOT/.work/openstack}
OS_KEYSTONE_PORT=${OS_KEYSTONE_PORT:-5000}
OS_NEUTRON_PORT=${OS_NEUTRON_PORT:-9696}
OS_GOLDEN_ROOT=${OS_GOLDEN_ROOT:-${XDG_CACHE_HOME:-$HOME/.cache}/provider-ipsec}
export OS_STATE OS_KEYSTONE_PORT OS_NEUTRON_PORT

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
OS_VERSIONED_PACKAGES=(neutron-server python3-neutron keystone python3-keystone python3-oslo.db python3-sqlalchemy python3-alembic)
# Bump when the way the golden databases are made changes.
OS_GOLDEN_FORMAT=1

OS_T0=${OS_T0:-$(date +%s%N)}
export OS_T0

# elapsed prints the seconds since the first script of this run started.
elapsed() {
	local ds=$((($(date +%s%N) - OS_T0) / 100000000))
	printf '%d.%d' $((ds / 10)) $((ds % 10))
}

# say MSG...: progress line with the elapsed seconds.
say() { printf '[openstack %6ss] %s\n' "$(elapsed)" "$*"; }

die() {
	printf 'error: %s\n' "$*" >&2
	exit 1
}

# alive NAME succeeds when the process recorded in $OS_STATE/NAME.pid exists.
alive() {
	local f=$OS_STATE/$1.pid
	[ -s "$f" ] && kill -0 "$(cat "$f")" 2>/dev/null
}

# listening PORT succeeds when something accepts TCP connections on 127.0.0.1:PORT.
listening() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# http_code URL prints the HTTP status of a GET (000 when nothing answers).
http_code() { curl -s -o /dev/null -m 5 -w '%{http_code}' "$1" || true; }

# golden_dir prints the cache directory for the installed package versions.
golden_dir() {
	local key
	key=$({
		echo "format=$OS_GOLDEN_FORMAT"
		dpkg-query -W -f='${Package}=${Version}\n' "${OS_VERSIONED_PACKAGES[@]}" 2>/dev/null
	} | sha256sum | cut -c1-16)
	echo "$OS_GOLDEN_ROOT/openstack-golden-$key"
}
