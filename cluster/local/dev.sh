#!/usr/bin/env bash
# The main job on the bundled local stack (`make dev`): the control plane
# with Crossplane, the function and the IPsecGateway XRD and Composition
# (up.sh), the real Keystone + Neutron with Neutron's real L2 and L3 agents
# (AGENTS=1 cluster/openstack/up.sh), the provider (provider.sh); then the
# migration runbook's starting point — a "VM gateway" port holding floating
# IP 203.0.113.10 — and, with the node (as root), the site around it
# (cluster/site/site.sh up): the VM gateway's charon, the client site whose
# tunnel is up with it through the L3 agent's qrouter, the node's tenant
# interface a port with the L2 agent's port security.
# Then the pinned-FIP example, applied with the local Neutron's IDs: the
# runbook's pre-stage. That is the namespaced IPsecGateway
# (examples/xr/pinned-fip.yaml, vpn.m.ipsecgw.io, with tenant-a's own
# ProviderConfig, examples/namespaced/providerconfig.yaml); CLAIM=1 applies
# the legacy claim instead (examples/claim/pinned-fip.yaml, vpn.ipsecgw.io,
# with the cluster-scoped ProviderConfig). "The claim" below is either.
# With ARGOCD=1 (which needs CLAIM=1) a real Argo CD installs the packages
# from the stack's registry and applies the ProviderConfig and the legacy
# claim, from a Git repository made from examples/gitops/
# (cluster/local/argocd.sh): up.sh only pushes the packages, the stack
# writes only the Secrets (as a secret manager would) and plays the External
# runtime for the packages Argo CD installs (packages.sh runtime), then
# starts the provider.
#
#   [CLAIM=1] [ARGOCD=1] cluster/local/dev.sh [prestage|cutover]
#
# prestage (the default) leaves the claim pre-staged; cutover goes on with
# the runbook's cutover — the floating IP off the VM's port, the VM's
# charon stopped — and waits until the claim is Ready with its tunnel up
# (`make dev`; without the node it stops at the pre-stage). Prints what a
# user looks at and the next commands (cutover or rollback). Running it
# again leaves what runs as it is and starts the runbook over: the
# floating IP back on the VM's port, the VM's charon running, the claim
# re-applied (and cut over again); an IPsecGateway of the other style
# that pins the same address must be deleted first.
set -euo pipefail
# shellcheck source=cluster/local/lib.sh
source "$(dirname "$0")/lib.sh"
RUNBOOK=$ROOT/cluster/openstack/runbook.py
SITE=$ROOT/cluster/site/site.sh
STOP_AT=${1:-prestage}
CLAIM=${CLAIM:-0}
case $CLAIM in
0) XR=ipsecgateways.vpn.m.ipsecgw.io GW="-n tenant-a gateways.gateway.m.ipsecgw.io" examples=xr ;;
1) XR=ipsecgateways.vpn.ipsecgw.io GW=gateways.gateway.ipsecgw.io examples=claim ;;
*) die "CLAIM=$CLAIM: 0 (the namespaced IPsecGateway, the default) or 1 (the legacy claim)" ;;
esac
ARGOCD=${ARGOCD:-0}
[ "$ARGOCD" = 0 ] || [ "$CLAIM" = 1 ] || die "ARGOCD=1 syncs examples/gitops, whose tenant has the legacy claim: CLAIM=1"
case $STOP_AT in prestage | cutover) ;; *) die "usage: $0 [prestage|cutover]" ;; esac
if [ "$STOP_AT" = cutover ] && [ "$NODE" = 0 ]; then
	log "no node (NODE=0): stopping at the pre-stage, no gateway pod could run"
	STOP_AT=prestage
fi

"$ROOT/cluster/local/up.sh"
AGENTS=1 "$ROOT/cluster/openstack/up.sh" | grep -v '^  ' || die "the local Keystone + Neutron did not start (cluster/openstack/up.sh)"
read_ports "$OS_STATE/ports" OS_KEYSTONE_PORT
# With ARGOCD=1 the provider's CRDs come with the package Argo CD installs:
# the provider starts after that (below).
[ "$ARGOCD" = 1 ] || "$ROOT/cluster/local/provider.sh" >/dev/null

