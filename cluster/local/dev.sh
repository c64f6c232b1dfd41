#!/usr/bin/env bash
# The main job on the bundled local stack (`make dev`): the control plane
# with Crossplane, the function and the IPsecGateway XRD and Composition
# (up.sh), the real Keystone + Neutron (cluster/openstack/up.sh), the
# provider (provider.sh); then the migration runbook's starting point — a
# "VM gateway" port holding floating IP 203.0.113.10 — and the pinned-FIP
# example claim, applied with the local Neutron's IDs, left pre-staged.
# Prints what a user looks at and the cutover and rollback commands.
# Running it again leaves what runs as it is and re-applies the claim.
set -euo pipefail
# shellcheck source=cluster/local/lib.sh
source "$(dirname "$0")/lib.sh"
export OS_STATE=${OS_STATE:-$ROOT/.work/openstack}
OS_KEYSTONE_PORT=${OS_KEYSTONE_PORT:-5000}
RUNBOOK=$ROOT/cluster/openstack/runbook.py

"$ROOT/cluster/local/up.sh"
"$ROOT/cluster/openstack/up.sh" | grep -v '^  ' || die "the local Keystone + Neutron did not start (cluster/openstack/up.sh)"
"$ROOT/cluster/local/provider.sh" >/dev/null

log "applying the example ProviderConfig (credentials of the local tenant-a)"
sed "s|127.0.0.1:5000/|127.0.0.1:$OS_KEYSTONE_PORT/|" "$ROOT/examples/providerconfig/secret.yaml" | kubectl apply -f - >/dev/null
kubectl apply -f "$ROOT/examples/providerconfig/providerconfig.yaml" >/dev/null

log "the runbook's VM gateway: port vm-gateway holds floating IP 203.0.113.10"
"$RUNBOOK" vm-up >"$STATE/runbook.json"
field() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' "$STATE/runbook.json" "$1"; }
vm_port=$(field vm_port_id)

log "applying the pinned-FIP claim (examples/claim/pinned-fip.yaml with the local IDs)"
mkdir -p "$STATE/claims"
for f in pinned-fip allocated-fip; do
	sed -e "s/00000000-0000-4000-8000-00000000aaaa/$(field network_id)/" \
		-e "s/00000000-0000-4000-8000-00000000bbbb/$(field subnet_id)/" \
		-e "s/00000000-0000-4000-8000-00000000cccc/$(field ext_net_id)/" \
		"$ROOT/examples/claim/$f.yaml" >"$STATE/claims/$f.yaml"
	# This machine's kernel has no ESP: the node's gateway pods run
	# strongSwan's userspace data plane.
	[ "$NODE" = 0 ] || sed -i 's/^spec:$/spec:\n  dataPlane: Libipsec/' "$STATE/claims/$f.yaml"
done
kubectl apply -f "$ROOT/examples/claim/psk.yaml" >/dev/null
kubectl apply -f "$STATE/claims/pinned-fip.yaml" >/dev/null

log "waiting for the pre-stage: security group and port ready, configuration rendered, floating IP still on the VM"
wait_for "the claim's port" 120 bash -c '[ -n "$("$0" -n tenant-a get ipsecgateway branch-office -o jsonpath={.status.port.privateIP})" ]' "$TOOLS_BIN/kubectl"
wait_for "the claim's gateway configuration" 120 bash -c '[ -n "$("$0" -n tenant-a get ipsecgateway branch-office -o jsonpath={.status.gateway.configHash})" ]' "$TOOLS_BIN/kubectl"

gw=$(kubectl -n tenant-a get ipsecgateway branch-office -o jsonpath='{.status.gateway.name}')
cat <<MSG

The main job runs: claim tenant-a/branch-office pins 203.0.113.10, which the
VM gateway's port ($vm_port) still holds. This is the runbook's pre-stage.

  export KUBECONFIG=$KUBECONFIG PATH=$TOOLS_BIN:\$PATH   # kubectl and crank of the local stack's version
  kubectl get ipsecgateway -A
  kubectl get managed                      # Synced/Ready of each composed resource
  crank beta trace ipsecgateway branch-office -n tenant-a
  kubectl -n tenant-a get ipsecgateway branch-office -o jsonpath='{.status.floatingIP.conditions}'
  kubectl -n tenant-a get configmap $gw-config -o yaml     # the rendered swanctl.conf, for review
  kubectl -n tenant-a get deployment $gw                   # 0 replicas until the floating IP is attached

Cutover (the binding attaches by itself within about 10 s; the label edit
makes it retry at once):

  OS_STATE=$OS_STATE $RUNBOOK unset 203.0.113.10
  kubectl -n tenant-a label ipsecgateway branch-office cutover=\$(date +%s) --overwrite
  kubectl get ipsecgateway -A -w

Rollback (pause the binding so that it cannot take the address back while
it is free, move it, unpause: the binding reports the VM's port again):

  kubectl annotate floatingipbinding -l crossplane.io/claim-name=branch-office crossplane.io/paused=true
  OS_STATE=$OS_STATE $RUNBOOK unset 203.0.113.10
  OS_STATE=$OS_STATE $RUNBOOK set 203.0.113.10 $vm_port
  kubectl annotate floatingipbinding -l crossplane.io/claim-name=branch-office crossplane.io/paused-
  kubectl -n tenant-a delete ipsecgateway branch-office    # the floating IP stays the customer's

A claim with an allocated floating IP: kubectl apply -f $STATE/claims/allocated-fip.yaml

'make dev-down' stops everything.
MSG
echo "\$ kubectl get ipsecgateway -A"
kubectl get ipsecgateway -A
echo
echo "\$ crank beta trace ipsecgateway branch-office -n tenant-a"
"$TOOLS_BIN/crank" beta trace ipsecgateway branch-office -n tenant-a || true
