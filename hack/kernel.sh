#!/usr/bin/env bash
# Puts the kernel of the kernel tier's guest (make test-kernel, test/kernel)
# in a cache outside the repository and prints its directory:
#
#   <dir>/vmlinux                the uncompressed ELF kernel, which QEMU
#                                boots directly (PVH): under TCG emulation
#                                that saves the 6 s the bzImage spends
#                                decompressing itself
#   <dir>/lib/modules/<release>  its modules, with depmod's indexes
#   <dir>/release                the release (uname -r), one line
#
# The kernel is Debian's stock one, the package linux-image-amd64 depends
# on (Debian 12: linux-image-6.1.0-*-amd64): downloaded with apt-get
# download and unpacked with dpkg-deb, never installed on this machine. The
# cache ($KERNEL_CACHE, default ~/.cache/provider-ipsec/kernel) is keyed by
# the package's name and version, so clones on one machine share it. With
# KERNEL_OFFLINE=1 a kernel that is not cached is not downloaded: the
# script exits 3 instead (the tests, which make no traffic outside the
# machine).
set -euo pipefail
CACHE=${KERNEL_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/provider-ipsec/kernel}

# lookup sets pkg and version from apt's lists.
lookup() {
	pkg=$(apt-cache depends linux-image-amd64 2>/dev/null | awk '$1 == "Depends:" && $2 ~ /^linux-image-/ && !p {print $2; p = 1}')
	version=$(apt-cache policy "$pkg" 2>/dev/null | awk '$1 == "Candidate:" {print $2}')
	[ -n "$pkg" ] && [ -n "$version" ] && [ "$version" != "(none)" ]
}
# A fresh machine whose packages are all there may have no lists yet
# (hack/apt-install.sh refreshes them only when it installs).
lookup || { [ "$(id -u)" = 0 ] && apt-get update -qq >/dev/null 2>&1 && lookup; } || {
	echo "error: apt knows no kernel package for linux-image-amd64 (apt-get update?)" >&2
	exit 1
}
dir=$CACHE/${pkg}_$version
if [ -f "$dir/release" ]; then
	echo "$dir"
	exit 0
fi
if [ "${KERNEL_OFFLINE:-}" = 1 ]; then
	echo "error: the guest's kernel $pkg $version is not cached ($dir) and KERNEL_OFFLINE=1: run make test-kernel" >&2
	exit 3
fi

mkdir -p "$CACHE"
TMP=$(mktemp -d "$CACHE/kernel.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
t0=$(date +%s)
# apt-get download writes into the current directory; as root it warns that
# it downloads unsandboxed (the _apt user cannot write TMP): not a failure.
(cd "$TMP" && apt-get download "$pkg=$version" >download.log 2>&1) || {
	cat "$TMP/download.log" >&2
	echo "error: apt-get download $pkg=$version failed" >&2
	exit 1
}
dpkg-deb -x "$TMP"/"$pkg"_*.deb "$TMP/root"
release=$(ls "$TMP/root/lib/modules")
# The bzImage is a boot stub followed by the xz-compressed ELF kernel
# (Debian's CONFIG_KERNEL_XZ): decompress from the xz stream's magic bytes
# to the end of that one stream (what follows it is the stub's trailer; tail
# is left unread there, so it is not part of a pipeline that pipefail sees).
image=$TMP/root/boot/vmlinuz-$release
offset=$(LC_ALL=C grep -obUaP '\xfd7zXZ\x00' "$image" | head -1 | cut -d: -f1)
[ -n "$offset" ] || { echo "error: no xz stream in $image" >&2; exit 1; }
xz -dc --single-stream < <(tail -c +$((offset + 1)) "$image") >"$TMP/vmlinux"
[ "$(head -c 4 "$TMP/vmlinux" | od -An -c | tr -d ' ')" = '177ELF' ] ||
	{ echo "error: what $image holds at offset $offset is not an ELF kernel" >&2; exit 1; }
depmod -b "$TMP/root" "$release"
mkdir -p "$TMP/out/lib"
mv "$TMP/root/lib/modules" "$TMP/out/lib/modules"
mv "$TMP/vmlinux" "$TMP/out/vmlinux"
echo "$release" >"$TMP/out/release"
rm -rf "$dir"
mv "$TMP/out" "$dir"
echo "kernel: $pkg $version cached in $(($(date +%s) - t0))s: $dir ($(du -sm "$dir" | cut -f1) MiB)" >&2
echo "$dir"
