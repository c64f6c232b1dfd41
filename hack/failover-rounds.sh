#!/usr/bin/env bash
# Measures the client host's outage (site.sh probe: a new TCP connection
# every 50 ms, so 50 ms resolution) in each failure case of an
# active/standby gateway, ROUNDS rounds each (default 10): the one pod of
# replicas 1 deleted, a rollout of a new gateway image with replicas 1,
# then with replicas 2 the active pod deleted, the active pod's node lost
# (and returned), a rollout with replicas 2, and FAILOVERS failovers in a
# row (default 20; counted with the deleted active pods). It runs
# TestActiveStandby (test/e2e/standby_test.go, which make test-nodes runs
# with one round) on two nodes and prints each round's figure and, per
# case, the count, min, median and max (the OUTAGES lines; CLAIM LAG: how
# long after the Gateway the claim named each new active pod). As root, after
# make build xpkg images, one run at a time on a machine (the nodes use
# fixed host paths):
#
#   hack/failover-rounds.sh
#   ROUNDS=3 FAILOVERS=20 hack/failover-rounds.sh
#
# Ten rounds take about half an hour.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=hack/long-test.sh
source hack/long-test.sh
export NODES=2 E2E_STANDBY_ROUNDS=${ROUNDS:-10} E2E_FAILOVERS=${FAILOVERS:-20}
findings() { grep -E 'standby_test\.go:[0-9]+: |--- FAIL|panic' | grep -vE 'OUTAGES|CLAIM LAG|outage of|outages \[' | head -60; }
long_test TestActiveStandby 'OUTAGES|CLAIM LAG|XR circuit breaker|.*outage of|replicas [12], rollout|[0-9]+ failovers in a row|ARP watch' findings e2e ./test/e2e/
