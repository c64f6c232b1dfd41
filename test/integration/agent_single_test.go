//go:build integration

package integration

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ipsecgw/provider-ipsec/internal/contract"
	"github.com/ipsecgw/provider-ipsec/test/topology"
)

// TestSingleAgentSilentOnSIGTERM runs the real gateway agent of a gateway
// with replicas 1 (no --lease; the handover on the gateway's Lease, found
// by --status-configmap, of a real API server) in a network namespace
// whose net1 holds the gateway's address, as the CNI's static IPAM gives
// it to the single pod, while the router asks every 100 ms who has that
// address. A container restart (SIGTERM, then a new agent in the same
// network namespace) must let the interface answer again with its address
// and routes as they were. Deleting the pod sends SIGTERM a second or two
// after the ReplicaSet started the replacement, whose net1 gets the same
// address, here with arp_ignore 8, as the provider's network attachment
// gives it once an agent of the pod's image reported in the status
// ConfigMap that it resets it (each agent must report its own pod): the
// replacement must answer no ARP while the old pod runs, the old pod none
// from its SIGTERM on, and no request may be answered twice.
func TestSingleAgentSilentOnSIGTERM(t *testing.T) {
	topology.Need(t, "ip", "nsenter", "sysctl")
	ctx := context.Background()
	bin := buildAgent(t)
	tp := topology.StartBare(t, topology.Options{})
	nsA, err := tp.AddHost("poda", topology.PrivateAddress, contract.SecondaryInterface, macA)
	if err != nil {
		t.Fatal(err)
	}
	kns := fmt.Sprintf("single-%d", nsSeq.Add(1))
	for _, o := range []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: kns}},
		&coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: kns, Name: "vpn"}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: kns, Name: "vpn" + contract.StatusSuffix}},
	} {
		if err := kube.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	arp, err := topology.WatchARP(tp.Router, topology.TenantBridge, topology.PrivateAddress)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { arp.Stop() })
	start := func(ns, pod string) (*exec.Cmd, time.Time) {
		dir := t.TempDir()
		return startAgentBinary(t, tp, bin, ns, pod, dir, []string{"KUBECONFIG=" + apiIn(t, ns, dir)},
			"--namespace="+kns, "--pod-name="+pod, "--status-configmap=vpn"+contract.StatusSuffix), time.Now()
	}
	routes := func() string {
		out, err := tp.Exec(nsA, "ip", "-4", "route", "show")
		if err != nil {
			t.Fatalf("ip route show in %s: %v\n%s", nsA, err, out)
		}
		return out
	}
	before := routes()

	a, began := start(nsA, "vpn-a")
	waitFor(t, 10*time.Second, "vpn-a answering ARP", func() bool { return answered(arp.Rounds(), began, macA) })
	silentStart := func(pod string) {
		t.Helper()
		cm := &corev1.ConfigMap{}
		waitFor(t, 10*time.Second, pod+" reported in the status ConfigMap that it resets arp_ignore", func() bool {
			return kube.Get(ctx, client.ObjectKey{Namespace: kns, Name: "vpn" + contract.StatusSuffix}, cm) == nil &&
				cm.Data[contract.KeySilentStart] == pod
		})
	}
	silentStart("vpn-a")

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
	a, began = start(nsA, "vpn-a")
	back := waitFor(t, 10*time.Second, "vpn-a answering ARP again after a restart", func() bool { return answered(arp.Rounds(), began, macA) })
	if out := link(t, tp, nsA); strings.Contains(out, "NOARP") {
		t.Errorf("after the restart net1 still does not answer ARP:\n%s", out)
	}
	if got := routes(); got != before {
		t.Errorf("after the restart the routes changed:\n%s\nwant\n%s", got, before)
	}

	// The pod deleted: the replacement's net1 comes up with the same
	// address and arp_ignore 8, its agent starts, and the old pod gets
	// SIGTERM only later. (A CNI's tuning plugin would set arp_ignore
	// just after the macvlan plugin brought the link up; here it is set
	// before.)
	nsB, err := tp.AddPod("podb", contract.SecondaryInterface, macB)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range [][]string{
		{"sysctl", "-qw", "net.ipv4.conf." + contract.SecondaryInterface + ".arp_ignore=8"},
		{"ip", "address", "add", fmt.Sprintf("%s/%d", topology.PrivateAddress, topology.PrivatePrefixLength), "dev", contract.SecondaryInterface},
		{"ip", "link", "set", contract.SecondaryInterface, "up"},
	} {
		if out, err := tp.Exec(nsB, c...); err != nil {
			t.Fatalf("%v in %s: %v\n%s", c, nsB, err, out)
		}
	}
	start(nsB, "vpn-b")
	waiting := time.Now()
	time.Sleep(3 * time.Second)
	if got := macsSince(arp.Rounds(), waiting); fmt.Sprint(got) != fmt.Sprint([]string{macA}) {
		t.Errorf("while vpn-a runs, ARP for %s answered by %v, want %s alone: the replacement answers before the handover", topology.PrivateAddress, got, macA)
	}
	silentStart("vpn-b")
	deleted := terminate(t, a)
	waitFor(t, 10*time.Second, "the replacement answering ARP", func() bool { return answered(arp.Rounds(), deleted, macB) })
	time.Sleep(time.Second)
	rounds := arp.Rounds()
	replaced := firstAnswer(rounds, deleted, macB).Sub(deleted)
	requests, twice, _ := arp.Stop()
	t.Logf("vpn-a answered again %s after its restart; the replacement answered %s after vpn-a's SIGTERM; %d ARP requests, %d answered twice",
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
