#!/usr/bin/env bash
# Brings up the local control plane on loopback: etcd, kube-apiserver (RBAC,
# client-certificate auth, ServiceAccount tokens), kube-controller-manager
# (garbage collector and namespace controllers, which Crossplane relies on
# to delete composed resources, and those a node and its pods need),
# the stack's OCI registry (cluster/registry, TLS with a certificate from
# the stack's CA), Crossplane core out of cluster trusting that CA, and this
# project's packages (make xpkg) pushed to the registry and installed from
# it by Crossplane's package manager (cluster/local/packages.sh: the
# Configuration by tag, its provider and function by dependency
# resolution): the composition function (its process, the binary the
# package embeds, runs out of cluster with mTLS), the provider's CRDs, the
# IPsecGateway XRD and Composition (with ARGOCD=1 the packages are only
# pushed: Argo CD installs them from Git, cluster/local/dev.sh); with NODE=1
# (the default as root) then the nodes
# (cluster/node/up.sh, NODES of them). Writes $STATE/kubeconfig. A second run while the
# stack runs says so and changes nothing, but starts the node if it does not
# run.
set -euo pipefail
# shellcheck source=cluster/local/lib.sh
source "$(dirname "$0")/lib.sh"

if running apiserver; then
	log "local stack already running: export KUBECONFIG=$KUBECONFIG ('make cluster-down' stops it)"
	[ "$NODE" = 0 ] || "$ROOT/cluster/node/up.sh"
	exit 0
