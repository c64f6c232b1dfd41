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
export KUBEBUILDER_ASSETS=${KUBEBUILDER_ASSETS:-$(hack/tools.sh bindir)}
export PARITY_N=${N:-20000}
[ -n "${SEED:-}" ] && export PARITY_SEED=$SEED
log=$(mktemp -t parity.XXXXXX.log)
start=$(date +%s)
rc=0
go test -tags integration -count=1 -v -timeout 0 -run '^TestValidatorCharonParity$' ./test/integration/ >"$log" 2>&1 || rc=$?
grep -E '^\s+parity_test\.go:[0-9]+: [0-9]+ specs|validator accepted' "$log" | sed -E 's/^\s+parity_test\.go:[0-9]+: //'
echo "wall time $(($(date +%s) - start)) s (build and API server start included)"
if [ $rc != 0 ]; then
	echo "FAILED; the whole log: $log" >&2
	grep -E -A3 'charon refuses|FAIL' "$log" | head -60 >&2
	exit $rc
fi
rm -f "$log"
