#!/usr/bin/env bash
# make test-integration: the integration tests (tag integration) in shards
# that run at the same time.
#
# test/integration's tests wait far more than they compute: on timers
# (DPD, retransmissions, Leases, polls), on Neutron and its agents, on
# fixed windows that count requests. One after another they took 1600 s
# of two cores that stayed mostly idle. Here the package's test binary is
# built once and run as one process per shard, each with an envtest (its
# own kube-apiserver and etcd) and, for the tests that need them, a
# Keystone + Neutron of its own on ports of its own (ITEST_KEYSTONE_PORT,
# ITEST_NEUTRON_PORT plus 200 per shard; the agents' instance 100 above),
# so that no shard sees another's objects. Network namespaces are named
# after the process (test/topology) or the test. The other integration
# packages (test/configuration, test/packages, test/images) run beside
# them in one go test.
#
# The shards below name the slow tests (hack/testjson slowest: their
# seconds); every other test of the package runs in the shard "rest". A
# test named here that the package does not have fails the run.
#
# Each shard's `go test -json` stream goes to
# $OUTPUT/test-integration-<shard>.json; when all have ended, each is
# printed as go test prints it (hack/testjson print), then each stream's
# span and the 10 slowest tests (hack/testjson slowest). Exits non-zero
# when a shard failed.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
OUTPUT=${OUTPUT:-_output}
GO=${GO:-go}
: "${KUBEBUILDER_ASSETS:?run it with make test-integration, which sets it}"
keystone=${ITEST_KEYSTONE_PORT:-15000}
neutron=${ITEST_NEUTRON_PORT:-19696}
pkg=github.com/ipsecgw/provider-ipsec/test/integration

# shard name, then its tests. What keeps each apart is what it waits on.
shards=(
	# 9 MRs each under fixed windows at rest and in storms of 429, 503
	# and refused connections.
	"storms TestOpenStackFailing TestOpenStackPolite"
	# Neutron's real agents: one AGENTS=1 Keystone + Neutron for these;
	# the provider binary on API servers of its own.
	"agents TestNeutronAgentsEnforcePortSecurity TestNodeAddressPairs TestTopologyUplink TestTunnelThroughFloatingIP TestRecoverBareMRs TestSafeStart"
	# Managed resources against Neutron one after another, polls at rest,
	# the provider binary killed.
	"neutron TestOpenStackKindsSyncEveryObject TestReferencesFollowNewNeutronPortAtRest TestReferencesFollowRecomposedPort TestRouterRoutes TestCrashSafeCreateKilled TestFloatingIPBindingCutoverUnnudged"
	# charon's and the agent's timers: retransmissions, DPD, the
	# watchdog, Leases.
	"charon TestAlwaysOnSimultaneous TestAgentSilentPeer TestAddressExpiresWithTheAgent TestAlwaysOnPeerDownLongerThanDPD TestAlwaysOnPeerDownAtLoad TestAlwaysOnPeerDeletesIKESA TestAlwaysOnPeerDeletesChildSA TestAgentWatchdog TestLeaderElection TestSingleAgentSilentOnSIGTERM"
)

mkdir -p "$OUTPUT"
bin=$OUTPUT/integration.test
$GO test -c -tags integration -o "$bin" ./test/integration
bin=$(realpath "$bin")
have=$(sed -n 's/^func \(Test[A-Za-z0-9_]*\)(t \*testing\.T).*/\1/p' test/integration/*_test.go)

named=()
for s in "${shards[@]}"; do
	read -r -a f <<<"$s"
	for t in "${f[@]:1}"; do
		grep -qx "$t" <<<"$have" || { echo "hack/test-integration.sh: shard ${f[0]} names $t, which test/integration does not have" >&2; exit 1; }
		named+=("$t")
	done
done
# alternatives NAME...: the regular expression of exactly those tests.
alternatives() {
	local IFS='|'
	echo "^($*)\$"
}

pids=() names=()
# shard NAME INDEX ARGS...: the test binary in test/integration (its
# relative paths), its stream to the shard's file.
shard() {
	local name=$1 i=$2
	shift 2
	(cd test/integration &&
		exec env ITEST_KEYSTONE_PORT=$((keystone + 200 * i)) ITEST_NEUTRON_PORT=$((neutron + 200 * i)) \
			"$GO" tool test2json -t -p "$pkg" "$bin" -test.v=test2json -test.count=1 -test.timeout=30m "$@") \
		>"$OUTPUT/test-integration-$name.json" 2>&1 &
	pids+=($!) names+=("$name")
}
i=0
for s in "${shards[@]}"; do
	read -r -a f <<<"$s"
	shard "${f[0]}" $((i += 1)) -test.run "$(alternatives "${f[@]:1}")"
done
shard rest 0 -test.skip "$(alternatives "${named[@]}")"
$GO test -json -tags integration -count=1 -timeout 30m ./test/configuration/... ./test/packages/... ./test/images/... \
	>"$OUTPUT/test-integration-packages.json" 2>&1 &
pids+=($!) names+=(packages)

rc=0
for p in "${pids[@]}"; do
	wait "$p" || rc=1
done
# A shard that go test's -timeout ended (a panic: no TestMain cleanup)
# leaves its Keystone + Neutron running; stop them, and fail.
for ((k = 0; k <= ${#shards[@]}; k++)); do
	n=$((neutron + 200 * k))
	for state in "$ROOT/.work/itest-openstack-$n" "$ROOT/.work/itest-openstack-agents-$((n + 100))"; do
		[ -e "$state" ] || continue
		echo "hack/test-integration.sh: $state was left running (a time-out?): stopping it" >&2
		OS_STATE=$state cluster/openstack/down.sh >/dev/null || true
		rc=1
	done
done
streams=()
for n in "${names[@]}"; do
	streams+=("$OUTPUT/test-integration-$n.json")
	$GO run ./hack/testjson print <"${streams[-1]}"
done
# Each shard's span and the slowest tests: what to move between shards.
$GO run ./hack/testjson slowest -n 10 "${streams[@]}"
exit $rc
