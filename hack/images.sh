#!/usr/bin/env bash
# Builds the images with no Docker and no registry (make images), as image
# tarballs that `ctr -n k8s.io images import` loads (hack/imagebuild):
#
#   provider  the provider's runtime image: the static provider binary, the
#             CA certificates and a passwd entry for the non-root user, into
#             $PROVIDER_OUT/provider-image.tar (default _output/xpkg), the
#             image hack/xpkg.sh embeds in the provider package;
#   function  the composition function's runtime image: the static
#             cmd/function binary and a passwd entry for the non-root user,
#             into $PROVIDER_OUT/function-image.tar, the image hack/xpkg.sh
#             embeds in the function package;
#   gateway   the gateway pod's image, what cluster/images/Dockerfile's gateway target
#             builds: a Debian bookworm root filesystem with the packages
#             of cluster/images/gateway/packages.txt (debootstrap:
#             strongSwan, iproute2, nftables), then the gateway agent,
#             the gateway's strongswan.conf and its default data plane
#             fragment as a second layer, into
#             $GATEWAY_OUT/gateway-image.tar (default _output/images), tagged
#             as the Gateway's default image so that a node that imported it
#             runs it without a pull.
#
#   hack/images.sh [provider|function|gateway]...   (default: all three)
#
# An image is rebuilt only when its inputs changed (the binaries, files and
# arguments it is made of, hashed into <image>.key beside it). The root
# filesystem tarball is built once (as root: debootstrap, installed with
# hack/apt-install.sh --host images, from the Debian mirror the machine's
# apt sources name) and cached outside the repository in $IMAGES_CACHE
# (default ~/.cache/provider-ipsec/images), keyed by the suite, the package
# list and how it is trimmed, so clones on one machine share it. Two builds
# from one cached root filesystem give the same digests. Prints each image's
# size, digest and whether it was built or cached. With IMAGES_OFFLINE=1 a root
# filesystem that is not cached is not built: the script exits 3 instead
# (the tests, which make no traffic outside the machine).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
VERSION=${VERSION:-v0.1.0}
PROVIDER_OUT=${PROVIDER_OUT:-$ROOT/_output/xpkg}
GATEWAY_OUT=${GATEWAY_OUT:-$ROOT/_output/images}
# spec.forProvider.images' default in apis/cluster/gateway/v1alpha1.
GATEWAY_TAG=${GATEWAY_TAG:-ipsecgw/gateway:$VERSION}
CACHE=${IMAGES_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/provider-ipsec/images}
SUITE=bookworm
# The gateway image's packages, the Dockerfile's too, comma-separated.
PACKAGES=$(sed 's/#.*//' cluster/images/gateway/packages.txt | xargs | tr ' ' ,)

# image IMAGEBUILD OUT ARG... writes the image tarball OUT with imagebuild
# and ARG, unless OUT was made from the same imagebuild, arguments and
# -file/-base contents; prints its name, size and digest.
image() {
	local ib=$1 out=$2 key prev="" a t0 status=cached
	shift 2
	key=$({
		sha256sum <"$ib"
		for a in "$@"; do
			printf '%s\n' "$a"
			case $prev in
			-file) sha256sum <"${a%%:*}" ;;
			-base) sha256sum <"$a" ;;
			esac
			prev=$a
		done
	} | sha256sum | cut -c1-16)
	if [ ! -f "$out" ] || [ "$(cat "$out.key" 2>/dev/null)" != "$key" ]; then
		t0=$(date +%s)
		rm -f "$out.key"
		"$ib" -o "$out" "$@" >/dev/null
		echo "$key" >"$out.key"
		status="built in $(($(date +%s) - t0))s"
	fi
	printf '%-28s %6s KiB  %s  %s\n' "$(basename "$out")" "$(($(stat -c %s "$out") / 1024))" "$("$ib" digest "$out")" "$status"
}

