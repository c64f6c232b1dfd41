#!/usr/bin/env bash
# End-to-end check of `make dev`'s stack: brings the local control plane,
# Crossplane, the function and the provider up in a state directory of its
# own, on the free ports up.sh finds for it (so a developer's running stack,
# or another checkout's e2e, is not touched), checks
# what a user would, checks that a second bring-up refuses to start a twin,
# and tears everything down, also when a check fails. As root the stack has
# its node (NODES=2: two, and node.sh checks the loss and return of one):
# test/e2e/node.sh runs a pod on it, and cluster-down must leave the host as
# it was (node.sh host before and after).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
export STATE=$ROOT/.work/e2e-dev
# shellcheck source=cluster/local/lib.sh
source "$ROOT/cluster/local/lib.sh"

pids=()
host_before=$("$ROOT/test/e2e/node.sh" host)
finish() {
	local rc=$?
	[ $rc -ne 0 ] && [ -f "$STATE/provider.log" ] && tail -20 "$STATE/provider.log" >&2
	"$ROOT/cluster/local/down.sh" >/dev/null
	for p in "${pids[@]}"; do
		if alive "$p"; then
			echo "FAIL: pid $p survived cluster-down" >&2
			rc=1
		fi
	done
	[ -d "$STATE" ] && { echo "FAIL: $STATE survived cluster-down" >&2; rc=1; }
	host_after=$("$ROOT/test/e2e/node.sh" host)
	if [ "$host_after" != "$host_before" ]; then
		echo "FAIL: cluster-down did not restore the host:" >&2
		diff <(echo "$host_before") <(echo "$host_after") >&2
		rc=1
	fi
	rm -rf "$STATE.failed"
	exit $rc
}
trap finish EXIT
fail() {
	echo "FAIL: $*" >&2
	exit 1
}

"$ROOT/cluster/local/up.sh"
read_ports "$STATE/ports" "${LOCAL_PORTS[@]}"
"$ROOT/cluster/local/provider.sh" >/dev/null
# Every process the stack recorded: control plane, Crossplane, provider and
# the nodes.
for f in "$STATE"/*.pid; do pids+=("$(cat "$f")"); done

second=$("$ROOT/cluster/local/up.sh")
[[ $second == *"already running"* ]] || fail "a second up.sh did not say the stack runs: $second"
apiserver=$(cat "$STATE/apiserver.pid")
[[ " ${pids[*]} " == *" $apiserver "* ]] || fail "a second up.sh replaced the running kube-apiserver"

kubectl get providerconfigs.ipsecgw.io >/dev/null 2>&1 || fail "kubectl get providerconfigs.ipsecgw.io does not answer"
# The provider's CRDs and the XRD were installed by Crossplane's package
# manager from the packages, not by kubectl: their owners are the revisions.
# The provider has the safe-start capability: each managed resource kind is
# a ManagedResourceDefinition of the provider's revision, inactive (no CRD)
# unless an activation policy names it, and the Configuration's policy
# names those its Compositions compose; the ProviderConfig kinds are plain
# CRDs.
activated=" $(kubectl get managedresourceactivationpolicy ipsecgw-configuration -o 'jsonpath={.status.activated[*]}') "
[ "$activated" != "  " ] || fail "the Configuration's activation policy activated nothing"
inactive=()
for f in "$ROOT"/package/crds/*.yaml; do
	b=$(basename "$f" .yaml) && crd=${b#*_}.${b%%_*}
	case $crd in
	*providerconfig*) ;;
	*)
		[ "$(kubectl get mrd "$crd" -o 'jsonpath={.metadata.ownerReferences[?(@.controller==true)].kind}')" = ProviderRevision ] ||
			fail "ManagedResourceDefinition $crd was not installed from the provider package"
		if [[ $activated != *" $crd "* ]]; then
			[ "$(kubectl get mrd "$crd" -o 'jsonpath={.spec.state}')" = Inactive ] || fail "$crd is active, though no policy activates it"
			! kubectl get crd "$crd" >/dev/null 2>&1 || fail "inactive $crd has a CRD"
			inactive+=("$crd")
			continue
		fi
		;;
	esac
	[ "$(kubectl get crd "$crd" -o 'jsonpath={.metadata.ownerReferences[?(@.controller==true)].kind}')" = ProviderRevision ] ||
		fail "CRD $crd was not installed from the provider package"
done
[ "${inactive[*]}" = "networks.networking.ipsecgw.io networks.networking.m.ipsecgw.io" ] ||
	fail "the kinds left inactive are ${inactive[*]}, want the Networks (the Configuration composes the rest)"
# Safe start: the provider runs (provider.sh waited for its /readyz) with
# the Networks inactive and has no controller for them, but has one for
# each active kind.
controllers() { curl -fsS "http://127.0.0.1:$PROVIDER_METRICS_PORT/metrics" | sed -n 's/^controller_runtime_max_concurrent_reconciles{controller="\([^"]*\)".*/\1/p' | sort; }
has_controller() { controllers | grep -qx "$1"; }
has_controller managed/securitygroup.networking.ipsecgw.io || fail "the provider has no SecurityGroup controller: $(controllers | xargs)"
for c in managed/network.networking.ipsecgw.io managed/network.networking.m.ipsecgw.io; do
	! has_controller "$c" || fail "the provider runs $c, an inactive kind's controller"
done
[ "$(kubectl get xrd xipsecgateways.vpn.ipsecgw.io -o 'jsonpath={.metadata.ownerReferences[?(@.controller==true)].kind}')" = ConfigurationRevision ] ||
	fail "the IPsecGateway XRD was not installed from the Configuration package"
