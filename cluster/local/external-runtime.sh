#!/usr/bin/env bash
# Plays Crossplane's External package runtime for a package whose process
# runs locally: publishes its TLS Secret (certificates from CERT_DIR, made
# by function-cert.sh) and points the active revision of REF at it — a
# function's revision also at ENDPOINT, where its process serves — with a
# RuntimeHealthy condition. A provider's revision is given the same Secret
# as its webhook TLS Secret (this provider serves no webhooks).
#
#   external-runtime.sh function|provider NAME REF CERT_DIR [ENDPOINT]
set -euo pipefail
# shellcheck source=cluster/local/lib.sh
source "$(dirname "$0")/lib.sh"
kind=${1:?kind} name=${2:?name} ref=${3:?package reference} certs=${4:?cert dir} endpoint=${5:-}

kubectl -n "$XP_NAMESPACE" create secret generic "$name-tls-server" \
	--from-file "$certs/tls.crt" --from-file "$certs/tls.key" --from-file "$certs/ca.crt" \
	--dry-run=client -o yaml | kubectl apply -f - >/dev/null
# The active revision of the package REF (after an upgrade, the new one).
active_revision() {
	rev=$(kubectl get "${kind}revision" -l "pkg.crossplane.io/package=$name" \
		-o "jsonpath={range .items[?(@.spec.image==\"$ref\")]}{.metadata.name}{end}")
	[ -n "$rev" ] && [ "$(kubectl get "${kind}revision" "$rev" -o jsonpath='{.spec.desiredState}')" = Active ]
}
wait_for "active ${kind}revision of $ref" 60 active_revision
active_revision
# A revision already played for (packages.sh runtime after an upgrade of
# another package) is left as it is.
[ "$(kubectl get "${kind}revision" "$rev" -o 'jsonpath={.status.conditions[?(@.type=="RuntimeHealthy")].status}')" != True ] || exit 0
case $kind in
function) status="{\"endpoint\":\"$endpoint\",\"tlsServerSecretName\":\"$name-tls-server\"}" ;;
provider) status="{\"tlsServerSecretName\":\"$name-tls-server\",\"tlsClientSecretName\":\"$name-tls-server\"}" ;;
*) die "unknown package kind $kind" ;;
esac
kubectl patch "${kind}revision" "$rev" --subresource status --type merge -p "{\"status\":$status}" >/dev/null
kubectl patch "${kind}revision" "$rev" --subresource status --type json -p "[{\"op\":\"add\",\"path\":\"/status/conditions/-\",
	\"value\":{\"type\":\"RuntimeHealthy\",\"status\":\"True\",\"reason\":\"HealthyPackageRevision\",\"lastTransitionTime\":\"$(date -u +%FT%TZ)\"}}]" >/dev/null
