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
# shellcheck source=hack/long-test.sh
source hack/long-test.sh
export ITEST_CRASH_ROUNDS=${ROUNDS:-50}
[ -n "${SEED:-}" ] && export ITEST_CRASH_SEED=$SEED
findings() { grep -E '^\s+crash_test\.go:[0-9]+: ' | grep -vE 'seed|round [0-9]+: [0-9]+ create|CRASH-SAFE' | head -40; }
long_test TestCrashSafeCreateKilled 'seed|round|CRASH-SAFE' findings