[ "$(kubectl get function function-ipsecgw -o 'jsonpath={.status.conditions[?(@.type=="Healthy")].status}')" = True ] ||
	fail "the composition function function-ipsecgw is not Healthy"
# The packages came from the stack's registry by tag: the Configuration
# installed with dependency resolution, the provider and the function
# installed by it (Crossplane's Lock lists all three).
[ "$(kubectl get configuration ipsecgw-configuration -o 'jsonpath={.spec.package} {.spec.skipDependencyResolution}')" = "$(registry)/ipsecgw-configuration:v0.1.0 false" ] ||
	fail "the Configuration was not installed by tag from the registry with dependency resolution"
for p in provider/provider-ipsec function/function-ipsecgw; do
	[ "$(kubectl get "${p%%/*}.pkg.crossplane.io" "${p#*/}" -o 'jsonpath={.spec.package}')" = "$(registry)/${p#*/}:v0.1.0" ] ||
		fail "the ${p%%/*} ${p#*/} was not resolved from the registry to v0.1.0"
done
locked=$(kubectl get lock lock -o 'jsonpath={.packages[*].source}' | tr ' ' '\n' | sort | xargs)
[ "$locked" = "$(registry)/function-ipsecgw $(registry)/ipsecgw-configuration $(registry)/provider-ipsec" ] ||
	fail "Crossplane's Lock does not hold the three packages: $locked"
kubectl apply -f "$ROOT/examples/providerconfig/" >/dev/null || fail "examples/providerconfig does not apply"
[ "$(kubectl get providerconfig.ipsecgw.io default -o 'jsonpath={.spec.credentials.cloud}')" = local ] ||
	fail "the example ProviderConfig did not round-trip"
# The provider's ProviderConfig controller adds its in-use finalizer. (In
# the single quotes of bash -c, $0 is the kubectl after them.)
# shellcheck disable=SC2016
wait_for "the provider's ProviderConfig controller" 30 \
	bash -c '[[ $("$0" get providerconfig.ipsecgw.io default -o jsonpath={.metadata.finalizers}) == *in-use.crossplane.io* ]]' "$TOOLS_BIN/kubectl"
# The Gateway example renders and its objects appear.
kubectl apply -f "$ROOT/examples/gateway/psk.yaml" -f "$ROOT/examples/gateway/gateway.yaml" >/dev/null ||
	fail "examples/gateway does not apply"
wait_for "the example Gateway's ConfigMap" 60 kubectl -n tenant-a get configmap tenant-a-vpn-config
# shellcheck disable=SC2016
wait_for "the example Gateway to be ConfigRendered" 60 \
	bash -c '[ "$("$0" get gateway tenant-a-vpn -o "jsonpath={.status.conditions[?(@.type==\"ConfigRendered\")].status}")" = True ]' "$TOOLS_BIN/kubectl"
kubectl get gateway tenant-a-vpn | grep -q 203.0.113.10 || fail "kubectl get gateway does not show the local identity"
kubectl delete gateway tenant-a-vpn --timeout 60s >/dev/null || fail "the example Gateway is not deleted"

# A platform team activates the Networks (examples/activation): Crossplane
# makes their CRDs, and the running provider starts their controllers,
# which reconcile a Network (Synced: here without Keystone, an error
# naming it).
kubectl apply -f "$ROOT/examples/activation/" >/dev/null || fail "examples/activation does not apply"
t0=$(date +%s%N)
for crd in "${inactive[@]}"; do
	wait_for "$crd to be activated and established" 60 kubectl wait --for condition=Established --timeout 5s "crd/$crd"
done
for c in managed/network.networking.ipsecgw.io managed/network.networking.m.ipsecgw.io; do
	wait_for "the provider's controller $c" 60 has_controller "$c"
done
echo "safe start: the Networks activated, their controllers running $(elapsed "$t0")s after the policy"
kubectl apply -f "$ROOT/examples/networking/network.yaml" >/dev/null || fail "examples/networking/network.yaml does not apply once active"
# shellcheck disable=SC2016
wait_for "the example Network to be reconciled (Synced)" 60 \
	bash -c '[ -n "$("$0" get network.networking.ipsecgw.io tenant-a-net -o "jsonpath={.status.conditions[?(@.type==\"Synced\")].status}")" ]' "$TOOLS_BIN/kubectl"
kubectl delete network.networking.ipsecgw.io tenant-a-net --timeout 60s >/dev/null || fail "the example Network is not deleted"

# Every OpenStack example is accepted by the API server as it is (schema and
# CEL rules); the local stack runs no Neutron, so they are not applied.
kubectl apply --dry-run=server -f "$ROOT/examples/networking/" >/dev/null || fail "examples/networking do not apply"
# So is every claim example (admission by the XRD's schema and CEL rules);
# the runbook e2e (test/e2e/runbook_test.go) applies them for real.
kubectl apply -f "$ROOT/examples/claim/psk.yaml" >/dev/null || fail "examples/claim/psk.yaml does not apply"
kubectl apply --dry-run=server -f "$ROOT/examples/claim/" >/dev/null || fail "examples/claim do not apply"

metrics=$(curl -fsS "http://127.0.0.1:$PROVIDER_METRICS_PORT/metrics")
grep -q '^controller_runtime_reconcile_total{controller="providerconfig/providerconfig.ipsecgw.io"' <<<"$metrics" ||
	fail "the provider's /metrics does not count ProviderConfig reconciles"
[ "$NODE" = 0 ] || "$ROOT/test/e2e/node.sh" check
echo "PASS: local dev stack (provider RSS $(($(ps -o rss= -p "$(cat "$STATE/provider.pid")") / 1024)) MiB)"