# trim makes the fresh root filesystem $1 what debian:bookworm-slim and the
# Dockerfile's gateway RUN step leave: no package lists, downloaded
# packages, logs, caches, manuals, translations or documentation but the
# copyright notices; an empty /dev (the runtime mounts its own); the
# directory of charon's VICI socket (/var/run is a link to /run).
# shellcheck disable=SC2115 # $1 is never empty: its one caller passes "$TMP/root" (a guard here would change the cache key)
trim() {
	rm -rf "$1"/var/lib/apt/lists/* "$1"/var/cache/apt/archives/*.deb "$1"/var/cache/apt/*.bin \
		"$1"/var/log/* "$1"/var/cache/ldconfig/aux-cache "$1"/var/cache/debconf/*-old "$1"/var/lib/dpkg/*-old \
		"$1"/usr/share/man/* "$1"/usr/share/info/* "$1"/usr/share/locale/* "$1"/dev/*
	find "$1"/usr/share/doc -type f ! -name copyright -delete
	find "$1"/usr/share/doc -mindepth 1 -type d -empty -delete
	mkdir -p "$1"/run/charon
}

# rootfs prints the path of the cached root filesystem tarball, building it
# when missing; the build goes to a temporary directory renamed into place
# when complete, so an interrupted one leaves nothing behind.
rootfs() {
	local key tar mirror t0
	key=$({ printf '%s\n' "$SUITE" "$PACKAGES"; declare -f trim; } | sha256sum | cut -c1-16)
	tar=$CACHE/rootfs-$SUITE-$key.tar
	if [ -f "$tar" ]; then
		echo "$tar"
		return
	fi
	if [ "${IMAGES_OFFLINE:-}" = 1 ]; then
		echo "error: the gateway's root filesystem is not cached ($tar) and IMAGES_OFFLINE=1: run make images" >&2
		exit 3
	fi
	if [ "$(id -u)" != 0 ]; then
		echo "error: the gateway's root filesystem is not cached yet ($tar); building it needs root (debootstrap)" >&2
		exit 1
	fi
	"$ROOT/hack/apt-install.sh" --host images >&2
	mirror=$(apt-cache policy | awk -v s="$SUITE/main" '$3 == s { print $2; exit }')
	if [ -z "$mirror" ]; then
		echo "error: no apt source for $SUITE main on this machine" >&2
		exit 1
	fi
	mkdir -p "$CACHE"
	TMP=$(mktemp -d "$CACHE/rootfs.XXXXXX")
	trap 'rm -rf "$TMP"' EXIT
	t0=$(date +%s)
	echo "images: debootstrap $SUITE from $mirror (log: $TMP/debootstrap.log)" >&2
	if ! debootstrap --variant=minbase --include="$PACKAGES" "$SUITE" "$TMP/root" "$mirror" >"$TMP/debootstrap.log" 2>&1; then
		tail -20 "$TMP/debootstrap.log" >&2
		echo "error: debootstrap failed" >&2
		exit 1
	fi
	trim "$TMP/root"
	tar --numeric-owner -C "$TMP/root" -cf "$TMP/rootfs.tar" .
	mv "$TMP/rootfs.tar" "$tar"
	rm -rf "$TMP"
	trap - EXIT
	echo "images: root filesystem cached in $(($(date +%s) - t0))s: $tar ($(($(stat -c %s "$tar") / 1048576)) MiB)" >&2
	echo "$tar"
}

# gobuild OUT PKG builds a static binary.
gobuild() { CGO_ENABLED=0 go build -trimpath -ldflags='-s -w' -o "$1" "$2"; }

# static NAME PKG TAG [ARG...] builds the image $PROVIDER_OUT/NAME-image.tar
# of the static binary of PKG as /usr/local/bin/NAME, its entrypoint, run as
# the non-root user, with the imagebuild ARGs (more files) beside it.
static() {
	local name=$1 pkg=$2 tag=$3 work=$PROVIDER_OUT/image
	shift 3
	mkdir -p "$work"
	gobuild "$work/$name" "$pkg"
	gobuild "$work/imagebuild" ./hack/imagebuild
	image "$work/imagebuild" "$PROVIDER_OUT/$name-image.tar" -tag "$tag" \
		-entrypoint "/usr/local/bin/$name" -user 65532:65532 -env PATH=/usr/local/bin:/usr/bin:/bin \
		-file "$work/$name:/usr/local/bin/$name:0755" "$@" \
		-text "/etc/passwd:0644:nonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin
" -text "/etc/group:0644:nonroot:x:65532:
"
}

provider() {
	static provider ./cmd/provider "provider-ipsec:$VERSION" \
		-file /etc/ssl/certs/ca-certificates.crt:/etc/ssl/certs/ca-certificates.crt:0644
}

# The composition function: what Crossplane's Function runtime runs,
# serving on 9443 with the certificates it mounts at TLS_SERVER_CERTS_DIR.
fn() { static function ./cmd/function "function-ipsecgw:$VERSION"; }

gateway() {
	local work=$GATEWAY_OUT/work base
	base=$(rootfs)
	mkdir -p "$work"
	gobuild "$work/gateway-agent" ./cmd/gateway-agent
	gobuild "$work/imagebuild" ./hack/imagebuild
	image "$work/imagebuild" "$GATEWAY_OUT/gateway-image.tar" -tag "$GATEWAY_TAG" -base "$base" \
		-cmd /usr/lib/ipsec/charon \
		-env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin -env STRONGSWAN_CONF=/etc/strongswan.conf \
		-file "$work/gateway-agent:/usr/local/bin/gateway-agent:0755" \
		-file cluster/images/gateway/strongswan.conf:/etc/strongswan.conf:0644 \
		-file cluster/images/gateway/dataplane.conf:/etc/ipsecgw/strongswan.d/dataplane.conf:0644
}

[ $# -gt 0 ] || set -- provider function gateway
for i in "$@"; do
	case $i in
	provider | gateway) "$i" ;;
	function) fn ;;
	*) echo "usage: $0 [provider|function|gateway]..." >&2; exit 2 ;;
	esac
done
