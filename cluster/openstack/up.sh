#!/usr/bin/env bash
# Brings up a real OpenStack Identity (Keystone) and Networking (Neutron) API
# on 127.0.0.1 for the provider's integration tests, from Debian's packages:
#
#   Keystone  http://127.0.0.1:$OS_KEYSTONE_PORT/v3  (uwsgi, one process, fernet tokens)
#   Neutron   http://127.0.0.1:$OS_NEUTRON_PORT      (ML2 + router plugin, no agents, no RPC bus)
#
# With AGENTS=1, Neutron gets its real linuxbridge (L2) and L3 agents with
# RabbitMQ, in a network namespace of their own (agents.sh): ports bound to
# the agents' host are wired with iptables/ebtables anti-spoofing, routers
# and floating IPs get real qrouter namespaces. AGENTS=1 on a running
# instance without them adds them (Neutron restarts). make dev (dev.sh)
# and the e2e pass AGENTS=1; off by default for the integration tests'
# API-only Neutron, which needs none of it (they cost ~0.8 GiB).
#
# Both keep their data in a MariaDB server of their own (Debian's mariadbd,
# its data in $OS_STATE/mysql, listening only on the unix socket
# $OS_STATE/db.sock) and connect to it as production does (mysql+pymysql).
# The first start on a given set of package versions creates the databases
# (Neutron's by its migrations) and saves the server's data directory in the
# golden cache (see lib.sh); later starts copy it from there. Every start
# then creates the test fixtures (fixtures.py) and writes $OS_STATE/clouds.yaml
# and $OS_STATE/fixtures.json. A second run while the servers answer says so
# and changes nothing. A failed run keeps its logs in $OS_STATE.failed and
# stops what it started; a mariadbd left by a killed run of the same
# $OS_STATE is stopped before a new one starts.
set -euo pipefail
# shellcheck source=cluster/openstack/lib.sh
source "$(dirname "$0")/lib.sh"
# shellcheck source=cluster/openstack/agents.sh
source "$OS_DIR/agents.sh"
AGENTS=${AGENTS:-0}
[[ $AGENTS == [01] ]] || die "AGENTS=$AGENTS: want 0 or 1"
export AGENTS

# One bring-up at a time per state directory: a second concurrent run (for
# example from test packages run in parallel) waits, then finds it running.
mkdir -p "$(dirname "$OS_STATE")"
exec 9>"$OS_STATE.lock"
if ! flock -n 9; then
	say "another up.sh is bringing up $OS_STATE; waiting for it"
	flock -w 900 9 || die "timed out waiting for the lock $OS_STATE.lock"
fi

