#!/usr/bin/env bash
# Installs Debian's Neutron API server and Keystone (and what they need) when
# missing. up.sh runs it; run it alone to prepare a machine or an image.
# Services are never started by the packages (see hack/apt-install.sh).
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
mkdir -p "$OS_STATE/log"
say "installing ${missing[*]} (log: $OS_STATE/log/apt.log)"
APT_LOG=$OS_STATE/log/apt.log "$OS_ROOT/hack/apt-install.sh" "${missing[@]}"
say "installed: $(versions)"
