#!/usr/bin/env bash
# Builds the packages with no Docker and no registry (make xpkg):
#
#   provider       the provider's runtime image, an image tarball made from
#                  the static provider binary, the CA certificates and a
#                  passwd entry for the non-root user (hack/images.sh
#                  provider, which leaves imagebuild in $OUT/image), and the
#                  provider package with that image embedded;
#   function       the composition function's runtime image (hack/images.sh
#                  function) and its Function package with that image
#                  embedded;
#   configuration  the Configuration package (the IPsecGateway XRD and
#                  Composition), whose dependsOn names the provider and the
#                  function under $REPO, the registry path they are pushed
#                  to and Crossplane resolves them from: built only with
#                  REPO set (the local stack builds its own for its
#                  registry, cluster/local/packages.sh).
#
#   hack/xpkg.sh [provider|function|configuration]...
#       (default: provider and function, and configuration with REPO set)
#
# Into $OUT (default _output/xpkg). Two builds of one commit (and one REPO)
# give the same digests; the provider's and the function's do not depend on
# REPO. Prints each file's size and digest.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
OUT=${OUT:-$ROOT/_output/xpkg}
VERSION=${VERSION:-v0.1.0}
REPO=${REPO:-}
TOOLS_BIN=${TOOLS_BIN:-$("$ROOT/hack/tools.sh" bindir)}

# digest FILE prints FILE's size and the digest a registry serves it under.
digest() { printf '%-28s %6s KiB  %s\n' "$(basename "$1")" "$(($(stat -c %s "$1") / 1024))" "$("$OUT/image/imagebuild" digest "$1")"; }

provider() {
	VERSION=$VERSION PROVIDER_OUT=$OUT "$ROOT/hack/images.sh" provider
	# package/ without the function and the Configuration beside it.
	"$TOOLS_BIN/crank" xpkg build --package-root package --ignore 'configuration/*,function/*' \
		--examples-root examples/networking --embed-runtime-image-tarball "$OUT/provider-image.tar" \
		-o "$OUT/provider-ipsec.xpkg"
	digest "$OUT/provider-ipsec.xpkg"
}

fn() {
	VERSION=$VERSION PROVIDER_OUT=$OUT "$ROOT/hack/images.sh" function
	# The function has no examples (and crank's default root is all of examples/).
	"$TOOLS_BIN/crank" xpkg build --package-root package/function --examples-root examples/function \
		--embed-runtime-image-tarball "$OUT/function-image.tar" -o "$OUT/function-ipsecgw.xpkg"
	digest "$OUT/function-ipsecgw.xpkg"
}

# configuration builds from a copy of package/configuration whose
# crossplane.yaml has ${REPO} replaced.
configuration() {
	[ -n "$REPO" ] || { echo "hack/xpkg.sh configuration: set REPO, the registry path the provider and function are pushed to (such as 127.0.0.1:5000)" >&2; exit 2; }
	local src=$OUT/configuration-root
	rm -rf "$src"
	mkdir -p "$src"
	cp package/configuration/*.yaml "$src/"
	sed -i "s|\${REPO}|$REPO|g" "$src/crossplane.yaml"
	"$TOOLS_BIN/crank" xpkg build --package-root "$src" --examples-root examples/claim \
		-o "$OUT/ipsecgw-configuration.xpkg"
	rm -rf "$src"
	[ -x "$OUT/image/imagebuild" ] || CGO_ENABLED=0 go build -trimpath -o "$OUT/image/imagebuild" ./hack/imagebuild
	digest "$OUT/ipsecgw-configuration.xpkg"
}

if [ $# = 0 ]; then
	set -- provider function
	[ -z "$REPO" ] || set -- "$@" configuration
fi
mkdir -p "$OUT"
for i in "$@"; do
	case $i in
	provider | configuration) "$i" ;;
	function) fn ;;
	*) echo "usage: $0 [provider|function|configuration]..." >&2; exit 2 ;;
	esac
done