# urls sets the servers' URLs from their ports.
urls() { KS_URL=http://127.0.0.1:$OS_KEYSTONE_PORT NEUTRON_URL=http://127.0.0.1:$OS_NEUTRON_PORT; }
# with_agents succeeds when this run starts the agents.
with_agents() { [ "$AGENTS" = 1 ]; }
# neutron_conf writes Neutron's configuration: without the agents no
# message bus and no mechanism driver, with them RabbitMQ (through the
# relay), ML2 linuxbridge and the iptables firewall.
neutron_conf() {
	local transport=fake:// mech='' firewall=noop
	if with_agents; then
		transport=rabbit://guest:guest@127.0.0.1:$OS_AMQP_PORT/ mech=linuxbridge firewall=iptables
	fi
	cat >"$OS_STATE/etc/neutron.conf" <<EOF
[DEFAULT]
bind_host = 127.0.0.1
bind_port = $OS_NEUTRON_PORT
auth_strategy = keystone
core_plugin = ml2
service_plugins = router
api_paste_config = /etc/neutron/api-paste.ini
state_path = $OS_STATE/neutron
# Without agents: no message bus, RPC goes nowhere, ports stay unbound (DOWN).
transport_url = $transport
api_workers = 0
rpc_workers = 0
rpc_state_report_workers = 0
notify_nova_on_port_status_changes = false
notify_nova_on_port_data_changes = false
dhcp_agent_notification = false
# A test server: on SIGTERM, give the RPC consumers 5 s, not 60.
graceful_shutdown_timeout = 5
[database]
connection = $(db_url neutron "$OS_DB_NEUTRON_PASSWORD")
[oslo_concurrency]
lock_path = $OS_STATE/lock
[oslo_messaging_notifications]
driver = noop
[keystone_authtoken]
www_authenticate_uri = $KS_URL
auth_url = $KS_URL
auth_type = password
user_domain_name = Default
project_domain_name = Default
project_name = service
username = $OS_NEUTRON_SERVICE_USER
password = $OS_NEUTRON_SERVICE_PASSWORD
service_token_roles_required = true
# Neutron caches a validated token in process for this many seconds (300 by
# default): a revoked token keeps working until then. Short, so that the
# re-authentication test sees a revocation take effect within seconds.
token_cache_time = 10
[experimental]
# Neutron Zed calls the linuxbridge mechanism driver experimental.
linuxbridge = true
EOF

	cat >"$OS_STATE/etc/ml2_conf.ini" <<EOF
[ml2]
type_drivers = flat,vxlan
tenant_network_types = vxlan
# Without agents no mechanism driver: nothing binds ports, nothing is wired.
mechanism_drivers = $mech
extension_drivers = port_security
[ml2_type_flat]
flat_networks = *
[ml2_type_vxlan]
vni_ranges = 1000:1999
[securitygroup]
enable_security_group = true
firewall_driver = $firewall
EOF
}
neutron_confs=(--config-file "$OS_STATE/etc/neutron.conf" --config-file "$OS_STATE/etc/ml2_conf.ini")

# db_url NAME PASSWORD prints the SQLAlchemy URL of the database NAME as
# its user NAME: the driver and charset of production's (and devstack's)
# URLs; the host is the server's unix socket.
db_url() { echo "mysql+pymysql://$1:$2@localhost/$1?unix_socket=$DB_SOCKET&charset=utf8"; }
# db_conf writes MariaDB's configuration, which mariadbd, mariadb-install-db
# and the clients read alone (--defaults-file; Debian's /etc/mysql is not
# read).
db_conf() {
	cat >"$DB_CNF" <<EOF
[mysqld]
datadir = $DB_DATA
tmpdir = $OS_STATE/db-tmp
socket = $DB_SOCKET
pid-file = $DB_DATA/mariadbd.pid
# The unix socket only: nothing listens on TCP, so stacks side by side
# need nothing of their own but their state directories.
skip-networking
skip-name-resolve
# Root runs the stack and its state directory may be where only root can
# go (under /root): the server runs as root too.
user = root
# What OpenStack's installation guide sets for its databases.
character-set-server = utf8
collation-server = utf8_general_ci
default-storage-engine = innodb
innodb_file_per_table = on
# Sized for a test stack's few MiB of data (the defaults: 128 MiB of
# buffer pool, 96 MiB of redo log, which every start would copy).
innodb_buffer_pool_size = 64M
innodb_log_file_size = 16M
aria_pagecache_buffer_size = 8M
key_buffer_size = 1M
innodb_buffer_pool_dump_at_shutdown = off
innodb_buffer_pool_load_at_startup = off
# A transaction's log is written at commit and flushed to disk once a
# second: the stack's data does not outlive it, and a test's hundreds
# of writes do not each wait for an fsync. Locking and isolation are the
# server's defaults, as in production.
innodb_flush_log_at_trx_commit = 2
[client]
socket = $DB_SOCKET
user = root
EOF
}
# db_start starts MariaDB on the data directory there is and waits until
# it answers.
db_start() {
	start mariadb /usr/sbin/mariadbd "--defaults-file=$DB_CNF"
	wait_ready mariadb MariaDB 60 mariadb-admin "--defaults-file=$DB_CNF" ping
}
# db_sql runs the SQL on its standard input as MariaDB's root.
db_sql() { mariadb "--defaults-file=$DB_CNF"; }
# start_neutron starts neutron-server with the configuration for the agents
# or without them.
start_neutron() {
	neutron_conf
	start neutron neutron-server "${neutron_confs[@]}"
}
# amqp_port chooses the relay's host port.
amqp_port() { choose_ports "$OS_STATE/amqp.port" 0 100 1 OS_AMQP_PORT=5672; }
# agents_up starts the agents' network, broker and relay.
agents_up() {
	agents_network
	agents_conf
	agents_broker
	agents_relay
}
# summary says what runs and how to use it.
summary() {
	local agents=''
	! with_agents || agents=", L2 $(pss linuxbridge-agent), L3 $(pss l3-agent), RabbitMQ $(pss rabbitmq)"
	say "up in $(elapsed "$OS_T0") s; PSS Keystone $(pss keystone), Neutron $(pss neutron), MariaDB $(pss mariadb)$agents"
	cat <<EOF
  Keystone: $KS_URL/v3   Neutron: $NEUTRON_URL   region RegionOne
  export OS_CLIENT_CONFIG_FILE=$OS_STATE/clouds.yaml   # clouds: tenant-a, tenant-a-appcred, admin
  fixture ids: $OS_STATE/fixtures.json
  stop: cluster/openstack/down.sh
EOF
	! with_agents || cat <<EOF
  agents: host $AGENTS_HOST in namespace $AGENTS_NS; the external network: bridge "ext" in namespace $AGENTS_EXT_NS
EOF
}
# pss NAME: proportional memory of the processes of NAME's session (for
# RabbitMQ: of its namespace, where epmd runs in a session of its own).
pss() {
	local pids
	if [ "$1" = rabbitmq ]; then
		# A process of the namespace may be gone by the time ps asks (an
		# agent's short-lived helper): it has no session then.
		local l2 l3 sid
		l2=$(cat "$OS_STATE/linuxbridge-agent.pid") l3=$(cat "$OS_STATE/l3-agent.pid")
		pids=$(ip netns pids "$AGENTS_NS" | while read -r p; do
			sid=$(ps -o sid= -p "$p" | tr -d ' ')
			if [ -n "$sid" ] && [ "$sid" -ne "$l2" ] && [ "$sid" -ne "$l3" ]; then echo "$p"; fi
		done)
	else
		pids=$(ps -o pid= --sid "$(cat "$OS_STATE/$1.pid")")
	fi
	for p in $pids; do awk '/^Pss:/ {print $2}' "/proc/$p/smaps_rollup" 2>/dev/null; done |
		awk '{s += $1} END {printf "%d MiB", s / 1024}'
}

if running mariadb && running keystone && running neutron && urls && answers "$KS_URL/v3" && answers "$NEUTRON_URL/"; then
	if ! with_agents || agents_running; then
		say "already running: Keystone $KS_URL/v3, Neutron $NEUTRON_URL; OS_CLIENT_CONFIG_FILE=$OS_STATE/clouds.yaml ('cluster/openstack/down.sh' stops it)"
		exit 0
	fi
	say "adding the agents: Neutron restarts"
	on_failure "$OS_DIR/down.sh" "adding the agents" "$OS_STATE.failed" 'log/*' etc
	"$OS_DIR/install.sh"
	stop neutron
	amqp_port
	agents_up
	start_neutron
	wait_ready neutron Neutron 120 answers "$NEUTRON_URL/"
	say "Neutron answers on $NEUTRON_URL"
	agents_ready
	say "agents alive: linuxbridge and L3 on host $AGENTS_HOST"
	succeeded
	summary
	exit 0
fi

# Leftovers of an instance that died or was half stopped: its state, and a
# mariadbd of it that may have lost its pid file.
if [ -d "$OS_STATE" ] || [ -n "$(db_strays)" ]; then
	"$OS_DIR/down.sh" >/dev/null
fi

# Free ports: neutron-server binds with SO_REUSEPORT, so a second one on
# the same port would start happily next to a stale one, and requests would
# go to either.
choose_ports "$OS_STATE/ports" 0 100 1 "${OS_PORTS[@]}"
urls
if with_agents; then
	amqp_port
fi
on_failure "$OS_DIR/down.sh" "OpenStack bring-up" "$OS_STATE.failed" 'log/*' etc
mkdir -p "$OS_STATE"/{etc,db-tmp,log,lock,neutron,keys/fernet,keys/credential}
[ ${#DB_SOCKET} -le 107 ] || die "MariaDB's socket path $DB_SOCKET is longer than a unix socket's 107 bytes: set OS_STATE to a shorter directory"

"$OS_DIR/install.sh"

# ---------------------------------------------------------------- configuration
cat >"$OS_STATE/etc/keystone.conf" <<EOF
[database]
connection = $(db_url keystone "$OS_DB_KEYSTONE_PASSWORD")
[token]
provider = fernet
[fernet_tokens]
key_repository = $OS_STATE/keys/fernet
[fernet_receipts]
key_repository = $OS_STATE/keys/fernet
[credential]
key_repository = $OS_STATE/keys/credential
[identity]
# bcrypt cost: the default (12) makes every password or application
# credential check cost a quarter of a second of CPU; this is a test server.
password_hash_rounds = 4
[catalog]
driver = sql
[cache]
# One process, so an in-memory cache stays coherent; it saves most of the
# database work of validating tokens and checking roles.
enabled = true
backend = dogpile.cache.memory
EOF
neutron_conf
db_conf

keystone_manage() { keystone-manage --config-file "$OS_STATE/etc/keystone.conf" "$@"; }

# ---------------------------------------------------------------- databases
# Creates the Keystone database and keys in $OS_STATE, with the admin user,
# project and role, the region and the identity endpoints (fixtures.py sets
# their URLs again for the port in use). The init functions chain their
# commands with && because set -e does not apply to a function called on the
# left of ||.
init_keystone() {
	keystone_manage db_sync &&
		keystone_manage fernet_setup --keystone-user root --keystone-group root &&
		keystone_manage credential_setup --keystone-user root --keystone-group root &&
		keystone_manage bootstrap --bootstrap-password "$OS_ADMIN_PASSWORD" \
			--bootstrap-username admin --bootstrap-project-name admin --bootstrap-role-name admin \
			--bootstrap-service-name keystone --bootstrap-region-id RegionOne \
			--bootstrap-admin-url "$KS_URL/v3" --bootstrap-internal-url "$KS_URL/v3" \
			--bootstrap-public-url "$KS_URL/v3"
}

# Creates Neutron's schema in its database as production does: by its
# migrations.
init_neutron() { neutron-db-manage "${neutron_confs[@]}" upgrade heads; }

# init_db makes a new data directory and starts MariaDB on it, with a
# database and a user of its own for each of Keystone and Neutron; root
# connects through the socket as the system's root (unix_socket
# authentication), nobody without a password.
init_db() {
	mariadb-install-db "--defaults-file=$DB_CNF" --auth-root-authentication-method=socket --skip-test-db \
		>"$OS_STATE/log/mariadb-install.log" 2>&1 ||
		die "creating MariaDB's data directory failed: see $OS_STATE/log/mariadb-install.log"
	db_start
	db_sql <<EOF
CREATE DATABASE keystone;
CREATE DATABASE neutron;
CREATE USER 'keystone'@'localhost' IDENTIFIED BY '$OS_DB_KEYSTONE_PASSWORD';
CREATE USER 'neutron'@'localhost' IDENTIFIED BY '$OS_DB_NEUTRON_PASSWORD';
GRANT ALL PRIVILEGES ON keystone.* TO 'keystone'@'localhost';
GRANT ALL PRIVILEGES ON neutron.* TO 'neutron'@'localhost';
EOF
}

golden=$(golden_dir)
if [ -f "$golden/complete" ]; then
	cp -a "$golden/mysql" "$DB_DATA"
	cp -a "$golden/fernet/." "$OS_STATE/keys/fernet/"
	cp -a "$golden/credential/." "$OS_STATE/keys/credential/"
	say "databases copied from $golden"
	db_start
	say "MariaDB answers on $DB_SOCKET"
else
	say "initialising the databases (first start with these package versions)"
	init_db
	say "MariaDB answers on $DB_SOCKET; migrating Keystone's and Neutron's databases"
	init_keystone >"$OS_STATE/log/keystone-init.log" 2>&1 &
	ks_init=$!
	init_neutron >"$OS_STATE/log/neutron-init.log" 2>&1 ||
		die "Neutron database initialisation failed: see $OS_STATE/log/neutron-init.log"
	wait "$ks_init" || die "Keystone database initialisation failed: see $OS_STATE/log/keystone-init.log"
	# A clean shutdown leaves a data directory that a copy alone restores.
	stop mariadb
	# Built aside and renamed, so that a concurrent or interrupted run never
	# sees half a cache.
	tmp=$golden.tmp.$$
	rm -rf "$tmp"
	mkdir -p "$tmp"
	cp -a "$DB_DATA" "$tmp/mysql"
	cp -a "$OS_STATE/keys/fernet" "$OS_STATE/keys/credential" "$tmp/"
	dpkg-query -W -f='${Package} ${Version}\n' "${OS_VERSIONED_PACKAGES[@]}" >"$tmp/versions"
	touch "$tmp/complete"
	if ! mv -T "$tmp" "$golden" 2>/dev/null; then
		rm -rf "$tmp" # another run got there first
	fi
	# Copies made for other package versions will not be used again.
	for old in "$OS_GOLDEN_ROOT"/openstack-golden-*; do
		case "$old" in "$golden" | *.tmp.*) ;; *) rm -rf "$old" ;; esac
	done
	say "databases initialised and saved in $golden"
	db_start
fi

# ---------------------------------------------------------------- servers
# Each logs to standard output, into $OS_STATE/log/NAME.log (start).
say "starting Keystone and Neutron"
# One uwsgi process, so that the in-memory cache stays coherent (several
# would need memcached). 'Connection: close': uwsgi's plain HTTP socket does
# not do keep-alive properly, and clients reusing connections see resets.
# --no-orphans: a worker whose master died goes too.
start keystone env "OS_KEYSTONE_CONFIG_FILES=$OS_STATE/etc/keystone.conf" uwsgi --plugin python3 \
	--http-socket "127.0.0.1:$OS_KEYSTONE_PORT" --wsgi-file /usr/bin/keystone-wsgi-public \
	--master --processes 1 --threads 1 --die-on-term --no-orphans --need-app --buffer-size 65535 \
	--add-header 'Connection: close'
if with_agents; then
	agents_up
fi
start_neutron
wait_ready keystone Keystone 120 answers "$KS_URL/v3"
say "Keystone answers on $KS_URL/v3"
wait_ready neutron Neutron 120 answers "$NEUTRON_URL/"
say "Neutron answers on $NEUTRON_URL"

# ---------------------------------------------------------------- fixtures
if with_agents; then
	agent_start linuxbridge-agent
fi
"$PY" "$OS_DIR/fixtures.py" >"$OS_STATE/log/fixtures.log" 2>&1 ||
	die "creating the fixtures failed: see $OS_STATE/log/fixtures.log"
say "fixtures created: $OS_STATE/fixtures.json"
if with_agents; then
	agents_ready
	say "agents alive: linuxbridge and L3 on host $AGENTS_HOST"
fi

succeeded
summary
