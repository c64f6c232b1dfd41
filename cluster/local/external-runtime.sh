#!/usr/bin/env bash
# Plays Crossplane's External package runtime for a package whose process
# runs locally: publishes its TLS Secret and points the active revision's
# status at the process, with a RuntimeHealthy condition.
#
#   external-runtime.sh function|provider NAME ENDPOINT CERT_DIR
set -euo pipefail
# shellcheck source=cluster/local/lib.sh
source "$(dirname "$0")/lib.sh"
kind=${1:?kind} name=${2:?name} endpoint=${3:?endpoint} certs=${4:?cert dir}

kubectl -n "$XP_NAMESPACE" create secret generic "$name-tls-server" \
	--from-file "$certs/tls.crt" --from-file "$certs/tls.key" --from-file "$certs/ca.crt" \
	--dry-run=client -o yaml | kubectl apply -f - >/dev/null
active_revision() {
	rev=$(kubectl get "${kind}revision" -l "pkg.crossplane.io/package=$name" \
		-o 'jsonpath={range .items[?(@.spec.desiredState=="Active")]}{.metadata.name}{end}')
	[ -n "$rev" ]
}
wait_for "active ${kind}revision of $name" 60 active_revision
active_revision
kubectl patch "${kind}revision" "$rev" --subresource status --type merge \
	-p "{\"status\":{\"endpoint\":\"$endpoint\",\"tlsServerSecretName\":\"$name-tls-server\"}}" >/dev/null
kubectl patch "${kind}revision" "$rev" --subresource status --type json -p "[{\"op\":\"add\",\"path\":\"/status/conditions/-\",
	\"value\":{\"type\":\"RuntimeHealthy\",\"status\":\"True\",\"reason\":\"HealthyPackageRevision\",\"lastTransitionTime\":\"$(date -u +%FT%TZ)\"}}]" >/dev/null
