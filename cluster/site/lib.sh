# shellcheck shell=bash disable=SC2034 # the variables are used by the scripts that source this
# Settings and helpers of the local stack's "site" (cluster/site/up.sh,
# down.sh, site.sh), on top of the local stack's (cluster/local/lib.sh).
# Sourced, not run.
#
# The site is the world around the node that the migration runbook happens
# in, each piece in a network namespace named after $STATE (so that two
# stacks on one machine have two sites); every address exists only inside
# those namespaces:
#
#   client host ─── client site ─────── router R ─────────── tenant network 10.20.0.0/24 (a bridge in R)
#   192.168.10.5    192.168.10.1 (lan)   198.51.100.1         10.20.0.1   R, the tenant subnet's gateway
#                   198.51.100.7 (wan)   floating IPs         10.20.0.5   the VM gateway (charon)
#                   charon               203.0.113.x 1:1      10.20.0.50  the tenant service (echo, 443)
#                                        to fixed IPs         10.20.0.10  the gateway pod's net1 (macvlan on the
#                                                                         node's eth1, whose peer eth1p joins the
#                                                                         bridge), or site.sh standin-up's stand-in
#
# cluster/site/fipnat (in the host's namespace, where the Neutron API
# listens on loopback) reads the floating IPs of the local Neutron
# ($OS_STATE, cluster/openstack/up.sh) and keeps R's NAT: each associated
# one 1:1 to its fixed IP, as Neutron's L3 agent would. Files live in
# $SITE_DIR, pid and log files beside the stack's in $STATE (site-*.pid,
# site-*.log).
# The nodes' settings, on top of the local stack's.
# shellcheck source=cluster/node/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../node/lib.sh"

SITE_DIR=$STATE/site
# Namespaces: ipsec-site-<id>-<role>. Roles: router (R), client (the
# client site's gateway), host (a client host), vm (the old VM gateway),
# svc (the tenant service) and gw (a stand-in for the gateway pod, only
# when a test asks for it: site.sh standin-up).
NS_PREFIX=ipsec-site-$STATE_ID-
SITE_ROLES="router client host vm svc gw"
ns() { echo "$NS_PREFIX$1"; }

# Addresses. The tenant network and the floating IPs are the local
# Neutron's (cluster/openstack/fixtures.py); the VM's is the fixed IP of
# the port runbook.py vm-up makes.
ROUTER_IP=10.20.0.1
VM_IP=10.20.0.5
GATEWAY_IP=10.20.0.10
SERVICE_IP=10.20.0.50
FLOATING_IP=203.0.113.10
EXTERNAL_ROUTER_IP=198.51.100.1
CLIENT_IP=198.51.100.7
CLIENT_SUBNET=192.168.10.0/24
CLIENT_LAN_IP=192.168.10.1
HOST_IP=192.168.10.5
# The tenant side of the tunnel (the claim's local traffic selector) and
# the address a client host reaches the tenant service at (the claim's
# exposure, examples/claim/pinned-fip.yaml).
INSIDE_CIDR=100.64.0.0/24
INSIDE_SERVICE=100.64.0.10
# A gateway's own address inside INSIDE_CIDR: kernel-libipsec routes a
# CHILD_SA's traffic only when charon has an address inside its local
# traffic selector.
INSIDE_OWN=100.64.0.1
SERVICE_PORT=443
# R's interfaces: the tenant network's bridge and the external link.
TENANT_BRIDGE=tenant
EXTERNAL_IF=external
# The connection's name on both ends.
CONN=branch-a
# The PSK both ends share: the example claim's (examples/claim/psk.yaml),
# written to $SITE_DIR/psk.
PSK_SOURCE=$ROOT/examples/claim/psk.yaml

CHARON=/usr/lib/ipsec/charon
SWANCTL=/usr/sbin/swanctl

# nspath ROLE is the path of the role's namespace.
nspath() { echo "/run/netns/$NS_PREFIX$1"; }

# in_ns ROLE CMD... runs CMD in the role's namespace (nsenter, which keeps
# the host's /sys, unlike ip netns exec).
in_ns() {
	local role=$1
	shift
	nsenter "--net=$(nspath "$role")" -- "$@"
}

# ns_exists ROLE succeeds when the role's namespace exists.
ns_exists() { [ -e "$(nspath "$1")" ]; }

# swanctl_of ROLE ARGS... runs swanctl against the role's charon.
swanctl_of() {
	local role=$1
	shift
	STRONGSWAN_CONF=$SITE_DIR/$role/etc/strongswan.conf "$SWANCTL" "$@" --uri "unix://$SITE_DIR/$role/charon.vici"
}

# Plugins of every charon of the site, kernel-libipsec before
# kernel-netlink so that it provides the IPsec backend (test/tunnel's).
PLUGINS="random nonce openssl pem pkcs1 x509 pubkey revocation constraints kdf hmac sha1 sha2 md5 aes gcm gmp xcbc kernel-libipsec kernel-netlink socket-default vici"

