#!/usr/bin/env bash
# Installs what cluster/openstack/up.sh needs when missing: the purposes base
# and openstack of hack/packages/host.txt (Debian's Neutron API server and
# Keystone among them). up.sh runs it; run it alone to prepare a machine or
# an image. Services are never started by the packages (see
# hack/apt-install.sh).
set -euo pipefail
# shellcheck source=cluster/openstack/lib.sh
source "$(dirname "$0")/lib.sh"

APT_LOG=$OS_STATE/log/apt.log "$ROOT/hack/apt-install.sh" --host base openstack
say "packages: $(dpkg-query -W -f='${Package} ${Version}  ' "${OS_PACKAGES[@]}")"
