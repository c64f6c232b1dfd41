#!/usr/bin/env bash
# Installs Debian's Neutron API server and Keystone (and what they need) when
# missing. up.sh runs it; run it alone to prepare a machine or an image.
# Services are never started by the packages: when /usr/sbin/policy-rc.d does
# not exist, one that forbids starting them is put there for the install and
# removed afterwards.
set -euo pipefail
# shellcheck source=cluster/openstack/lib.sh
source "$(dirname "$0")/lib.sh"

versions() { dpkg-query -W -f='${Package} ${Version}  ' "${OS_PACKAGES[@]}"; }
missing=()
for p in "${OS_PACKAGES[@]}" curl; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q '^install ok installed$' || missing+=("$p")
done
if [ ${#missing[@]} = 0 ]; then
	say "packages present: $(versions)"
	exit 0
fi
[ "$(id -u)" = 0 ] || die "installing ${missing[*]} needs root"

made_policy=false
if [ ! -e /usr/sbin/policy-rc.d ]; then
	printf '#!/bin/sh\n# installed by cluster/openstack/install.sh for the duration of an apt install\nexit 101\n' >/usr/sbin/policy-rc.d
	chmod 755 /usr/sbin/policy-rc.d
	made_policy=true
fi
cleanup() { if $made_policy; then rm -f /usr/sbin/policy-rc.d; fi; }
trap cleanup EXIT

mkdir -p "$OS_STATE/log"
aptlog=$OS_STATE/log/apt.log
say "installing ${missing[*]} (log: $aptlog)"
export DEBIAN_FRONTEND=noninteractive
apt_opts=(-o DPkg::Lock::Timeout=600 -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold)
# An outdated package list makes the install fail on 404s; refresh only then.
if ! apt-get "${apt_opts[@]}" install -y --no-install-recommends "${missing[@]}" >"$aptlog" 2>&1; then
	say "install failed, refreshing the package lists and retrying"
	apt-get "${apt_opts[@]}" update >>"$aptlog" 2>&1
	apt-get "${apt_opts[@]}" install -y --no-install-recommends "${missing[@]}" >>"$aptlog" 2>&1 ||
		die "apt-get install ${missing[*]} failed: see $aptlog"
fi
say "installed: $(versions)"
