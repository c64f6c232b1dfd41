#!/usr/bin/env bash
# Stops every process of the local stack by its recorded pid, newest first
# (the node first: cluster/node/down.sh, which also restores what the node
# changed on the host), and removes $STATE.
set -euo pipefail
# shellcheck source=cluster/local/lib.sh
source "$(dirname "$0")/lib.sh"
case "$STATE" in /|"$HOME"|"$ROOT") die "refusing to remove STATE=$STATE" ;; esac
"$ROOT/cluster/site/down.sh" >/dev/null
"$ROOT/cluster/node/down.sh" >/dev/null
for p in provider fpt crossplane kcm apiserver etcd; do
	stop "$p"
done
rm -rf "$STATE"
log "local stack down"
