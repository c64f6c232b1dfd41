//go:build integration

package integration

import (
	"fmt"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ipsecgw/provider-ipsec/internal/contract"
	"github.com/ipsecgw/provider-ipsec/test/topology"
)

// TestSingleAgentSilentOnSIGTERM runs the real gateway agent of a gateway
// with replicas 1 (no Lease) in a network namespace whose net1 holds the
// gateway's address, as the CNI's static IPAM gives it to the single pod,
// while the router asks every 100 ms who has that address. Deleting the
// pod sends SIGTERM, and the ReplicaSet's replacement gets the same
// address while the old pod's network namespace still exists: the old
// pod must answer no ARP from the SIGTERM on, so that no request is
// answered twice. A container restart (SIGTERM, then a new agent in the
// same network namespace) must let the interface answer again with its
// address and routes as they were.
func TestSingleAgentSilentOnSIGTERM(t *testing.T) {
	topology.Need(t, "ip", "nsenter")
	bin := buildAgent(t)
	tp := topology.StartBare(t, topology.Options{})
	nsA, err := tp.AddHost("poda", topology.PrivateAddress, contract.SecondaryInterface, macA)
	if err != nil {
		t.Fatal(err)
	}
	arp, err := topology.WatchARP(tp.Router, topology.TenantBridge, topology.PrivateAddress)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { arp.Stop() })
	dir := t.TempDir()
	start := func() (*exec.Cmd, time.Time) {
		return startAgentBinary(t, tp, bin, nsA, "vpn-a", dir, nil), time.Now()
	}
	routes := func() string {
		out, err := tp.Exec(nsA, "ip", "-4", "route", "show")
		if err != nil {
			t.Fatalf("ip route show in %s: %v\n%s", nsA, err, out)
		}
		return out
	}
	before := routes()

	a, began := start()
	waitFor(t, 10*time.Second, "vpn-a answering ARP", func() bool { return answered(arp.Rounds(), began, macA) })

	// The container restarted: SIGTERM, then a new agent in the same
	// network namespace.
	restarted := terminate(t, a)
	if out := link(t, tp, nsA); !strings.Contains(out, "NOARP") {
		t.Errorf("after SIGTERM net1 still answers ARP (no NOARP):\n%s", out)
	}
	if got := routes(); got != before {
		t.Errorf("after SIGTERM the routes changed:\n%s\nwant\n%s", got, before)
	}
	if answered(arp.Rounds(), restarted.Add(2*topology.ARPInterval), macA) {
		t.Errorf("vpn-a answered ARP more than %s after its SIGTERM", 2*topology.ARPInterval)
	}
	a, began = start()
	back := waitFor(t, 10*time.Second, "vpn-a answering ARP again after a restart", func() bool { return answered(arp.Rounds(), began, macA) })
	if out := link(t, tp, nsA); strings.Contains(out, "NOARP") {
		t.Errorf("after the restart net1 still does not answer ARP:\n%s", out)
	}
	if got := routes(); got != before {
		t.Errorf("after the restart the routes changed:\n%s\nwant\n%s", got, before)
	}

	// The pod deleted: SIGTERM, and the replacement pod's net1 with the
	// same address comes up while the old namespace is still there.
	deleted := terminate(t, a)
	if _, err := tp.AddHost("podb", topology.PrivateAddress, contract.SecondaryInterface, macB); err != nil {
		t.Fatal(err)
	}
	replaced := waitFor(t, 10*time.Second, "the replacement answering ARP", func() bool { return answered(arp.Rounds(), deleted, macB) })
	time.Sleep(time.Second)
	rounds := arp.Rounds()
	requests, twice, _ := arp.Stop()
	t.Logf("vpn-a answered again %s after its restart; the replacement answered %s after the deletion; %d ARP requests, %d answered twice",
		back.Round(time.Millisecond), replaced.Round(time.Millisecond), requests, len(twice))
	if len(twice) > 0 {
		t.Errorf("ARP requests for %s answered by both pods: %v", topology.PrivateAddress, twice)
	}
	if last := lastAnswer(rounds, macA); last.After(deleted.Add(2 * topology.ARPInterval)) {
		t.Errorf("vpn-a answered ARP until %s after its SIGTERM, want silent within %s", last.Sub(deleted).Round(time.Millisecond), 2*topology.ARPInterval)
	}
	if got := macsSince(rounds, deleted.Add(2*topology.ARPInterval)); fmt.Sprint(got) != fmt.Sprint([]string{macB}) {
		t.Errorf("after the deletion ARP answered by %v, want %s alone", got, macB)
	}
}

// terminate sends cmd SIGTERM, as the kubelet does, waits until it has
// exited and returns when it was signalled.
func terminate(t *testing.T, cmd *exec.Cmd) time.Time {
	t.Helper()
	at := time.Now()
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	select {
	case <-exited:
	case <-time.After(10 * time.Second):
		t.Fatal("the agent did not exit within 10 s of SIGTERM")
	}
	return at
}

// link returns net1's line of ip -o link show in ns.
func link(t *testing.T, tp *topology.Topology, ns string) string {
	t.Helper()
	out, err := tp.Exec(ns, "ip", "-o", "link", "show", "dev", contract.SecondaryInterface)
	if err != nil {
		t.Fatalf("ip link show in %s: %v\n%s", ns, err, out)
	}
	return out
}
