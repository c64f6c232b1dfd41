#!/usr/bin/env bash
# Builds the offline toolchain from the Go module proxy into a cache outside
# the repository, one directory per wrapper module under hack/tools/, keyed by
# a hash of that module's go.mod, go.sum and sources, the Go version and how
# it is built (its build function, gobuild, the versions they stamp), so
# repeated runs on one machine reuse what is built and an edited build flag
# rebuilds.
#
#   hack/tools.sh build    build what is missing, printing progress per tool
#   hack/tools.sh bindir   print the directory that holds every tool (symlinks)
#   hack/tools.sh dir M    build wrapper module M if missing (progress on
#                          stderr) and print the directory of its binaries
#
# TOOLS_CACHE overrides the cache root (default: $XDG_CACHE_HOME or
# ~/.cache, then provider-ipsec/tools).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
MODS=$ROOT/hack/tools
CACHE=${TOOLS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/provider-ipsec/tools}
K8S_VERSION=v1.35.4
XP_VERSION=v2.4.0
CRANK_VERSION=v2.2.1
CONTAINERD_VERSION=v2.1.5
GOLANGCI_VERSION=v2.15.0
ARGOCD_VERSION=v3.2.0

# key MODULE prints the cache key of one wrapper module: its files, the Go
# version, and the text of build_MODULE and gobuild (bash's canonical form)
# with the values of the *_VERSION variables they name.
key() {
	local how v
	how=$(declare -f gobuild "build_$1")
	{
		(cd "$MODS/$1" && cat go.mod go.sum && find . -name '*.go' | sort | xargs -r cat && go env GOVERSION)
		echo "$how"
		for v in $(grep -o '\$[A-Z0-9_]*_VERSION' <<<"$how" | sort -u | tr -d '$'); do echo "$v=${!v}"; done
	} | sha256sum | cut -c1-16
}

# modules prints the wrapper modules that build builds and bindir links: all
# but golangci, which only make lint needs, and argocd, which only the GitOps
# stack needs (both through dir), so that make dev does not build them.
modules() {
	for d in "$MODS"/*/; do
		d=$(basename "$d")
		case $d in golangci | argocd) ;; *) echo "$d" ;; esac
	done
}

# moddir MODULE prints where that module's binaries are cached.
moddir() { echo "$CACHE/$1-$(key "$1")"; }

# bindir prints the directory of symlinks to every tool of this checkout.
bindir() {
	local all=""
	for m in $(modules); do all+=$(key "$m"); done
	echo "$CACHE/bin-$(echo "$all" | sha256sum | cut -c1-16)"
}

# gobuild OUT PKG [LDFLAGS [TAGS]] builds one static binary from the current
# module. All that shapes the binary is in its arguments, not in the
# environment, so that the key sees it.
gobuild() {
	local out=$1 pkg=$2 ld=${3:-} tags=${4:-} t0
	t0=$(date +%s)
	printf '  %-28s ' "$(basename "$out")"
	CGO_ENABLED=0 go build -trimpath -tags "$tags" -ldflags "-s -w $ld" -o "$out" "$pkg"
	echo "built in $(($(date +%s) - t0))s"
}

# module MODULE: builds a wrapper module's tools into a fresh directory and
# renames it into place only when all of them built, so an interrupted build
# never leaves a half-filled cache entry behind.
module() {
	local m=$1 dir
	dir=$(moddir "$m")
	if [ -d "$dir" ]; then
		echo "tools: $m cached ($dir)"
		return
	fi
	echo "tools: building $m"
	TMP=$dir.tmp.$$
	rm -rf "$TMP"
	mkdir -p "$TMP"
	trap 'rm -rf "$TMP"' EXIT
	cd "$MODS/$m"
	"build_$m" "$TMP"
	cd "$ROOT"
	mv "$TMP" "$dir"
	trap - EXIT
}

build_kubernetes() {
	local ld="-X k8s.io/component-base/version.gitVersion=$K8S_VERSION -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=35"
	for c in kube-apiserver kube-controller-manager kubectl kubelet kube-scheduler kube-proxy; do
		gobuild "$1/$c" "k8s.io/kubernetes/cmd/$c" "$ld"
	done
}

# containerd without btrfs (it needs cgo); the node uses overlayfs.
build_containerd() {
	for c in containerd containerd-shim-runc-v2 ctr; do
		gobuild "$1/$c" "github.com/containerd/containerd/v2/cmd/$c" \
			"-X github.com/containerd/containerd/v2/version.Version=$CONTAINERD_VERSION" no_btrfs
	done
}

build_multus() { gobuild "$1/multus" gopkg.in/k8snetworkplumbingwg/multus-cni.v4/cmd/multus; }

build_etcd() { gobuild "$1/etcd" . ; }

build_crossplane() {
	gobuild "$1/crossplane" github.com/crossplane/crossplane/v2/cmd/crossplane \
		"-X github.com/crossplane/crossplane-runtime/v2/pkg/version.version=$XP_VERSION"
	# Core's own CRDs, which 'crossplane core init' installs (CRDS_PATH).
	cp -r "$(go list -m -f '{{.Dir}}' github.com/crossplane/crossplane/v2)/cluster/crds" "$1/crossplane-crds"
	chmod -R u+w "$1/crossplane-crds"
}

build_crank() {
	gobuild "$1/crank" github.com/crossplane/crossplane/v2/cmd/crank \
		"-X github.com/crossplane/crossplane-runtime/v2/pkg/version.version=$CRANK_VERSION"
}

# golangci-lint stamped with its version (its main reads it; without it,
# `version` shows the wrapper module's).
build_golangci() {
	gobuild "$1/golangci-lint" github.com/golangci/golangci-lint/v2/cmd/golangci-lint \
		"-X main.version=${GOLANGCI_VERSION#v} -X main.date=module"
}

# Argo CD's multi-call binary, stamped with its version, under the names of
# the two components the GitOps stack runs (it dispatches on its name), and
# Argo CD's CRDs (Application, AppProject, ApplicationSet).
build_argocd() {
	gobuild "$1/argocd" github.com/argoproj/argo-cd/v3/cmd \
		"-X github.com/argoproj/argo-cd/v3/common.version=${ARGOCD_VERSION#v}"
	ln -s argocd "$1/argocd-application-controller"
	ln -s argocd "$1/argocd-repo-server"
	cp -r "$(go list -m -f '{{.Dir}}' github.com/argoproj/argo-cd/v3)/manifests/crds" "$1/argocd-crds"
	chmod -R u+w "$1/argocd-crds"
}

build() {
	local t0 bin
	t0=$(date +%s)
	for m in $(modules); do module "$m"; done
	bin=$(bindir)
	rm -rf "$bin.tmp"
	mkdir -p "$bin.tmp"
	for m in $(modules); do
		for f in "$(moddir "$m")"/*; do ln -s "$f" "$bin.tmp/$(basename "$f")"; done
	done
	rm -rf "$bin"
	mv "$bin.tmp" "$bin"
	echo "tools: ready in $bin ($(($(date +%s) - t0))s)"
}

case "${1:-build}" in
build) build ;;
bindir) bindir ;;
dir) [ -d "$MODS/${2:-}" ] || { echo "usage: $0 dir MODULE (one of: $(cd "$MODS" && echo */))" >&2; exit 2; }
	module "$2" >&2
	moddir "$2" ;;
*) echo "usage: $0 build|bindir|dir MODULE" >&2; exit 2 ;;
esac
