#!/usr/bin/env bash
# Installs a package built by `make xpkg` through Crossplane's package
# manager, offline: the .xpkg goes into core's package cache under its image
# digest, a Provider or Configuration object references it by that digest
# with packagePullPolicy Never, and Crossplane installs what the package
# holds (a provider's CRDs; a Configuration's XRD and Composition). A
# provider's process runs out of cluster (cluster/local/provider.sh), and so
# does a function's (started by up.sh, serving on FN_PORT with the
# certificates in $STATE/xp/fn), so this script plays the External runtime
# for their revisions. Installing another .xpkg under the same NAME
# upgrades the package.
#
#   install-package.sh provider|function|configuration NAME XPKG
set -euo pipefail
# shellcheck source=cluster/local/lib.sh
source "$(dirname "$0")/lib.sh"
kind=${1:?provider, function or configuration} name=${2:?name} xpkg=${3:?xpkg file}
[ -f "$xpkg" ] || die "no $xpkg: run 'make xpkg'"

ref=$("$TOOLS_BIN/xpkgcache" "$STATE/xp/xpkg-cache" "$XPKG_REPO/$name" "$xpkg")
case $kind in
provider) Kind=Provider extra= ;;
function) Kind=Function extra= ;;
# Its dependencies (this provider, the function) are installed by digest
# beside it; resolving version constraints would need a registry.
configuration) Kind=Configuration extra="  skipDependencyResolution: true" ;;
*) die "unknown package kind $kind" ;;
esac
kubectl apply -f - >/dev/null <<YAML
apiVersion: pkg.crossplane.io/v1
kind: $Kind
metadata:
  name: $name
spec:
  package: $ref
  packagePullPolicy: Never
$extra
YAML
if [ "$kind" = provider ]; then
	[ -f "$STATE/xp/provider/tls.crt" ] || "$ROOT/cluster/local/function-cert.sh" "$STATE/xp/provider"
	"$ROOT/cluster/local/external-runtime.sh" provider "$name" "$ref" "$STATE/xp/provider"
elif [ "$kind" = function ]; then
	"$ROOT/cluster/local/external-runtime.sh" function "$name" "$ref" "$STATE/xp/fn" "dns:///localhost:$FN_PORT"
fi
kubectl wait --for condition=Installed --timeout 120s "$kind.pkg.crossplane.io/$name" >/dev/null
kubectl wait --for condition=Healthy --timeout 120s "$kind.pkg.crossplane.io/$name" >/dev/null
echo "$ref"