log "applying the example ProviderConfig's Secret (credentials of the local tenant-a)"
sed "s|127.0.0.1:5000/|127.0.0.1:$OS_KEYSTONE_PORT/|" "$ROOT/examples/providerconfig/secret.yaml" | kubectl apply -f - >/dev/null
if [ "$ARGOCD" = 0 ]; then
	log "applying the example ProviderConfig"
	kubectl apply -f "$ROOT/examples/providerconfig/providerconfig.yaml" >/dev/null
	# The namespaced IPsecGateway's: tenant-a's own, its Secret in tenant-a.
	sed "s|127.0.0.1:5000/|127.0.0.1:$OS_KEYSTONE_PORT/|" "$ROOT/examples/namespaced/providerconfig.yaml" | kubectl apply -f - >/dev/null
fi

log "the runbook's VM gateway: port vm-gateway holds floating IP 203.0.113.10"
"$RUNBOOK" vm-up >"$STATE/runbook.json"
field() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' "$STATE/runbook.json" "$1"; }
vm_port=$(field vm_port_id)
# A run after a cutover starts the runbook over: vm-up moved the floating
# IP back to the VM's port (the rollback), its charon answers again.
rolled_back=$(field moved_from_port_id)
[ "$rolled_back" = None ] || log "a run after a cutover: 203.0.113.10 moved back from port $rolled_back to the VM's (the rollback)"
if [ "$NODE" = 1 ]; then
	"$SITE" up
	"$SITE" vm-start >/dev/null
fi

log "applying the pinned-FIP claim (examples/$examples/pinned-fip.yaml with the local IDs)"
node_ports=0
if kubectl get nodes -o 'jsonpath={.items[*].spec.providerID}' | grep -q 'openstack://'; then
	node_ports=1
else
	log "no Node is an OpenStack instance: the claims take nodePorts: Unmanaged (no address pairs on node ports)"
fi
mkdir -p "$STATE/claims"
# The claims with the local Neutron's IDs: the examples', and the pinned
# claim of examples/gitops for Argo CD's repository (gitops-branch-office).
for f in pinned-fip allocated-fip gitops-branch-office; do
	src=$ROOT/examples/$examples/$f.yaml
	[ "$f" != gitops-branch-office ] || src=$ROOT/examples/gitops/tenants/tenant-a/branch-office.yaml
	sed -e "s/00000000-0000-4000-8000-00000000aaaa/$(field network_id)/" \
		-e "s/00000000-0000-4000-8000-00000000bbbb/$(field subnet_id)/" \
		-e "s/00000000-0000-4000-8000-00000000cccc/$(field ext_net_id)/" \
		"$src" >"$STATE/claims/$f.yaml"
	# This machine's kernel has no ESP: the node's gateway pods run
	# strongSwan's userspace data plane.
	[ "$NODE" = 0 ] || sed -i 's/^spec:$/spec:\n  dataPlane: Libipsec/' "$STATE/claims/$f.yaml"
	# Nodes that are not OpenStack instances (no openstack:// providerID:
	# their tenant interfaces are no Neutron ports, nothing drops the
	# gateway's frames) have no port to hold the gateway's address pairs,
	# and the claim would wait for them for ever: nodePorts Unmanaged.
	[ "$node_ports" = 1 ] || sed -i 's/^spec:$/spec:\n  nodePorts: Unmanaged/' "$STATE/claims/$f.yaml"
done
if [ "$NODE" = 1 ]; then
	# The tenant's application in the cluster, published to the client
	# site by the pinned claim as 100.64.0.11:443 (an exposure of its
	# Service), beside the VM-era intranet server.
	"$ROOT/cluster/local/tenant-app.sh"
	sed -i 's/^  exposures:$/  exposures:\n  - name: app\n    insideAddress: 100.64.0.11\n    port: 443\n    target: {serviceName: tenant-app, port: 443}/' \
		"$STATE/claims/pinned-fip.yaml" "$STATE/claims/gitops-branch-office.yaml"
