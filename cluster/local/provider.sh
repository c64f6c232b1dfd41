#!/usr/bin/env bash
# Runs the provider binary (_output/bin/provider, from `make build`) against
# the local stack, out of cluster, and waits until it is ready. A provider
# that already runs is left as it is. PROVIDER_ARGS are its flags beside
# the metrics and health addresses (default --debug; the scale benchmark,
# hack/scale.sh, gives --poll and no --debug, as in production).
set -euo pipefail
# shellcheck source=cluster/local/lib.sh
source "$(dirname "$0")/lib.sh"
running apiserver || die "the local stack is not running: run 'make cluster-up' first"

if running provider; then
	log "provider already running (pid $(cat "$STATE/provider.pid"), log $STATE/provider.log)"
else
	[ -x "$ROOT/_output/bin/provider" ] || die "no provider binary: run 'make build'"
	need_free PROVIDER_METRICS_PORT PROVIDER_HEALTH_PORT
	log "starting the provider"
	# Gateways take the gateway image from the stack's registry
	# (cluster/node/up.sh pushes it there).
	read -ra args <<<"${PROVIDER_ARGS---debug}"
	start provider "$ROOT/_output/bin/provider" "${args[@]}" --gateway-image "$(registry)/$GATEWAY_REF" \
		--metrics-bind-address "127.0.0.1:$PROVIDER_METRICS_PORT" \
		--health-probe-bind-address "127.0.0.1:$PROVIDER_HEALTH_PORT"
	wait_ready provider provider 60 answers "http://127.0.0.1:$PROVIDER_HEALTH_PORT/readyz"
fi

cat <<MSG

provider-ipsec runs against the local stack (log: $STATE/provider.log).

  export KUBECONFIG=$KUBECONFIG
  kubectl get providerconfigs.ipsecgw.io
  kubectl get functions

Next:

  kubectl apply -f examples/providerconfig/          # credentials (edit clouds.yaml for a real cloud)
  kubectl apply -f examples/gateway/psk.yaml -f examples/gateway/gateway.yaml
  kubectl get gateways                               # rendered; its pod needs the gateway image on the node

For the OpenStack kinds against a real Neutron on loopback, run
'make openstack-up' (its tenant matches examples/providerconfig/), then
apply examples/networking/ after putting in the IDs it prints.

'make cluster-down' stops everything.
MSG
