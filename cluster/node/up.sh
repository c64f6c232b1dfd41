#!/usr/bin/env bash
# Brings up the local stack's $NODES nodes (default 1), so that pods really
# run: on each, containerd (Debian's runc, cgroupfs) and the kubelet in a
# network namespace of their own (see lib.sh), kube-proxy there (nftables
# mode, so ClusterIP Services route) and the CNI plugins: Multus thin in
# front of a bridge for the pod network, Debian's macvlan and static plugins
# for NetworkAttachmentDefinitions (parent interface eth1); and one
# kube-scheduler. The control plane (cluster/local/up.sh) must run; the
# nodes reach it through cluster/node/apirelay, in the hub at $API_IP, and
# the stack's registry the same way (a second relay, at $API_IP on
# REGISTRY_PORT): each containerd pulls from it under its host's name
# (127.0.0.1:REGISTRY_PORT, a hosts.toml leading to the relay, with the
# stack's CA), as a cluster pulls from its registry. The sandbox ("pause")
# image is built here from cluster/node/pause with hack/imagebuild, pushed
# and pinned in containerd; the gateway image that `make images` builds
# ($GATEWAY_IMAGE) is pushed here, as $GATEWAY_REF.
#
# This machine's quirks: cgroup v1 only (failCgroupV1: false), no
# CAP_SYS_RESOURCE (restrict_oom_score_adj), no dummy module (veth pairs),
# the kubelet refuses a loopback node IP and rewrites host sysctls: their
# values and which fixed host paths exist are recorded first and restored by
# cluster/node/down.sh. Needs root; installs runc and the CNI plugins when
# missing (the purpose node of hack/packages/host.txt).
# A second run while all $NODES nodes run says so and changes nothing (else
# it stops the nodes that run and brings all up); a failed bring-up keeps
# its logs in $STATE.failed and stops what it started.
set -euo pipefail
# shellcheck source=cluster/node/lib.sh
source "$(dirname "$0")/lib.sh"

all_running() { for ((i = 1; i <= NODES; i++)); do running "node$i-kubelet" || return 1; done; }
if all_running; then
	log "nodes already running: $NODES (kubelet logs $STATE/node*-kubelet.log)"
	exit 0
fi
running apiserver || die "the control plane is not running: run cluster/local/up.sh first"
[ "$(id -u)" = 0 ] || die "the node needs root (network namespace, containerd, kubelet)"
need_tools kubelet kube-proxy kube-scheduler containerd containerd-shim-runc-v2 ctr multus
"$ROOT/hack/apt-install.sh" --host node
for p in bridge host-local loopback macvlan static; do
	[ -x "$CNI_PLUGINS/$p" ] || die "no CNI plugin $p in $CNI_PLUGINS"
done
# Leftovers of nodes that died without down.sh, and nodes of another NODES.
"$ROOT/cluster/node/down.sh" >/dev/null

t0=$(date +%s%N)
on_failure "$ROOT/cluster/node/down.sh" "node bring-up" "$STATE.failed" '*.log'
mkdir -p "$NODES_DIR/bin"

log "nodes: hub network namespace $HUB (the API at $API_IP)"
ip netns add "$HUB"
"${IN_HUB[@]}" ip link set lo up
"${IN_HUB[@]}" ip link add nodes type bridge
"${IN_HUB[@]}" ip link set nodes up
"${IN_HUB[@]}" ip addr add "$API_IP/24" dev nodes
"${IN_HUB[@]}" sysctl -qw net.ipv4.ip_forward=1

log "nodes: building the sandbox image and the API relay"
(cd "$ROOT" && CGO_ENABLED=0 go build -trimpath -ldflags '-s -w' -o "$NODES_DIR/bin/" ./cluster/node/pause ./cluster/node/apirelay ./hack/imagebuild)
"$NODES_DIR/bin/imagebuild" -o "$NODES_DIR/pause.tar" -tag "$(registry)/pause:node" -entrypoint /pause \
	-file "$NODES_DIR/bin/pause:/pause:0755" >/dev/null
