# shellcheck shell=bash
# Neutron's real L2 and L3 agents for the local Neutron (AGENTS=1 up.sh):
# RabbitMQ, the linuxbridge agent and the L3 agent, all confined to the
# network namespace $AGENTS_NS, so that their bridges, vxlan devices,
# iptables/ebtables rules and qrouter namespaces never touch the host's
# network. Sourced by up.sh and down.sh (after lib.sh), not run. up.sh
# writes the names below to $OS_STATE/agents.json once both agents are alive.
#
#   $AGENTS_NS      the agents' namespace: RabbitMQ on its 127.0.0.1:5672,
#                   the agents' bridges brq<net-id[:11]>, the VMs' taps,
#                   vtep (192.168.77.1, the vxlan tenant networks' local_ip)
#                   and ext0, the physical interface of the flat physical
#                   network "external" (ext-net)
#   $AGENTS_EXT_NS  the external network's wire: bridge "ext" with uplink,
#                   the peer of ext0; whatever stands for the outside
#                   (a test, the site) plugs a veth into "ext" and takes an
#                   address of ext-subnet (203.0.113.0/24) in its own namespace
#
# neutron-server stays on the host's loopback and reaches RabbitMQ through
# two socat processes joined by the unix socket $OS_STATE/amqp.sock: one
# listens on 127.0.0.1:$OS_AMQP_PORT on the host, one connects to the
# broker inside the namespace. The L3 agent's qrouter namespaces are
# mounted in its mount namespace (the one `ip netns exec` made for it), so
# the host sees only empty files /run/netns/qrouter-ID (down.sh removes
# them); they are reached with
# `nsenter -t $(cat $OS_STATE/l3-agent.pid) -m ip netns exec qrouter-ID ...`.

# agents_running succeeds while the broker, both socats and both agents run.
agents_running() {
	local n
	for n in "${AGENTS_PROCS[@]}"; do running "$n" || return 1; done
}

# agents_conf writes the agents' configuration files into $OS_STATE/etc.
agents_conf() {
	cat >"$OS_STATE/etc/agents.conf" <<EOF
[DEFAULT]
host = $AGENTS_HOST
transport_url = rabbit://guest:guest@127.0.0.1:5672/
state_path = $OS_STATE/agents
[agent]
root_helper = sudo
# Seconds between the agents' reports (30 by default): one that did not
# get through at the start is made again soon, and up.sh waits for both
# agents to be alive.
report_interval = 10
[oslo_concurrency]
lock_path = $OS_STATE/lock
EOF
	cat >"$OS_STATE/etc/linuxbridge_agent.ini" <<EOF
[linux_bridge]
physical_interface_mappings = external:ext0
[vxlan]
enable_vxlan = true
local_ip = $AGENTS_VTEP_IP
l2_population = false
[securitygroup]
enable_security_group = true
firewall_driver = iptables
[agent]
# ebtables: a port's frames must carry its MAC, its ARP its addresses.
prevent_arp_spoofing = true
EOF
	cat >"$OS_STATE/etc/l3_agent.ini" <<'EOF'
[DEFAULT]
interface_driver = linuxbridge
agent_mode = legacy
enable_metadata_proxy = false
EOF
	# RabbitMQ: no management plugin, the namespace's loopback only.
	printf 'listeners.tcp.1 = 127.0.0.1:5672\n' >"$OS_STATE/etc/rabbitmq.conf"
	echo '[].' >"$OS_STATE/etc/rabbitmq_plugins"
}

# agents_network makes the two namespaces and their links (see above).
agents_network() {
	local ns=$AGENTS_NS ext=$AGENTS_EXT_NS
	ip netns add "$ns"
	ip netns add "$ext"
	ip -n "$ns" link set lo up
	ip -n "$ext" link set lo up
	ip -n "$ns" link add vtep type veth peer name vtep-peer
	ip -n "$ns" addr add "$AGENTS_VTEP_IP/24" dev vtep
	ip -n "$ns" link set vtep up
	ip -n "$ns" link set vtep-peer up
	ip -n "$ext" link add ext type bridge
	ip -n "$ext" link set ext up
	ip -n "$ns" link add ext0 type veth peer name uplink netns "$ext"
	ip -n "$ext" link set uplink master ext up
	ip -n "$ns" link set ext0 up
}

# agents_broker starts RabbitMQ in the namespace, as the rabbitmq user,
# its files in $OS_STATE/rabbitmq.
agents_broker() {
	local r=$OS_STATE/rabbitmq
	mkdir -p "$r"/{mnesia,log}
	chown -R rabbitmq:rabbitmq "$r"
	start rabbitmq ip netns exec "$AGENTS_NS" env HOME="$r" RABBITMQ_MNESIA_BASE="$r/mnesia" \
		RABBITMQ_LOG_BASE="$r/log" RABBITMQ_CONFIG_FILE="$OS_STATE/etc/rabbitmq.conf" \
		RABBITMQ_ENABLED_PLUGINS_FILE="$OS_STATE/etc/rabbitmq_plugins" RABBITMQ_NODENAME=rabbit@localhost \
		ERL_EPMD_ADDRESS=127.0.0.1 \
		setpriv --reuid=rabbitmq --regid=rabbitmq --init-groups -- /usr/lib/rabbitmq/bin/rabbitmq-server
}