fi
kubectl apply -f "$ROOT/examples/claim/psk.yaml" >/dev/null
if [ "$ARGOCD" = 0 ]; then
	kubectl apply -f "$STATE/claims/pinned-fip.yaml" >/dev/null
else
	"$ROOT/cluster/local/argocd.sh" up "$STATE/claims/gitops-branch-office.yaml"
	log "Argo CD installs the packages from Git; Crossplane resolves the Configuration's dependencies"
	"$ROOT/cluster/local/packages.sh" runtime
	"$ROOT/cluster/local/provider.sh" >/dev/null
	log "waiting for Argo CD to sync the ProviderConfig and the claim from Git"
	wait_for "the claim from Git (cluster/local/argocd.sh status ipsecgw-tenant-a)" 300 \
		kubectl -n tenant-a get "$XR" branch-office
fi

log "waiting for the pre-stage: security group and port ready, configuration rendered, floating IP still on the VM"
claim_is() { [ "$(kubectl -n tenant-a get "$XR" branch-office -o "jsonpath=$1")" = "$2" ]; }
claim_has() { ! claim_is "$1" ""; }
# 300 s, not less: with Argo CD (ARGOCD=1) the claim can arrive before the
# platform's ProviderConfig, after the installs from the registry; once,
# under load, the port came past 120 s (its managed resources now retry a
# missing ProviderConfig within 10 s: docs/gitops.md).
wait_for "the claim's port" 300 claim_has '{.status.port.privateIP}'
wait_for "the claim's gateway configuration" 120 claim_has '{.status.gateway.configHash}'

gw=$(kubectl -n tenant-a get "$XR" branch-office -o jsonpath='{.status.gateway.name}')
if [ "$rolled_back" != None ]; then
	# The pre-stage again, as after any rollback: the binding sees the
	# address on the VM's port, the gateway's Deployment goes to 0.
	no_gateway_pod() { [ -z "$(kubectl -n tenant-a get pods -l "gateway.ipsecgw.io/name=$gw" -o name)" ]; }
	wait_for "the claim's floating IP seen on the VM's port" 120 claim_is '{.status.floatingIP.attached}' false
	wait_for "the gateway pod gone" 120 no_gateway_pod
fi

# With Neutron's real agents the node's port drops the gateway pod's
# frames (its net1 has the gateway port's MAC and fixed IP) unless they are
# an allowed address pair of the node's port. The claim's NodeAddressPairs
# keeps it; HAND_PAIRS=1 grants it by hand as well, as a cluster's operator
# would (for a claim with nodePorts: Unmanaged).
if [ "${HAND_PAIRS:-0}" = 1 ] && [ "$NODE" = 1 ]; then
	log "by hand: the gateway's fixed IP and MAC as an allowed address pair of the nodes' ports (HAND_PAIRS=1)"
	"$RUNBOOK" node-pairs "$(kubectl -n tenant-a get "$XR" branch-office -o jsonpath='{.status.port.id}')"
fi

if [ "$STOP_AT" = cutover ]; then
	if [ "$rolled_back" != None ]; then
		# docs/runbook.md: cutting over again after a rollback, leave 30 s
		# after the gateway pod is gone (the qrouter's conntrack).
		log "waiting 30 s after the gateway pod went before cutting over again (docs/runbook.md)"
		sleep 30
	fi
	log "cutover: floating IP 203.0.113.10 off the VM's port, the VM's charon stopped, the claim nudged"
	"$RUNBOOK" unset 203.0.113.10 >/dev/null
	"$SITE" vm-stop >/dev/null
	kubectl -n tenant-a label "$XR" branch-office cutover="$(date +%s)" --overwrite >/dev/null
	# Neutron's word, not the claim's status: after an earlier cutover the
	# status can still say attached from before this run's vm-up.
	fip_on_gateway() { [ "$("$RUNBOOK" show 203.0.113.10)" = "$(kubectl -n tenant-a get "$XR" branch-office -o jsonpath='{.status.port.id}')" ]; }
	wait_for "the floating IP on the gateway's port" 60 fip_on_gateway
	wait_for "the claim's floating IP attached" 60 claim_is '{.status.floatingIP.attached}' true
	wait_for "the claim Ready" 180 claim_is '{.status.conditions[?(@.type=="Ready")].status}' True
	wait_for "the claim's tunnel up" 120 claim_is '{.status.gateway.tunnelsUp}' 1/1
	# The client's side of it too: the VM's IKE SA went with its charon's
	# DELETEs (vm-stop), so an ESTABLISHED one is the gateway pod's.
	client_established() { "$SITE" client-sas | grep -q ', ESTABLISHED, '; }
	wait_for "the client site's IKE SA ESTABLISHED" 60 client_established
