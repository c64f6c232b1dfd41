#!/usr/bin/env bash
# The local stack's packages, installed as a platform team installs them:
# pushed to a registry (the stack's, cluster/registry) with
# `crossplane xpkg push`, then the Configuration installed by tag with
# `crossplane xpkg install configuration`, and Crossplane's package manager
# resolving its dependsOn (the provider and the function, by version
# constraint) from the registry. The provider's and the function's
# processes run out of cluster (cluster/local/provider.sh; the function
# started by up.sh), so this script then plays the External runtime for
# their revisions (external-runtime.sh) and waits until the Configuration,
# the provider and the function are Healthy and the kinds the
# Configuration activates (the provider's safe start) are established.
#
#   packages.sh                       the Configuration built for this
#                                     registry (hack/xpkg.sh), the three
#                                     packages of make xpkg pushed as
#                                     $VERSION (default v0.1.0), the
#                                     Configuration installed (up.sh)
#   packages.sh publish               the same without the install (ARGOCD=1
#                                     up.sh: Argo CD installs them from Git)
#   packages.sh push NAME XPKG TAG    pushes XPKG as $(registry)/NAME:TAG
#   packages.sh runtime               the External runtime for the revisions
#                                     the provider's and the function's
#                                     packages now name (after an upgrade:
#                                     the new ones), then waits as above
#
# Each step prints how long it took.
set -euo pipefail
# shellcheck source=cluster/local/lib.sh
source "$(dirname "$0")/lib.sh"
need_tools crank
CONFIGURATION=ipsecgw-configuration
VERSION=${VERSION:-v0.1.0}
# The CLI trusts the stack's CA, as Crossplane core does (CA_BUNDLE_PATH).
crank() { SSL_CERT_FILE=$STATE/pki/ca.crt "$TOOLS_BIN/crank" "$@"; }

push() {
	local t0 ref
	ref=$(registry)/$1:$3
	[ -f "$2" ] || die "no $2: run 'make xpkg'"
	t0=$(date +%s%N)
	crank xpkg push -f "$2" "$ref" >/dev/null
	log "pushed $ref ($(($(stat -c %s "$2") / 1024)) KiB) in $(elapsed "$t0")s"
}

# package_ref KIND NAME prints the package the KIND NAME installs, once
# Crossplane's dependency resolution has made it.
package_ref() { kubectl get "$1.pkg.crossplane.io" "$2" -o 'jsonpath={.spec.package}'; }

# activated succeeds once every ManagedResourceDefinition the
# Configuration's activation policy names is active and its CRD
# established.
activated() {
	local names m
	names=$(kubectl get managedresourceactivationpolicy "$CONFIGURATION" -o 'jsonpath={.spec.activate[*]}') || return 1
	[ -n "$names" ] || return 1
	for m in $names; do
		[ "$(kubectl get managedresourcedefinition "$m" -o 'jsonpath={.spec.state} {.status.conditions[?(@.type=="Established")].status}')" = "Active True" ] || return 1
	done
}

runtime() {
	local t0 ref
	t0=$(date +%s%N)
	wait_for "the provider package the Configuration depends on" 120 package_ref provider provider-ipsec
	wait_for "the function package the Configuration depends on" 120 package_ref function function-ipsecgw
	ref=$(package_ref provider provider-ipsec)
	[ -f "$STATE/xp/provider/tls.crt" ] || "$ROOT/cluster/local/function-cert.sh" "$STATE/xp/provider"
	"$ROOT/cluster/local/external-runtime.sh" provider provider-ipsec "$ref" "$STATE/xp/provider"
	ref=$(package_ref function function-ipsecgw)
	"$ROOT/cluster/local/external-runtime.sh" function function-ipsecgw "$ref" "$STATE/xp/fn" "dns:///localhost:$FN_PORT"
	for p in configuration/$CONFIGURATION provider/provider-ipsec function/function-ipsecgw; do
		kubectl wait --for condition=Installed --timeout 120s "${p%%/*}.pkg.crossplane.io/${p#*/}" >/dev/null
		kubectl wait --for condition=Healthy --timeout 120s "${p%%/*}.pkg.crossplane.io/${p#*/}" >/dev/null
	done
	# The provider has the safe-start capability: Crossplane installs its
	# kinds inactive (ManagedResourceDefinitions, no CRDs), and the
	# Configuration's ManagedResourceActivationPolicy activates those its
	# Compositions compose; an IPsecGateway applied before their CRDs are
	# established would wait out Crossplane's backoff.
	wait_for "the kinds the Configuration activates to be established" 60 activated
	log "the Configuration, the provider and the function are Healthy $(elapsed "$t0")s later"
}

publish() {
	OUT=$STATE/xpkg REPO=$(registry) TOOLS_BIN=$TOOLS_BIN "$ROOT/hack/xpkg.sh" configuration >/dev/null
	push provider-ipsec "$XPKG_DIR/provider-ipsec.xpkg" "$VERSION"
	push function-ipsecgw "$XPKG_DIR/function-ipsecgw.xpkg" "$VERSION"
	push "$CONFIGURATION" "$STATE/xpkg/$CONFIGURATION.xpkg" "$VERSION"
}

all() {
	local t0 ref
	ref=$(registry)/$CONFIGURATION:$VERSION
	publish
	t0=$(date +%s%N)
	crank xpkg install configuration "$ref" "$CONFIGURATION" >/dev/null
	log "crossplane xpkg install configuration $ref"
	runtime
	log "installed in $(elapsed "$t0")s"
}

case ${1:-all} in
all) all ;;
publish) publish ;;
push) push "${2:?name}" "${3:?xpkg file}" "${4:?tag}" ;;
runtime) runtime ;;
*) die "usage: $0 [publish | push NAME XPKG TAG | runtime]" ;;
esac
