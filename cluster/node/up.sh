#!/usr/bin/env bash
# Brings up the local stack's node, so that pods really run: containerd
# (Debian's runc, cgroupfs) and the kubelet in a network namespace of their
# own ($NETNS, see lib.sh), kube-proxy there (nftables mode, so ClusterIP
# Services route), kube-scheduler, and the CNI plugins: Multus thin in front
# of a bridge for the pod network, Debian's macvlan and static plugins for
# NetworkAttachmentDefinitions (parent interface eth1). The control plane
# (cluster/local/up.sh) must run; the node reaches it through
# cluster/node/apirelay, on the node's address. The sandbox ("pause") image
# is built here from cluster/node/pause with hack/imagebuild and pinned in
# containerd; images are never pulled (imagePullPolicy: Never, loaded with
# `ctr -n k8s.io images import`): the gateway image that `make images`
# builds ($GATEWAY_IMAGE) is imported here.
#
# This machine's quirks: cgroup v1 only (failCgroupV1: false), no
# CAP_SYS_RESOURCE (restrict_oom_score_adj), no dummy module (veth pairs),
# the kubelet refuses a loopback node IP and rewrites host sysctls: their
# values and which fixed host paths exist are recorded first and restored by
# cluster/node/down.sh. Needs root; installs runc and the CNI plugins when
# missing (the purpose node of hack/packages/host.txt).
# A second run while the node runs says so and changes nothing; a failed
# bring-up keeps its logs in $STATE.failed and stops what it started.
set -euo pipefail
# shellcheck source=cluster/node/lib.sh
source "$(dirname "$0")/lib.sh"

if running kubelet; then
	log "node already running (kubelet pid $(cat "$STATE/kubelet.pid"), log $STATE/kubelet.log)"
	exit 0
fi
running apiserver || die "the control plane is not running: run cluster/local/up.sh first"
[ "$(id -u)" = 0 ] || die "the node needs root (network namespace, containerd, kubelet)"
need_tools kubelet kube-proxy kube-scheduler containerd containerd-shim-runc-v2 ctr multus
"$ROOT/hack/apt-install.sh" --host node
for p in bridge host-local loopback macvlan static; do
	[ -x "$CNI_PLUGINS/$p" ] || die "no CNI plugin $p in $CNI_PLUGINS"
done
# Leftovers of a node that died without down.sh.
"$ROOT/cluster/node/down.sh" >/dev/null

t0=$(date +%s%N)
on_failure "$ROOT/cluster/node/down.sh" "node bring-up" "$STATE.failed" '*.log'

mkdir -p "$NODE_DIR"/{bin,cni/bin,cni/net.d,cni/ipam,cni/multus,containerd,kubelet,pod-logs,volume-plugins}
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
locked record

