#!/usr/bin/env bash
# Kills the provider at random points of creating Neutron objects and cuts
# create answers, ROUNDS rounds (default 50), then counts the Neutron
# objects: exactly one per managed resource, none after the deletions
# (test/integration/crash_test.go, TestCrashSafeCreateKilled; make test
# runs 3 rounds). Prints each round's figures and the totals. As root: the
# real Keystone + Neutron start on ITEST_KEYSTONE_PORT / ITEST_NEUTRON_PORT
# (default 15000 / 19696). SEED repeats a run's random choices.
#
#   hack/crash-rounds.sh            # 50 rounds
#   ROUNDS=10 SEED=42 hack/crash-rounds.sh
set -euo pipefail
cd "$(dirname "$0")/.."
export KUBEBUILDER_ASSETS=${KUBEBUILDER_ASSETS:-$(hack/tools.sh bindir)}
export ITEST_CRASH_ROUNDS=${ROUNDS:-50}
[ -n "${SEED:-}" ] && export ITEST_CRASH_SEED=$SEED
log=$(mktemp -t crash-rounds.XXXXXX.log)
start=$(date +%s)
rc=0
go test -tags integration -count=1 -v -timeout 0 -run '^TestCrashSafeCreateKilled$' ./test/integration/ >"$log" 2>&1 || rc=$?
grep -E '^\s+crash_test\.go:[0-9]+: (seed|round|CRASH-SAFE)' "$log" | sed -E 's/^\s+crash_test\.go:[0-9]+: //'
echo "wall time $(($(date +%s) - start)) s (build, API server and Neutron start included)"
if [ $rc != 0 ]; then
	echo "FAILED; the whole log: $log" >&2
	grep -E '^\s+crash_test\.go:[0-9]+: ' "$log" | grep -vE 'seed|round [0-9]+: [0-9]+ create|CRASH-SAFE' | head -40 >&2
	exit $rc
fi
rm -f "$log"