fi

# The commands below, with this stack's settings where they are not the
# defaults.
envs=
[ "$STATE" = "$ROOT/.work/local" ] || envs="STATE=$STATE "
[ "$OS_STATE" = "$ROOT/.work/openstack" ] || envs="${envs}OS_STATE=$OS_STATE "
cat <<MSG

  export KUBECONFIG=$KUBECONFIG PATH=$TOOLS_BIN:\$PATH   # kubectl and crank of the local stack's version
  kubectl get $XR -A
  kubectl get managed -A                   # Synced/Ready of each composed resource
  kubectl get $GW   # the managed resource: TUNNELS, BYTES-IN, BYTES-OUT
  crank beta trace $XR branch-office -n tenant-a
  kubectl -n tenant-a get configmap $gw-config -o yaml     # the rendered swanctl.conf, for review
MSG
if [ "$NODE" = 1 ]; then
	cat <<MSG
  kubectl -n tenant-a exec deploy/$gw -c strongswan -- swanctl --list-sas   # once the gateway runs
  kubectl -n tenant-a logs deploy/$gw -c strongswan                          # charon's log
  $envs$SITE client-sas          # the client site's view of its tunnel
  $envs$SITE probe -for 10s      # a client host's connections to 100.64.0.10:443: who carries them
MSG
fi
if [ "$STOP_AT" = prestage ]; then
	cat <<MSG

The runbook's pre-stage: claim tenant-a/branch-office pins 203.0.113.10,
which the VM gateway's port ($vm_port) still holds; the configuration is
rendered, the gateway's Deployment runs 0 replicas.

Cutover (the binding attaches by itself within about 10 s; the label edit
makes it retry at once):

  $envs$RUNBOOK unset 203.0.113.10
MSG
	[ "$NODE" = 0 ] || echo "  $envs$SITE vm-stop"
	cat <<MSG
  kubectl -n tenant-a label $XR branch-office cutover=\$(date +%s) --overwrite
  kubectl get $XR -A -w
MSG
else
	cat <<MSG

The runbook's cutover is done: 203.0.113.10 is on the gateway's port, the
VM's charon is stopped, the client site's tunnel is up with the gateway pod.
MSG
fi
cat <<MSG

Rollback (the binding leaves the address alone for 2 minutes once it saw
it leave its port; docs/runbook.md: pause it if the two commands may be
further apart), then the binding reports the VM's port again:

  $envs$RUNBOOK unset 203.0.113.10
  $envs$RUNBOOK set 203.0.113.10 $vm_port
MSG
[ "$NODE" = 0 ] || echo "  $envs$SITE vm-start"
cat <<MSG

After the rollback, deleting the claim leaves the floating IP on the VM's
port (a pinned address is never released; deleted while cut over, the
claim would leave it unassociated and the client's tunnel down):

  kubectl -n tenant-a delete $XR branch-office

A claim with an allocated floating IP: kubectl apply -f $STATE/claims/allocated-fip.yaml

'make dev-down' stops everything.

MSG
echo "\$ kubectl get $XR -A"
kubectl get "$XR" -A
echo
echo "\$ crank beta trace $XR branch-office -n tenant-a"
"$TOOLS_BIN/crank" beta trace "$XR" branch-office -n tenant-a || true
if [ "$STOP_AT" = cutover ]; then
	# The ESTABLISHED IKE SA alone: the client's own retry can linger
	# beside it, CONNECTING, for minutes (docs/local-stack.md).
	echo
	echo "The client site's ESTABLISHED IKE SA ($envs$SITE client-sas):"
	"$SITE" client-sas | awk '/^[^ ]/ { show = /, ESTABLISHED, / } show' || true
fi