fi
need_tools etcd kube-apiserver kube-controller-manager kubectl crossplane crank
[ -x "$XPKG_DIR/image/function" ] || die "no $XPKG_DIR/image/function: run 'make xpkg'"
# Leftovers of a stack that died without cluster-down.
"$ROOT/cluster/local/down.sh" >/dev/null
choose_ports "$STATE/ports" $((16#$STATE_ID % 100)) 100 10 "${LOCAL_PORTS[@]}"

t0=$(date +%s%N)
mkdir -p "$STATE/pki"
# A failed bring-up keeps its logs and stops what it started, so that no
# half-started stack is left to be mistaken for a running one.
on_failure "$ROOT/cluster/local/down.sh" bring-up "$STATE.failed" '*.log'
"$ROOT/cluster/local/pki.sh" "$STATE/pki" "$API_IP"

log "starting the registry on $(registry)"
mkdir -p "$STATE/bin"
(cd "$ROOT" && CGO_ENABLED=0 go build -trimpath -ldflags '-s -w' -o "$STATE/bin/registry" ./cluster/registry)
start registry "$STATE/bin/registry" -listen "$(registry)" -cert "$STATE/pki/registry.crt" \
	-key "$STATE/pki/registry.key" -dir "$STATE/registry"
wait_ready registry registry 10 curl -fsS -o /dev/null -m 5 --cacert "$STATE/pki/ca.crt" "https://$(registry)/v2/"

log "starting etcd and kube-apiserver"
egress=()
if [ "$NODE" = 1 ]; then
	cat >"$STATE/egress.yaml" <<YAML
apiVersion: apiserver.k8s.io/v1beta1
kind: EgressSelectorConfiguration
egressSelections:
- name: cluster
  connection: {proxyProtocol: HTTPConnect, transport: {uds: {udsName: "$EGRESS_SOCK"}}}
YAML
	egress=(--egress-selector-config-file "$STATE/egress.yaml")
fi
start etcd "$TOOLS_BIN/etcd" --data-dir "$STATE/etcd" --unsafe-no-fsync \
	--listen-client-urls "http://127.0.0.1:$ETCD_PORT" --advertise-client-urls "http://127.0.0.1:$ETCD_PORT" \
	--listen-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" --initial-advertise-peer-urls "http://127.0.0.1:$ETCD_PEER_PORT" \
	--initial-cluster "default=http://127.0.0.1:$ETCD_PEER_PORT" --listen-metrics-urls ""
start apiserver "$TOOLS_BIN/kube-apiserver" --etcd-servers "http://127.0.0.1:$ETCD_PORT" \
	--bind-address 127.0.0.1 --advertise-address "$API_IP" --secure-port "$APISERVER_PORT" \
	--tls-cert-file "$STATE/pki/apiserver.crt" --tls-private-key-file "$STATE/pki/apiserver.key" \
	--client-ca-file "$STATE/pki/ca.crt" --authorization-mode RBAC --allow-privileged \
	--service-account-issuer https://kubernetes.default.svc --service-account-key-file "$STATE/pki/sa.pub" \
	--service-account-signing-key-file "$STATE/pki/sa.key" --service-cluster-ip-range 10.96.0.0/24 \
	--kubelet-client-certificate "$STATE/pki/admin.crt" --kubelet-client-key "$STATE/pki/admin.key" \
	--kubelet-preferred-address-types InternalIP "${egress[@]}"
cat >"$KUBECONFIG" <<KC
apiVersion: v1
kind: Config
clusters: [{name: local, cluster: {server: "https://127.0.0.1:$APISERVER_PORT", certificate-authority: "$STATE/pki/ca.crt"}}]
users: [{name: admin, user: {client-certificate: "$STATE/pki/admin.crt", client-key: "$STATE/pki/admin.key"}}]
contexts: [{name: local, context: {cluster: local, user: admin}}]
current-context: local
KC
wait_ready apiserver kube-apiserver 60 kubectl get --raw /readyz

start kcm "$TOOLS_BIN/kube-controller-manager" --kubeconfig "$KUBECONFIG" \
	--controllers garbagecollector,namespace,nodelifecycle,deployment,replicaset,endpointslice,serviceaccount,root-ca-cert-publisher \
	--root-ca-file "$STATE/pki/ca.crt" --leader-elect=false --secure-port 0

log "starting Crossplane core"
kubectl create namespace "$XP_NAMESPACE" >/dev/null
xpinit() {
	POD_NAMESPACE=$XP_NAMESPACE ENABLE_WEBHOOKS=false CRDS_PATH=$(readlink -f "$TOOLS_BIN/crossplane-crds") \
		TLS_CA_SECRET_NAME=crossplane-root-ca TLS_CLIENT_SECRET_NAME=crossplane-tls-client \
		"$TOOLS_BIN/crossplane" core init >"$STATE/crossplane-init.log" 2>&1
}
# init can race the discovery of the CRDs it has just created: wait for them
# and try again (the wait itself can fail while init still changes them).
for i in 1 2 3 4 5; do
	xpinit && break
	[ "$i" = 5 ] && die "crossplane core init failed: see $STATE/crossplane-init.log"
	kubectl wait --for condition=Established --timeout 30s crd --all >/dev/null 2>&1 || true
	sleep 1
done
mkdir -p "$STATE/xp/client" "$STATE/xp/fn" "$STATE/xp/xpkg-cache" "$STATE/xp/xfn-cache"
for k in ca.crt tls.crt tls.key; do
	kubectl -n "$XP_NAMESPACE" get secret crossplane-tls-client -o "jsonpath={.data.${k//./\\.}}" | base64 -d >"$STATE/xp/client/$k"
done
# The XR circuit breaker gets a burst of 200 watch events instead of 100.
# It counts every update of an XR and of each resource composed for it
# twice (controller-runtime maps an update's old and new object), and an
# IPsecGateway's normal life costs, measured: about 90 at creation (the
# XR's ~22 updates, its 4 managed resources' ~24: finalizer, create
# annotations, conditions, observation) and 15-30 per runbook step (a
# label edit reaches all 4); nothing while nothing changes. With 100 a
# cutover, rollback and cutover in a claim's first two minutes open it,
# and for 5 minutes a change reaches the claim only at a probe every 30 s
# (the runbook e2e saw 61 s for a 10 s cutover). A loop still opens it
# within seconds; the refill (1/s) and cooldown are Crossplane's.
# Packages come from the registry, whose certificate the stack's CA signs
# (CA_BUNDLE_PATH). A Configuration whose new version raises its
# dependencies' constraints upgrades them (an alpha feature of core v2.4;
# without it, the package manager refuses the new constraint).
start crossplane env POD_NAMESPACE=$XP_NAMESPACE POD_SERVICE_ACCOUNT=crossplane ENABLE_WEBHOOKS=false \
	TLS_CLIENT_CERTS_DIR="$STATE/xp/client" PACKAGE_RUNTIME=External CA_BUNDLE_PATH="$STATE/pki/ca.crt" \
	XPKG_CACHE_DIR="$STATE/xp/xpkg-cache" XFN_CACHE_DIR="$STATE/xp/xfn-cache" \
	"$TOOLS_BIN/crossplane" core start --metrics-port "$XP_METRICS_PORT" --health-probe-port "$XP_HEALTH_PORT" --poll-interval 10s \
	--circuit-breaker-burst 200 --enable-dependency-version-upgrades

log "starting the composition function"
"$ROOT/cluster/local/function-cert.sh" "$STATE/xp/fn"
# The binary the function package embeds (hack/images.sh function).
start function "$XPKG_DIR/image/function" --address "127.0.0.1:$FN_PORT" --tls-certs-dir "$STATE/xp/fn"

log "installing the NetworkAttachmentDefinition CRD"
kubectl apply --server-side -f "$ROOT/cluster/crds" >/dev/null
kubectl wait --for condition=Established --timeout 60s -f "$ROOT/cluster/crds" >/dev/null

if [ "${ARGOCD:-0}" = 1 ]; then
	log "pushing the packages to the registry (Argo CD installs them from Git)"
	"$ROOT/cluster/local/packages.sh" publish
else
	log "pushing the packages to the registry and installing the Configuration from it"
	"$ROOT/cluster/local/packages.sh"
	kubectl wait --for condition=Established --timeout 60s xrd/xipsecgateways.vpn.ipsecgw.io >/dev/null
	kubectl wait --for condition=Offered --timeout 60s xrd/xipsecgateways.vpn.ipsecgw.io >/dev/null
fi
[ "$NODE" = 0 ] || "$ROOT/cluster/node/up.sh"

succeeded
log "local stack up in $(elapsed "$t0")s: export KUBECONFIG=$KUBECONFIG"
