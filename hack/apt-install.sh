#!/usr/bin/env bash
# Installs the given Debian packages that are missing, with
# --no-install-recommends, and never lets a package start its service: when
# /usr/sbin/policy-rc.d does not exist, one that forbids starting services is
# put there for the install and removed afterwards. An outdated package list
# (404s) is refreshed once. APT_LOG names the log (default: a temp file),
# written only when something is installed.
#
#   hack/apt-install.sh PACKAGE...
#   hack/apt-install.sh --host [PURPOSE]...
#
# --host: the packages of hack/packages/host.txt, of the purposes given or
# all of them.
set -euo pipefail
if [ "${1:-}" = --host ]; then
	shift
	list=$(dirname "$0")/packages/host.txt
	for p in "$@"; do
		awk -v p="$p" '{sub(/#.*/, "")} $2 == p {found = 1} END {exit !found}' "$list" ||
			{ echo "error: no purpose $p in $list" >&2; exit 2; }
	done
	mapfile -t pkgs < <(awk -v want=" $* " '{sub(/#.*/, "")} NF && (want == "  " || index(want, " " $2 " ")) {print $1}' "$list")
	set -- "${pkgs[@]}"
fi
[ $# -gt 0 ] || exit 0
# One dpkg-query for all (it fails naming the packages it does not know).
installed=" $({ dpkg-query -W -f='${Package} ${Status}\n' "$@" 2>/dev/null || true; } | awk '/ install ok installed$/ {printf "%s ", $1}')"
missing=()
for p in "$@"; do
	[[ $installed == *" $p "* ]] || missing+=("$p")
done
[ ${#missing[@]} = 0 ] && exit 0
[ "$(id -u)" = 0 ] || { echo "error: installing ${missing[*]} needs root" >&2; exit 1; }

made_policy=false
if [ ! -e /usr/sbin/policy-rc.d ]; then
	printf '#!/bin/sh\n# installed by hack/apt-install.sh for the duration of an apt install\nexit 101\n' >/usr/sbin/policy-rc.d
	chmod 755 /usr/sbin/policy-rc.d
	made_policy=true
fi
log=${APT_LOG:-$(mktemp -t apt-install.XXXXXX.log)}
mkdir -p "$(dirname "$log")"
cleanup() { if $made_policy; then rm -f /usr/sbin/policy-rc.d; fi; }
trap cleanup EXIT

echo "apt: installing ${missing[*]} (log: $log)"
export DEBIAN_FRONTEND=noninteractive
opts=(-o DPkg::Lock::Timeout=600 -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold)
if ! apt-get "${opts[@]}" install -y --no-install-recommends "${missing[@]}" >"$log" 2>&1; then
	echo "apt: install failed, refreshing the package lists and retrying"
	apt-get "${opts[@]}" update >>"$log" 2>&1
	apt-get "${opts[@]}" install -y --no-install-recommends "${missing[@]}" >>"$log" 2>&1 || {
		echo "error: apt-get install ${missing[*]} failed: see $log" >&2
		exit 1
	}
fi