# agents_relay waits for the broker, then starts the socat pair to it and
# waits until its host side accepts connections.
agents_relay() {
	wait_ready rabbitmq RabbitMQ 60 ip netns exec "$AGENTS_NS" bash -c '(exec 3<>/dev/tcp/127.0.0.1/5672)'
	start amqp-ns ip netns exec "$AGENTS_NS" socat "UNIX-LISTEN:$OS_STATE/amqp.sock,fork,mode=600" TCP:127.0.0.1:5672
	wait_ready amqp-ns "the AMQP relay" 10 test -S "$OS_STATE/amqp.sock"
	start amqp-host socat "TCP-LISTEN:$OS_AMQP_PORT,bind=127.0.0.1,reuseaddr,fork" "UNIX-CONNECT:$OS_STATE/amqp.sock"
	wait_ready amqp-host "the AMQP relay on 127.0.0.1:$OS_AMQP_PORT" 10 listening "$OS_AMQP_PORT"
}

# agent_start NAME starts the agent NAME (linuxbridge-agent, l3-agent) in
# the namespace. The L3 agent is started once the L2 agent is alive: a
# router port bound to a host whose L2 agent Neutron does not know yet
# fails to bind for good (binding_failed), and nothing wires it.
agent_start() {
	local conf=(--config-file "$OS_STATE/etc/agents.conf")
	mkdir -p "$OS_STATE/agents"
	case $1 in
	linuxbridge-agent)
		# Its ebtables is ours (see cluster/openstack/ebtables): a copy of
		# /etc/alternatives, bound over it in the agent's mount namespace.
		cp -a /etc/alternatives "$OS_STATE/agents/alternatives"
		ln -sfn "$OS_DIR/ebtables" "$OS_STATE/agents/alternatives/ebtables"
		# shellcheck disable=SC2016 # expanded by that shell
		start "$1" ip netns exec "$AGENTS_NS" sh -c 'mount --bind "$0" /etc/alternatives && exec "$@"' \
			"$OS_STATE/agents/alternatives" neutron-linuxbridge-agent "${conf[@]}" \
			--config-file "$OS_STATE/etc/linuxbridge_agent.ini"
		;;
	l3-agent)
		start "$1" ip netns exec "$AGENTS_NS" neutron-l3-agent "${conf[@]}" --config-file "$OS_STATE/etc/l3_agent.ini"
		;;
	esac
}

# agent_alive TYPE succeeds when Neutron lists the agent of type TYPE
# ("Linux bridge agent", "L3 agent") of $AGENTS_HOST alive.
agent_alive() {
	AGENT_TYPE=$1 "$PY" - <<'PYEOF'
import os, sys
from keystoneauth1 import session
from keystoneauth1.identity import v3
auth = v3.Password(auth_url="http://127.0.0.1:%s/v3" % os.environ["OS_KEYSTONE_PORT"],
                   username="admin", password=os.environ["OS_ADMIN_PASSWORD"], project_name="admin",
                   user_domain_id="default", project_domain_id="default")
agents = session.Session(auth=auth).get(
    "http://127.0.0.1:%s/v2.0/agents" % os.environ["OS_NEUTRON_PORT"],
    params={"host": os.environ["AGENTS_HOST"], "agent_type": os.environ["AGENT_TYPE"]}).json()["agents"]
sys.exit(not any(a["alive"] for a in agents))
PYEOF
}

# agent_wait NAME TYPE waits until the agent NAME of type TYPE is alive,
# failing when it exits.
agent_wait() {
	local end=$((SECONDS + 120))
	export AGENTS_HOST OS_KEYSTONE_PORT OS_NEUTRON_PORT
	until agent_alive "$2" 2>/dev/null; do
		running "$1" || die "the $1 exited; see $OS_STATE/log/$1.log"
		[ "$SECONDS" -lt "$end" ] || die "the $1 is not alive after 120 s; see $OS_STATE/log/$1.log"
		sleep 0.5
	done
}

# agents_ready starts the L2 agent unless up.sh did (it starts it before
# the fixtures, which it then registers beside) and waits until it is
# alive, then does the same for the L3 agent.
agents_ready() {
	running linuxbridge-agent || agent_start linuxbridge-agent
	agent_wait linuxbridge-agent "Linux bridge agent"
	agent_start l3-agent
	agent_wait l3-agent "L3 agent"
	printf '{"host": "%s", "namespace": "%s", "external_namespace": "%s", "external_bridge": "ext", "l3_agent_pid": %s}\n' \
		"$AGENTS_HOST" "$AGENTS_NS" "$AGENTS_EXT_NS" "$(cat "$OS_STATE/l3-agent.pid")" >"$OS_STATE/agents.json"
}

# ns_busy NS succeeds while a process runs in the namespace NS.
ns_busy() { [ -n "$(ip netns pids "$1" 2>/dev/null)" ]; }

# agents_stop stops the agents, the relays and the broker, then whatever
# is left in the namespaces (epmd, which daemonizes), and deletes them.
agents_stop() {
	local ns p q routers=''
	# The L3 agent's routers: those mounted in its mount namespace while it
	# runs, and those its log names (if it died).
	if running l3-agent; then
		routers=$(nsenter -t "$(cat "$OS_STATE/l3-agent.pid")" -m -- findmnt -rn -o TARGET | grep '^/run/netns/qrouter-' || true)
	fi
	routers+=" $({ grep -o 'router update for [0-9a-f-]*' "$OS_STATE/log/l3-agent.log" 2>/dev/null || true; } | sed 's|.* |/run/netns/qrouter-|' | sort -u)"
	stop l3-agent linuxbridge-agent
	for q in $routers; do
		if [ -f "$q" ] && [ ! -s "$q" ] && ! mountpoint -q "$q"; then rm -f "$q"; fi
	done
	stop amqp-host amqp-ns rabbitmq
	for ns in "$AGENTS_NS" "$AGENTS_EXT_NS"; do
		[ -e "/run/netns/$ns" ] || continue
		for p in $(ip netns pids "$ns"); do kill -KILL "$p" 2>/dev/null || true; done
		awhile 20 ns_busy "$ns"
		ip netns delete "$ns"
	done
}
