#!/usr/bin/env bash
# Builds the packages with no Docker and no registry (make xpkg):
#   1. the provider's runtime image, an image tarball made from the static
#      provider binary, the CA certificates and a passwd entry for the
#      non-root user (hack/images.sh provider, which leaves imagebuild in
#      $OUT/image);
#   2. the provider package with that image embedded;
#   3. the composition function's runtime image (hack/images.sh function)
#      and its Function package with that image embedded;
#   4. the Configuration package (the IPsecGateway XRD and Composition).
# Into $OUT (default _output/xpkg). Two builds of one commit give the same
# digests. Prints each file's size and digest.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
OUT=${OUT:-$ROOT/_output/xpkg}
VERSION=${VERSION:-v0.1.0}
# Never resolved: packages are installed offline by digest, or pushed to a
# registry by the user under their own name.
REPO=${REPO:-xpkg.ipsecgw.invalid/ipsecgw}
TOOLS_BIN=${TOOLS_BIN:-$("$ROOT/hack/tools.sh" bindir)}
# The image `make images` builds too, rebuilt only when its inputs changed.
PROVIDER_OUT=$OUT REPO=$REPO VERSION=$VERSION "$ROOT/hack/images.sh" provider function

# The provider package: package/ without the function and the
# Configuration beside it.
"$TOOLS_BIN/crank" xpkg build --package-root package --ignore 'configuration/*,function/*' \
	--examples-root examples/networking --embed-runtime-image-tarball "$OUT/provider-image.tar" \
	-o "$OUT/provider-ipsec.xpkg"
# The function has no examples (and crank's default root is all of examples/).
"$TOOLS_BIN/crank" xpkg build --package-root package/function --examples-root examples/function \
	--embed-runtime-image-tarball "$OUT/function-image.tar" -o "$OUT/function-ipsecgw.xpkg"
"$TOOLS_BIN/crank" xpkg build --package-root package/configuration --examples-root examples/claim \
	-o "$OUT/ipsecgw-configuration.xpkg"

for f in provider-ipsec.xpkg function-ipsecgw.xpkg ipsecgw-configuration.xpkg; do
	printf '%-28s %6s KiB  %s\n' "$f" "$(($(stat -c %s "$OUT/$f") / 1024))" "$("$OUT/image/imagebuild" digest "$OUT/$f")"
done