# strongswan_conf ROLE writes the role's strongswan.conf: its VICI socket
# in $SITE_DIR/ROLE, its log on standard error (site-ROLE.log), and an
# unanswered IKE request given up after about 3 s (retransmission 1 s, 2
# tries) so that dead peers show within seconds.
strongswan_conf() {
	local dir=$SITE_DIR/$1 d
	# swanctl --load-all reports every missing credential directory beside
	# swanctl.conf as failed.
	for d in x509 x509ca x509ocsp x509aa x509ac x509crl pubkey private rsa ecdsa bliss pkcs8 pkcs12; do
		mkdir -p "$dir/etc/swanctl/$d"
	done
	cat >"$dir/etc/strongswan.conf" <<CONF
charon {
  load_modular = no
  load = $PLUGINS
  retransmit_timeout = 1.0
  retransmit_base = 1.0
  retransmit_tries = 2
  plugins {
    vici {
      socket = unix://$dir/charon.vici
    }
  }
  filelog {
    stderr {
      time_format = %F %T
      time_add_ms = yes
      ike_name = yes
      flush_line = yes
      default = 1
      ike = 2
    }
  }
  syslog {
    daemon {
      default = -1
    }
  }
}
swanctl {
  load = random pem pkcs1 x509 pubkey openssl
  socket = unix://$dir/charon.vici
}
CONF
}

# gateway_conf ROLE ADDRESS writes the configuration of a gateway built by
# hand as the runbook's VM was, at ADDRESS on the tenant network: its
# strongswan.conf, a swanctl.conf responding to the client site as the
# floating IP's identity (traffic selectors 100.64.0.0/24 <-> the client's
# subnet, the site's PSK) and nftables rules publishing the tenant service
# to the client as the example claim's exposure does (inside
# 100.64.0.10:443/tcp -> 10.20.0.50:443, source NAT to ADDRESS).
gateway_conf() {
	local role=$1 addr=$2 dir=$SITE_DIR/$1/etc
	strongswan_conf "$role"
	cat >"$dir/swanctl/swanctl.conf" <<CONF
connections {
  $CONN {
    version = 2
    local_addrs = $addr
    remote_addrs = $CLIENT_IP
    proposals = aes256-sha256-modp2048
    dpd_delay = 30s
    encap = yes
    local {
      auth = psk
      id = $FLOATING_IP
    }
    remote {
      auth = psk
      id = $CLIENT_IP
    }
    children {
      $CONN {
        local_ts = $INSIDE_CIDR
        remote_ts = $CLIENT_SUBNET
        esp_proposals = aes256gcm16
        dpd_action = clear
      }
    }
  }
}
secrets {
  ike-$CONN {
    id-local = $FLOATING_IP
    id-remote = $CLIENT_IP
    secret = "$(cat "$SITE_DIR/psk")"
  }
}
CONF
	chmod 600 "$dir/swanctl/swanctl.conf"
	cat >"$dir/nat.nft" <<NFT
table ip exposure {
}
delete table ip exposure
table ip exposure {
	chain prerouting {
		type nat hook prerouting priority dstnat; policy accept;
		ip saddr $CLIENT_SUBNET ip daddr $INSIDE_SERVICE tcp dport $SERVICE_PORT dnat to $SERVICE_IP:$SERVICE_PORT
	}
	chain postrouting {
		type nat hook postrouting priority srcnat; policy accept;
		ct status dnat ip daddr $SERVICE_IP tcp dport $SERVICE_PORT snat to $addr
	}
}
NFT
}

# charon_start ROLE starts the role's charon (pid site-ROLE.pid, log
# site-ROLE.log) with $SITE_DIR/ROLE/etc/strongswan.conf, waits for its
# VICI socket and loads $SITE_DIR/ROLE/etc/swanctl/swanctl.conf. charon
# writes its pid file to the fixed path /run/charon.pid: each gets a
# private /run in a mount namespace of its own (unshare and sh exec, so the
# recorded pid is charon's).
charon_start() {
	local role=$1 dir=$SITE_DIR/$1 out
	rm -f "$dir/charon.vici"
	# shellcheck disable=SC2016 # $0 is sh's, charon's path
	start "site-$role" env "STRONGSWAN_CONF=$dir/etc/strongswan.conf" \
		nsenter "--net=$(nspath "$role")" -- unshare --mount --propagation private -- \
		sh -c 'mount -t tmpfs -o mode=0755 tmpfs /run && exec "$0"' "$CHARON"
	wait_ready "site-$role" "charon of $role" 10 swanctl_of "$role" --stats
	# swanctl's exit code is not to be trusted (a syntax error exits 0).
	out=$(swanctl_of "$role" --load-all --noprompt --file "$dir/etc/swanctl/swanctl.conf" 2>&1) || die "swanctl --load-all for $role: $out"
	case $out in *failed* | *error*) die "swanctl --load-all for $role: $out" ;; esac
}