PAUSE_IMAGE=$(push_image "$NODES_DIR/pause.tar" pause:node)
if [ -f "$GATEWAY_IMAGE" ]; then
	t1=$(date +%s%N)
	ref=$(push_image "$GATEWAY_IMAGE" "$GATEWAY_REF")
	log "nodes: pushed the gateway image $ref ($(($(stat -c %s "$GATEWAY_IMAGE") / 1048576)) MiB) in $(elapsed "$t1")s"
else
	log "nodes: no gateway image at $GATEWAY_IMAGE ('make images' builds it): gateway pods will not start"
fi
# The nodes' components reach the API through the relay at $API_IP; pods
# through the `kubernetes` Service (kube-proxy to $API_IP); the API server
# reaches the kubelets through the relay's proxy (cluster/local/up.sh points
# its egress to the cluster there), which dials them from the hub.
sed "s|{server: \"https://127.0.0.1:|{tls-server-name: kubernetes, server: \"https://$API_IP:|" "$KUBECONFIG" >"$NODE_KUBECONFIG"
start apirelay "$NODES_DIR/bin/apirelay" -netns "/run/netns/$HUB" \
	-listen "0.0.0.0:$APISERVER_PORT" -connect "127.0.0.1:$APISERVER_PORT" -proxy "$EGRESS_SOCK"
wait_ready apirelay "the API relay" 10 "${IN_HUB[@]}" "$TOOLS_BIN/kubectl" --kubeconfig "$NODE_KUBECONFIG" get --raw /readyz
start registryrelay "$NODES_DIR/bin/apirelay" -netns "/run/netns/$HUB" \
	-listen "0.0.0.0:$REGISTRY_PORT" -connect "127.0.0.1:$REGISTRY_PORT"
wait_ready registryrelay "the registry relay" 10 "${IN_HUB[@]}" curl -fsS -o /dev/null -m 5 --cacert "$STATE/pki/ca.crt" "https://$API_IP:$REGISTRY_PORT/v2/"
start scheduler "$TOOLS_BIN/kube-scheduler" --kubeconfig "$KUBECONFIG" --leader-elect=false --secure-port 0

# record: the first node to run saves what the kubelet changes on the host.
record() {
	mkdir -p "$HOST_RECORD/nodes"
	if [ ! -f "$HOST_RECORD/sysctl" ]; then
		for k in $KUBELET_SYSCTLS; do echo "$k=$(sysctl -n "$k")"; done >"$HOST_RECORD/sysctl.tmp"
		for p in $HOST_PATHS; do [ -e "$p" ] || echo "$p"; done >"$HOST_RECORD/created"
		mv "$HOST_RECORD/sysctl.tmp" "$HOST_RECORD/sysctl"
	fi
	echo "$STATE" >"$HOST_RECORD/nodes/$NETNS"
}

