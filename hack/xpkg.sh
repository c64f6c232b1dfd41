#!/usr/bin/env bash
# Builds the packages with no Docker and no registry (make xpkg):
#   1. the provider's runtime image, an image tarball made from the static
#      provider binary, the CA certificates and a passwd entry for the
#      non-root user (hack/imagebuild);
#   2. the provider package with that image embedded;
#   3. the Configuration package (the IPsecGateway XRD and Composition).
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
mkdir -p "$OUT/image"

CGO_ENABLED=0 go build -trimpath -ldflags='-s -w' -o "$OUT/image/provider" ./cmd/provider
go build -o "$OUT/image/imagebuild" ./hack/imagebuild
"$OUT/image/imagebuild" -o "$OUT/provider-image.tar" -tag "$REPO/provider-ipsec:$VERSION" \
	-entrypoint /usr/local/bin/provider -user 65532:65532 \
	-file "$OUT/image/provider:/usr/local/bin/provider:0755" \
	-file /etc/ssl/certs/ca-certificates.crt:/etc/ssl/certs/ca-certificates.crt:0644 \
	-text "/etc/passwd:0644:nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin
" -text "/etc/group:0644:nonroot:x:65532:
" >/dev/null

# The provider package: package/ without the Configuration beside it.
"$TOOLS_BIN/crank" xpkg build --package-root package --ignore 'configuration/*' \
	--examples-root examples/networking --embed-runtime-image-tarball "$OUT/provider-image.tar" \
	-o "$OUT/provider-ipsec.xpkg"
"$TOOLS_BIN/crank" xpkg build --package-root package/configuration --examples-root examples/claim \
	-o "$OUT/ipsecgw-configuration.xpkg"

for f in provider-image.tar provider-ipsec.xpkg ipsecgw-configuration.xpkg; do
	printf '%-28s %6s KiB  %s\n' "$f" "$(($(stat -c %s "$OUT/$f") / 1024))" "$("$OUT/image/imagebuild" digest "$OUT/$f")"
done
