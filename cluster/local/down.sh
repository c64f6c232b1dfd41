#!/usr/bin/env bash
# Stops every process of the local stack by its recorded pid, newest first
# (the node first: cluster/node/down.sh, which also restores what the node
# changed on the host), and removes $STATE.
set -euo pipefail
# shellcheck source=cluster/local/lib.sh
source "$(dirname "$0")/lib.sh"
removable STATE
"$ROOT/cluster/site/site.sh" down >/dev/null
"$ROOT/cluster/node/down.sh" >/dev/null
"$ROOT/cluster/local/argocd.sh" down
stop provider function crossplane registry kcm apiserver etcd
rm -rf "$STATE"
log "local stack down"
