#!/usr/bin/env bash
# Generates N random Gateway specs (default 20000), renders each and loads
# every one the validator accepts into a real charon over VICI: none may be
# refused (test/integration/parity_test.go, TestValidatorCharonParity; make
# test runs 300). Prints the seed, how many specs the validator accepted and
# its refusals by field. As root (the package's TestMain starts envtest and
# the charon runs unprivileged in a directory of its own). SEED repeats a
# run's specs.
#
#   hack/parity.sh                  # 20000 specs
#   N=100000 SEED=42 hack/parity.sh
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=hack/long-test.sh
source hack/long-test.sh
export PARITY_N=${N:-20000}
[ -n "${SEED:-}" ] && export PARITY_SEED=$SEED
refusals() { grep -E -A3 'charon refuses|FAIL' | head -60; }
long_test TestValidatorCharonParity '[0-9]+ specs|.*validator accepted' refusals