log "node: network namespace $NETNS ($NODE_IP)"
ip netns add "$NETNS"
"${IN_NODE[@]}" ip link set lo up
"${IN_NODE[@]}" ip link add node0 type veth peer name node0p
"${IN_NODE[@]}" ip link add "$MACVLAN_PARENT" type veth peer name "${MACVLAN_PARENT}p"
for l in node0 node0p "$MACVLAN_PARENT" "${MACVLAN_PARENT}p"; do "${IN_NODE[@]}" ip link set "$l" up; done
"${IN_NODE[@]}" ip addr add "$NODE_IP/24" dev node0
# The kubelet wants a default route; it leads nowhere outside $NETNS.
"${IN_NODE[@]}" ip route add default dev node0
"${IN_NODE[@]}" sysctl -qw net.ipv4.ip_forward=1
for c in /sys/fs/cgroup/*/; do
	[ -L "${c%/}" ] || mkdir -p "$c$CGROUP_ROOT"
done

log "node: building the sandbox image and the API relay"
(cd "$ROOT" && CGO_ENABLED=0 go build -trimpath -ldflags '-s -w' -o "$NODE_DIR/bin/" ./cluster/node/pause ./cluster/node/apirelay ./hack/imagebuild)
PAUSE_IMAGE=registry.local/pause:node
"$NODE_DIR/bin/imagebuild" -o "$NODE_DIR/pause.tar" -tag "$PAUSE_IMAGE" -entrypoint /pause \
	-file "$NODE_DIR/bin/pause:/pause:0755" >/dev/null
# The node's components reach the API through the relay with the stack's
# kubeconfig (127.0.0.1 in $NETNS), pods through the `kubernetes` Service
# (kube-proxy to $NODE_IP); the API server reaches the kubelet through the
# relay's proxy (cluster/local/up.sh points its egress to the cluster there).
start apirelay "$NODE_DIR/bin/apirelay" -netns "/run/netns/$NETNS" \
	-listen "0.0.0.0:$APISERVER_PORT" -connect "127.0.0.1:$APISERVER_PORT" -proxy "$EGRESS_SOCK"
wait_ready apirelay "the API relay" 10 "${IN_NODE[@]}" "$TOOLS_BIN/kubectl" get --raw /readyz

log "node: containerd"
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
# Multus thin: the pod network (a bridge, addresses from $POD_CIDR) and the
# networks a pod's k8s.v1.cni.cncf.io/networks annotation names.
cat >"$NODE_DIR/cni/net.d/00-multus.conf" <<JSON
{"cniVersion": "1.0.0", "name": "multus-$NODE_ID", "type": "multus",
 "kubeconfig": "$KUBECONFIG", "binDir": "$NODE_DIR/cni/bin", "cniDir": "$NODE_DIR/cni/multus",
 "confDir": "$NODE_DIR/cni/net.d", "logFile": "$STATE/multus.log", "logLevel": "error",
 "delegates": [{"cniVersion": "1.0.0", "name": "pods-$NODE_ID", "plugins": [
   {"type": "bridge", "bridge": "cni0", "isGateway": true, "ipMasq": false, "hairpinMode": true,
    "ipam": {"type": "host-local", "ranges": [[{"subnet": "$POD_CIDR"}]], "routes": [{"dst": "0.0.0.0/0"}],
             "dataDir": "$NODE_DIR/cni/ipam"}}]}]}
JSON
start containerd env "PATH=$TOOLS_BIN:$PATH" "${IN_NODE[@]}" "$TOOLS_BIN/containerd" --config "$NODE_DIR/containerd/config.toml"
wait_ready containerd containerd 30 ctr version
ctr images import "$NODE_DIR/pause.tar" >/dev/null
if [ -f "$GATEWAY_IMAGE" ]; then
	ctr images import "$GATEWAY_IMAGE" >/dev/null
	log "node: imported the gateway image $(basename "$GATEWAY_IMAGE")"
else
	log "node: no gateway image at $GATEWAY_IMAGE ('make images' builds it): gateway pods will not start"
fi

log "node: kubelet, kube-proxy and kube-scheduler"
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
# Images are imported, never pulled: never collect them.
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard: {memory.available: 100Mi, nodefs.available: 2%, imagefs.available: 2%}
YAML
start kubelet "${IN_NODE[@]}" "$TOOLS_BIN/kubelet" --config "$NODE_DIR/kubelet/config.yaml" \
	--kubeconfig "$KUBECONFIG" --root-dir "$NODE_DIR/kubelet" \
	--hostname-override "$NODE_NAME" --node-ip "$NODE_IP"
cat >"$NODE_DIR/kube-proxy.yaml" <<YAML
apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
mode: nftables
hostnameOverride: $NODE_NAME
clusterCIDR: $POD_CIDR
clientConnection: {kubeconfig: $KUBECONFIG}
metricsBindAddress: 127.0.0.1:10249
healthzBindAddress: 127.0.0.1:10256
# Leave the conntrack settings alone.
conntrack: {maxPerCore: 0, min: 0, tcpEstablishedTimeout: 0s, tcpCloseWaitTimeout: 0s}
YAML
start kube-proxy "${IN_NODE[@]}" "$TOOLS_BIN/kube-proxy" --config "$NODE_DIR/kube-proxy.yaml"
start scheduler "$TOOLS_BIN/kube-scheduler" --kubeconfig "$KUBECONFIG" --leader-elect=false --secure-port 0

node_ready() { [ "$(kubectl get node "$NODE_NAME" -o 'jsonpath={.status.conditions[?(@.type=="Ready")].status}')" = True ]; }
wait_for "node $NODE_NAME" 90 node_ready
# Ready, and the node lifecycle controller has lifted the not-ready taint.
untainted() { [ -z "$(kubectl get node "$NODE_NAME" -o jsonpath='{.spec.taints}')" ]; }
wait_for "node $NODE_NAME untainted" 60 untainted

succeeded
log "node $NODE_NAME ready in $(elapsed "$t0")s (network namespace $NETNS, address $NODE_IP)"
