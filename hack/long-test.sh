#!/usr/bin/env bash
# Sourced by the hack/ scripts that run one long test with its own knobs
# (hack/crash-rounds.sh, hack/parity.sh, hack/failover-rounds.sh,
# hack/scale.sh).
#
# long_test TEST SUMMARY FAILURES [TAGS PACKAGE]: runs test TEST of
# PACKAGE (default ./test/integration/) with build tag TAGS (default
# integration) without a time-out into a log, prints the log's lines
# matching the ERE SUMMARY (their "file.go:N: " prefix removed) and the
# wall time; when the test fails, the lines the function FAILURES picks
# from the log (on its stdin) and the log's path, and exits with the
# test's code.
long_test() {
	local test=$1 summary=$2 failures=$3 tags=${4:-integration} pkg=${5:-./test/integration/} log start rc=0
	export KUBEBUILDER_ASSETS=${KUBEBUILDER_ASSETS:-$(hack/tools.sh bindir)}
	log=$(mktemp -t "$test.XXXXXX.log")
	start=$(date +%s)
	go test -tags "$tags" -count=1 -v -timeout 0 -run "^$test\$" "$pkg" >"$log" 2>&1 || rc=$?
	# No summary line (the test failed before its first) is no reason to
	# stop here (set -e with pipefail): the failure is reported below.
	{ grep -E "^\s+[a-z_]+_test\.go:[0-9]+: ($summary)" "$log" || true; } | sed -E 's/^\s+[a-z_]+_test\.go:[0-9]+: //'
	echo "wall time $(($(date +%s) - start)) s (build and start of what the test needs included)"
	if [ "$rc" != 0 ]; then
		echo "FAILED; the whole log: $log" >&2
		"$failures" <"$log" >&2
		exit "$rc"
	fi
	rm -f "$log"
}