# node_up N brings node N up, to its kubelet's start.
node_up() {
	select_node "$1"
	mkdir -p "$NODE_DIR"/{cni/bin,cni/net.d,cni/ipam,cni/multus,containerd,kubelet,pod-logs,volume-plugins}
	locked record
	log "$NODE_NAME: network namespace $NETNS ($NODE_IP)"
	ip netns add "$NETNS"
	"${IN_NODE[@]}" ip link set lo up
	"${IN_HUB[@]}" ip link add "$HUB_LINK" type veth peer name node0 netns "$NETNS"
	"${IN_HUB[@]}" ip link set "$HUB_LINK" master nodes up
	"${IN_HUB[@]}" ip route add "$POD_CIDR" via "$NODE_IP"
	"${IN_NODE[@]}" ip link add "$MACVLAN_PARENT" type veth peer name "$TENANT_LINK"
	for l in node0 "$MACVLAN_PARENT" "$TENANT_LINK"; do "${IN_NODE[@]}" ip link set "$l" up; done
	echo "$NETNS $TENANT_LINK" >"$NODE_DIR/tenant-link"
	"${IN_NODE[@]}" ip addr add "$NODE_IP/24" dev node0
	# The kubelet wants a default route: the hub, which leads to the API and
	# the other nodes' pods, nowhere else.
	"${IN_NODE[@]}" ip route add default via "$API_IP"
	"${IN_NODE[@]}" sysctl -qw net.ipv4.ip_forward=1
	for c in /sys/fs/cgroup/*/; do
		[ -L "${c%/}" ] || mkdir -p "$c$CGROUP_ROOT"
	done

	ln -sf "$CNI_PLUGINS"/* "$TOOLS_BIN/multus" "$NODE_DIR/cni/bin/"
	cat >"$NODE_DIR/containerd/config.toml" <<TOML
version = 3
root = "$NODE_DIR/containerd/root"
state = "$NODE_DIR/containerd/state"
[grpc]
  address = "$SOCK"
[ttrpc]
  address = "$SOCK.ttrpc"
[plugins.'io.containerd.internal.v1.opt']
  path = "$NODE_DIR/containerd/opt"
[plugins.'io.containerd.nri.v1.nri']
  disable = true
[plugins.'io.containerd.cri.v1.images']
  snapshotter = 'overlayfs'
  [plugins.'io.containerd.cri.v1.images'.pinned_images]
    sandbox = '$PAUSE_IMAGE'
  [plugins.'io.containerd.cri.v1.images'.registry]
    config_path = '$NODE_DIR/containerd/certs.d'
[plugins.'io.containerd.cri.v1.runtime']
  # No CAP_SYS_RESOURCE here: runc cannot lower oom_score_adj below its own.
  restrict_oom_score_adj = true
  # Pod network namespaces under the state directory, not /run/netns.
  netns_mounts_under_state_dir = true
  [plugins.'io.containerd.cri.v1.runtime'.containerd]
    default_runtime_name = 'runc'
    [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]
      runtime_type = 'io.containerd.runc.v2'
      [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
        BinaryName = '$(command -v runc)'
        Root = '$NODE_DIR/containerd/runc'
        SystemdCgroup = false
  [plugins.'io.containerd.cri.v1.runtime'.cni]
    bin_dirs = ['$NODE_DIR/cni/bin']
    conf_dir = '$NODE_DIR/cni/net.d'
    max_conf_num = 1
TOML
	# Multus thin: the pod network (a bridge, addresses from $POD_CIDR) and
	# the networks a pod's k8s.v1.cni.cncf.io/networks annotation names.
	cat >"$NODE_DIR/cni/net.d/00-multus.conf" <<JSON
{"cniVersion": "1.0.0", "name": "multus-$NODE_ID", "type": "multus",
 "kubeconfig": "$NODE_KUBECONFIG", "binDir": "$NODE_DIR/cni/bin", "cniDir": "$NODE_DIR/cni/multus",
 "confDir": "$NODE_DIR/cni/net.d", "logFile": "$STATE/${NODE_SV}multus.log", "logLevel": "error",
 "delegates": [{"cniVersion": "1.0.0", "name": "pods-$NODE_ID", "plugins": [
   {"type": "bridge", "bridge": "cni0", "isGateway": true, "ipMasq": false, "hairpinMode": true,
    "ipam": {"type": "host-local", "ranges": [[{"subnet": "$POD_CIDR"}]], "routes": [{"dst": "0.0.0.0/0"}],
             "dataDir": "$NODE_DIR/cni/ipam"}}]}]}
JSON
	# The registry, by its host's name, is the relay in the hub.
	mkdir -p "$NODE_DIR/containerd/certs.d/$(registry)"
	cat >"$NODE_DIR/containerd/certs.d/$(registry)/hosts.toml" <<TOML
server = "https://$API_IP:$REGISTRY_PORT"
ca = "$STATE/pki/ca.crt"
TOML
	start "${NODE_SV}containerd" env "PATH=$TOOLS_BIN:$PATH" "${IN_NODE[@]}" "$TOOLS_BIN/containerd" --config "$NODE_DIR/containerd/config.toml"
	wait_ready "${NODE_SV}containerd" "$NODE_NAME's containerd" 30 ctr version

	log "$NODE_NAME: kubelet and kube-proxy"
	cat >"$NODE_DIR/kubelet/config.yaml" <<YAML
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
failCgroupV1: false
cgroupDriver: cgroupfs
cgroupRoot: /$CGROUP_ROOT
containerRuntimeEndpoint: unix://$SOCK
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: false}
  x509: {clientCAFile: $STATE/pki/ca.crt}
authorization: {mode: AlwaysAllow}
failSwapOn: false
podLogsDir: $NODE_DIR/pod-logs
volumePluginDir: $NODE_DIR/volume-plugins
# Pulled images are never collected: the node's disk is the host's, and
# the registry is not there after the stack stops.
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard: {memory.available: 100Mi, nodefs.available: 2%, imagefs.available: 2%}
YAML
	# The node is an instance whose tenant interface the site makes a port
	# of (cluster/site/site.sh): its UUID is the port's device_id and, as
	# the OpenStack cloud provider sets it, the Node's spec.providerID.
	[ -s "$NODE_DIR/instance-id" ] || cat /proc/sys/kernel/random/uuid >"$NODE_DIR/instance-id"
	start "${NODE_SV}kubelet" "${IN_NODE[@]}" "$TOOLS_BIN/kubelet" --config "$NODE_DIR/kubelet/config.yaml" \
		--kubeconfig "$NODE_KUBECONFIG" --root-dir "$NODE_DIR/kubelet" \
		--hostname-override "$NODE_NAME" --node-ip "$NODE_IP" --provider-id "openstack:///$(cat "$NODE_DIR/instance-id")"
	cat >"$NODE_DIR/kube-proxy.yaml" <<YAML
apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
mode: nftables
hostnameOverride: $NODE_NAME
clusterCIDR: $CLUSTER_CIDR
clientConnection: {kubeconfig: $NODE_KUBECONFIG}
metricsBindAddress: 127.0.0.1:10249
healthzBindAddress: 127.0.0.1:10256
# Leave the conntrack settings alone.
conntrack: {maxPerCore: 0, min: 0, tcpEstablishedTimeout: 0s, tcpCloseWaitTimeout: 0s}
YAML
	start "${NODE_SV}kube-proxy" "${IN_NODE[@]}" "$TOOLS_BIN/kube-proxy" --config "$NODE_DIR/kube-proxy.yaml"
}
# The nodes come up side by side; a node that fails fails the bring-up.
pids=()
for ((i = 1; i <= NODES; i++)); do
	node_up "$i" &
	pids+=($!)
done
for p in "${pids[@]}"; do wait "$p" || die "a node did not start (see the messages above)"; done

# Ready, and the node lifecycle controller has lifted the not-ready taint.
ready() { [ "$(kubectl get node "$1" -o 'jsonpath={.status.conditions[?(@.type=="Ready")].status}')" = True ]; }
untainted() { [ -z "$(kubectl get node "$1" -o jsonpath='{.spec.taints}')" ]; }
for ((i = 1; i <= NODES; i++)); do
	select_node "$i"
	wait_ready "${NODE_SV}kubelet" "node $NODE_NAME" 90 ready "$NODE_NAME"
	wait_for "node $NODE_NAME untainted" 60 untainted "$NODE_NAME"
done

succeeded
log "$NODES node(s) ready in $(elapsed "$t0")s (network namespaces ipsec-node<N>-$STATE_ID, addresses from 10.99.0.2)"
