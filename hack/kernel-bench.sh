#!/usr/bin/env bash
# Runs the kernel tier's benchmarks (issue 31's case 5: the guest tests
# TestBench... of test/kernel/guest, which no group of make test-kernel
# runs) in one boot of its guest and prints their figures:
#
#   - one TCP stream through a tunnel on the kernel's ESP, with no tunnel,
#     and through a tunnel on libipsec (charon's userspace ESP), in Mbit/s
#     and as ratios;
#   - the time for one gateway to bring up 100 tunnels to 100 peer
#     identities, from the agent's start and after its charon's restart.
#
# The guest runs with KVM where /dev/kvm works and the CPU has hardware
# virtualisation, under TCG emulation otherwise (KERNEL_ACCEL=kvm or tcg
# overrides; test/kernel's Accel). Under TCG only the ratios mean
# something. Needs what make test-kernel needs: the gateway image (make
# images, as root) and the guest's kernel (hack/kernel.sh downloads it).
# Each benchmark boots a guest of its own; KERNEL_RUN, -test.run patterns
# of package guest separated by spaces, chooses others.
set -euo pipefail
cd "$(dirname "$0")/.."
hack/kernel.sh >/dev/null
log=$(mktemp)
trap 'rm -f "$log"' EXIT
# One boot per benchmark: each gets the tier's time bound of a boot.
for run in ${KERNEL_RUN:-^TestBenchThroughput\$ ^TestBenchTunnelsUp\$}; do
	if ! KERNEL_RUN=$run go test -tags kernel -count=1 -timeout 30m -run '^TestGuest$' -v ./test/kernel/ >"$log" 2>&1; then
		cat "$log"
		echo "error: $run failed (its output above)" >&2
		exit 1
	fi
	grep -q 'bench: ' "$log" || { cat "$log"; echo "error: $run printed no figures: is the gateway image built (make images)?" >&2; exit 1; }
	echo "$run: $(grep -o 'boot to power-off.*' "$log")"
	grep -o 'bench: .*' "$log"
done
