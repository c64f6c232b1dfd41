#!/usr/bin/env bash
# The scale benchmark (test/e2e/scale_test.go, TestScale; docs/scale.md):
# N claims with allocated floating IPs (default 10) on a local stack
# without a node and its own Keystone + Neutron, the provider behind a
# counting proxy. Prints a table: time to Ready (median, max), the
# provider's RSS and CPU at rest over WINDOW (default 10m), Neutron
# requests per managed resource per poll (--poll=POLL, default 1m),
# Crossplane's XR circuit breaker opens, and the same under a 429 storm
# of STORM (default 3m) with Retry-After: RETRY_AFTER (default 20 s), with
# the machine's load average beside each phase. make test-e2e runs it as a
# smoke (3 claims, --poll=10s, 30 s window, 30 s storm). As root (the real
# Keystone + Neutron); builds the provider and the packages first. The
# stacks find free ports themselves (E2E_OS_KEYSTONE_PORT /
# E2E_OS_NEUTRON_PORT fix Keystone's and Neutron's).
#
#   hack/scale.sh                       # N=10, 10 min at rest
#   N=50 hack/scale.sh
#   N=3 WINDOW=1m STORM=1m POLL=20s hack/scale.sh
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=hack/long-test.sh
source hack/long-test.sh
make -s build xpkg >/dev/null
export E2E_SCALE_N=${N:-10} E2E_SCALE_WINDOW=${WINDOW:-10m} E2E_SCALE_POLL=${POLL:-1m} \
	E2E_SCALE_STORM=${STORM:-3m} E2E_SCALE_RETRY_AFTER=${RETRY_AFTER:-20}
findings() { grep -E -A3 '^\s+[a-z_]+_test\.go:[0-9]+: |FAIL' | grep -vE '_test\.go:[0-9]+: (\||scale:)' | head -60; }
long_test TestScale '\||scale:' findings e2e ./test/e2e/
