#!/usr/bin/env bash
# Installs what cluster/openstack/up.sh needs when missing: the purposes base
# and openstack of hack/packages/host.txt (Debian's Neutron API server and
# Keystone among them), with AGENTS=1 also agents (the L2 and L3 agents and
# RabbitMQ). up.sh runs it; run it alone to prepare a machine or
# an image. Services are never started by the packages (see
# hack/apt-install.sh).
set -euo pipefail
# shellcheck source=cluster/openstack/lib.sh
source "$(dirname "$0")/lib.sh"

purposes=(base openstack)
pkgs=("${OS_PACKAGES[@]}")
if [ "${AGENTS:-0}" = 1 ]; then
	purposes+=(agents)
	pkgs+=("${AGENTS_PACKAGES[@]}")
fi
APT_LOG=$OS_STATE/log/apt.log "$ROOT/hack/apt-install.sh" --host "${purposes[@]}"
say "packages: $(dpkg-query -W -f='${Package} ${Version}  ' "${pkgs[@]}")"
