//go:build e2e

package e2e

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ipsecgw/provider-ipsec/test/topology"
)

// TestLiveRunbook follows the migration runbook with a live tunnel: the
// `make dev` stack with its node and site (cluster/site), where a client
// site's strongSwan has its tunnel up with the hand-built VM gateway that
// holds the floating IP, and a client host's connections to the tenant
// service are carried by the VM. It runs the runbook (liveRunbook) for
// each style of IPsecGateway on the one stack: first the one dev.sh
// applied (CLAIM: the namespaced IPsecGateway by default), then, after
// its deletion, the other, applied by dev.sh run again; the provider
// upgrade only with the first (a stack's provider is upgraded once). Then
// make dev's job, and on the stack it leaves the gateway pod's node lost
// and returned (nodeLostSingle).
func TestLiveRunbook(t *testing.T) {
	stackLanes.take(t)
	if os.Getenv("NODE") == "0" {
		t.Skip("NODE=0: no node runs the gateway pod")
	}
	s := startStack(t)
	t.Cleanup(func() {
		if t.Failed() {
			siteLogTails(t, s.state)
			// What the node's port let through and dropped.
			out, _ := runScript(s.env, "cluster/site/site.sh", "status")
			t.Logf("site.sh status (the qrouter's floating IPs, the node ports' rules and counters):\n%s", out)
		}
	})
	if _, err := os.Stat(filepath.Join(s.state, "site")); err != nil {
		t.Fatalf("the stack has no site (cluster/site/site.sh up, run by dev.sh with the node): %v", err)
	}
	for i, xr := range composites() {
		if !t.Run(xr.name, func(t *testing.T) {
			if i > 0 {
				s.devJob(t, xr)
			}
			s.liveRunbook(t, i == 0)
		}) {
			// Its IPsecGateway may still hold the floating IP that the
			// next one would pin.
			t.Fatalf("the runbook with the %s failed: the styles after it are not run", xr.name)
		}
	}
	// make dev's own job (dev.sh cutover) on the stack the runbooks left
	// (the floating IP on the VM's port), then once more, which starts the
	// runbook over from that cutover.
	if !t.Run("make dev", func(t *testing.T) {
		s.mainJob(t, false)
		s.mainJob(t, true)
	}) {
		t.Fatal("make dev's job failed: no gateway pod carries the tunnel for the node's loss")
	}
	// On the stack make dev's job left: its gateway pod carries the
	// client's tunnel, the VM stopped.
	t.Run("node lost and returned", s.nodeLostSingle)
}

// mainJob runs `make dev`'s job, cluster/local/dev.sh cutover, with the
// pinned example of the stack's first style and checks that it ended as
// the README says: the claim Ready, the floating IP on its port, the
// client site's IKE SA ESTABLISHED (and dev.sh printing it). afterCutover
// says that the claim was cut over before: dev.sh must roll back first.
func (s *stack) mainJob(t *testing.T, afterCutover bool) {
	t.Helper()
	s.xr = composites()[0]
	if !afterCutover {
		// dev.sh waits so only after its own cutover (docs/runbook.md).
		waitSNATExpired(t, "make dev", "the last packets of the previous gateway pod", s.gatewayGone)
	}
	start := time.Now()
	out := mustRun(t, append(slices.Clone(s.env), "CLAIM="+s.xr.claim), "cluster/local/dev.sh", "cutover")
	t.Logf("dev.sh cutover (after a cutover: %t) took %s", afterCutover, time.Since(start).Round(100*time.Millisecond))
	if rolledBack := strings.Contains(out, "a run after a cutover"); rolledBack != afterCutover {
		t.Errorf("dev.sh rolled back first: %t, want %t", rolledBack, afterCutover)
	}
	c := s.get(t, s.xr.gvk, tenant, pinned)
	if st, msg := condition(c, "Ready", "status", "conditions"); st != "True" {
		t.Errorf("after dev.sh cutover the claim is Ready=%s: %s", st, msg)
	}
	if port, got := str(c, "status", "port", "id"), s.fipPort(t); got != port {
		t.Errorf("after dev.sh cutover Neutron has the floating IP on %q, want the claim's port %s", got, port)
	}
	if sas := clientSAs(t, siteCharon(t, s.state, "client")); !slices.ContainsFunc(sas, topology.Up(siteConn)) {
		t.Errorf("after dev.sh cutover the client's IKE SAs are %s, want %s up", saList(sas), siteConn)
	}
	if _, printed, _ := strings.Cut(out, "The client site's ESTABLISHED IKE SA"); !strings.Contains(printed, ", ESTABLISHED, ") ||
		!strings.Contains(printed, "remote '"+s.runbook.FloatingIP+"'") {
		t.Errorf("dev.sh did not end with the client's IKE SA with %s:\n%s", s.runbook.FloatingIP, out)
	}
}

// liveRunbook follows the runbook with the stack's IPsecGateway (s.xr),
// pre-staged by dev.sh:
//
//  1. Before: the client's tunnel is up with the VM.
//  2. Pre-stage: the claim pins the VM's floating IP; its configuration is
//     rendered, no gateway pod runs, the tunnel stays with the VM.
//  3. Cutover: the floating IP off the VM's port, the VM's charon stopped:
//     the binding attaches, the gateway pod starts with its net1, the
//     floating-IP NAT re-points, the tunnel comes up with the pod, the
//     client host's connections are carried by it and reach the tenant's
//     application in the cluster through its Service, the claim is Ready
//     with its tunnel up and counting bytes; the client's configuration
//     files are byte-identical.
//  4. swanctl --list-sas in the pod shows the SA, as the runbook says;
//     with upgrade, the provider is upgraded through the registry
//     (upgradeProvider): the claim stays Ready and the client's IKE SAs
//     are the same ones; a tunnel added on the claim, then removed, is
//     loaded live, within seconds, by the same pod, leaving the other
//     tunnel's IKE SAs as they were (liveReload).
//  5. Rollback: the floating IP back on the VM's port, the VM's charon
//     started: the tunnel is back with the VM, the Deployment at 0.
//  6. Deleting the claim leaves the floating IP on the VM's port and
//     removes the gateway's pod and objects.
//
// It logs the cutover's outage (the client host's last answer via the VM
// to its first via the gateway), the rollback's, the time from the
// floating IP's attach to the tunnel's ESTABLISHED, and the pod's start
// time.
func (s *stack) liveRunbook(t *testing.T, upgrade bool) {
	ctx := context.Background()
	peer := siteCharon(t, s.state, "client")
	clientBefore := clientOf(t, s.state)
	fip := s.runbook.FloatingIP

	// 1. Before.
	sa := peer.WaitSA(t, siteConn, 30*time.Second, topology.Up(siteConn))
	saRead := time.Now()
	siteCharon(t, s.state, "vm").WaitSA(t, siteConn, 10*time.Second, remote(siteClient))
	p := startProbe(t, s.env)
	p.wait(t, siteVM, 30*time.Second)

	// 2. Pre-stage (dev.sh waited for the rendered configuration).
	claim := s.get(t, s.xr.gvk, tenant, pinned)
	gw := str(claim, "status", "gateway", "name")
	t.Cleanup(func() {
		if t.Failed() {
			for _, c := range []string{"strongswan", "agent"} {
				t.Logf("the gateway pod's %s log (last 40 lines):\n%s", c, s.tryKubectl("-n", tenant, "logs", "deploy/"+gw, "-c", c, "--tail", "40"))
			}
		}
	})
	if r := s.replicas(t, gw); r != 0 {
		t.Fatalf("pre-stage: the gateway's Deployment has %d replicas, want 0", r)
	}
	if n := len(s.pods(t, gw)); n != 0 {
		t.Fatalf("pre-stage: %d gateway pods run, want none", n)
	}
	// dev.sh brought the site up before it applied the claim: the
	// client's IKE SA must be older than the claim.
	claimAge := saRead.Sub(claim.GetCreationTimestamp().Time)
	if est, err := strconv.Atoi(sa.Established); err != nil || time.Duration(est+1)*time.Second < claimAge {
		t.Fatalf("pre-stage: the client's IKE SA was established %s s before, the claim applied %s before: the claim disturbed the VM's tunnel",
			sa.Established, claimAge.Round(time.Second))
	}

	// 3. Cutover. After an earlier runbook on this stack, its gateway pod's
	// last packets (from the same fixed IP, the floating IP already gone)
	// must have left the qrouter's conntrack: seen in the second of the
	// styles' runs, its cutover 20 s after the first's rollback: no SA with
	// the new pod in 2 min.
	waitSNATExpired(t, "cutover", "the last packets of the previous gateway pod", s.gatewayGone)
	cutover := time.Now()
	s.setFIPPort(t, "")
	mustRun(t, s.env, "cluster/site/site.sh", "vm-stop")
	vmStopped := time.Now()
	// The runbook's nudge: the binding retries at once.
	s.labelClaim(t)
	took := s.waitAttached(t, "cutover")
	attached := cutover.Add(took)
	t.Logf("cutover: floating IP attached to the gateway's port %s after the VM's port let go of it", took.Round(100*time.Millisecond))
	mapped := fipMapped(t, s.env, fip, siteGateway, time.Minute)
	pod := s.readyPod(t, gw, 2*time.Minute)
	t.Logf("cutover: gateway pod %s created → Ready in %s", pod.Name, podStart(pod).Round(100*time.Millisecond))
	// The node's containerd pulled the gateway image from the stack's
	// registry (the provider's --gateway-image), as a cluster pulls from its own.
	for _, c := range pod.Spec.Containers {
		if want := s.registry(t) + "/ipsecgw/gateway:v0.1.0"; c.Image != want || c.ImagePullPolicy != corev1.PullIfNotPresent {
			t.Errorf("cutover: the gateway pod's container %s runs %s (pull policy %s), want %s, IfNotPresent", c.Name, c.Image, c.ImagePullPolicy, want)
		}
	}
	if got := pod.Annotations["k8s.v1.cni.cncf.io/network-status"]; !strings.Contains(got, siteGateway) {
		t.Errorf("cutover: the pod's network status does not show net1 with %s: %s", siteGateway, got)
	}
	sa = peer.WaitSA(t, siteConn, 2*time.Minute, newer(sa))
	t.Logf("cutover: the client's IKE SAs of %s when the first with the gateway was up: %s", siteConn, saList(clientSAs(t, peer)))
	t.Logf("cutover: tunnel ESTABLISHED with the gateway pod %s after the floating IP was attached (%s after the NAT re-pointed)",
		time.Since(attached).Round(100*time.Millisecond), time.Since(mapped).Round(100*time.Millisecond))
	e := p.wait(t, siteGateway, time.Minute)
	t.Logf("cutover: the client host's connections were carried by %s, then by %s: outage %d ms", e.Previous, e.Via, e.OutageMS)
	// The tenant's application in the cluster (cluster/local/tenant-app.sh),
	// which the claim publishes by its Service: through the gateway pod,
	// kube-proxy and the pod network.
	out := mustRun(t, s.env, "cluster/site/site.sh", "probe", "-json", "-for", "3s", "-target", "100.64.0.11:443")
	var app []probeEvent
	for l := range strings.Lines(out) {
		var e probeEvent
		if json.Unmarshal([]byte(l), &e) == nil && e.Via != "" {
			app = append(app, e)
		}
	}
	if len(app) == 0 || app[0].Via != pod.Status.PodIP {
		t.Errorf("the client host's connections to the tenant application's Service (exposure 100.64.0.11:443) were not answered from the gateway pod's %s: %s", pod.Status.PodIP, out)
	} else {
		t.Logf("cutover: the tenant application's Service answered the client host through the gateway (it saw %s, the pod's address)", app[0].Via)
	}
	eventually(t, "cutover: the claim is Ready with its tunnel up", 2*time.Minute, func() (bool, string) {
		c := s.get(t, s.xr.gvk, tenant, pinned)
		ready, msg := condition(c, "Ready", "status", "conditions")
		up := str(c, "status", "gateway", "tunnelsUp")
		return ready == "True" && up == "1/1", "Ready " + ready + " (" + msg + "), tunnels " + up
	})
	eventually(t, "cutover: the claim counts the tunnel's bytes (kubectl get ipsecgateway: BYTES-IN, BYTES-OUT)", time.Minute, func() (bool, string) {
		c := s.get(t, s.xr.gvk, tenant, pinned)
		in, out := str(c, "status", "gateway", "bytesIn"), str(c, "status", "gateway", "bytesOut")
		return in != "" && in != "0" && out != "" && out != "0", "bytes in " + in + ", out " + out
	})
	clientBefore.untouched(t, s.state, "cutover")

	// 4. The runbook's check in the pod.
	sas := s.kubectl(t, "-n", tenant, "exec", "deploy/"+gw, "-c", "strongswan", "--", "swanctl", "--list-sas")
	if !strings.Contains(sas, "ESTABLISHED") || !strings.Contains(sas, siteClient) {
		t.Errorf("swanctl --list-sas in the gateway pod shows no SA ESTABLISHED with %s:\n%s", siteClient, sas)
	}
	if l := s.kubectl(t, "-n", tenant, "logs", "deploy/"+gw, "-c", "strongswan"); !strings.Contains(l, "established between") {
		t.Errorf("kubectl logs -c strongswan shows no IKE SA established:\n%s", l)
	}
	// The tunnel as it settles after the cutover (both sides initiated;
	// docs/always-on.md): the client's IKE SAs, which the upgrade and the
	// live reload must leave as they are.
	steady := steadySAs(t, peer, 2*time.Minute)
	tunnelChurn(t, s, gw)
	if upgrade {
		t.Run("provider upgrade keeps the claim and its tunnel", func(t *testing.T) {
			before := s.pods(t, gw)
			mark := p.mark()
			upgradeProvider(t, s, pinned)
			if out := p.outages(t, mark, time.Minute); len(out) != 0 {
				t.Errorf("the client host's connections through the tunnel failed during the provider upgrade: outages %v", out)
			}
			if now := clientSAs(t, peer); saIDs(now) != saIDs(steady) || !slices.ContainsFunc(now, topology.Up(siteConn)) {
				t.Errorf("after the provider upgrade the client has IKE SAs %s, before it %s: the upgrade disturbed the tunnel", saList(now), saList(steady))
			}
			after := s.pods(t, gw)
			if len(after) != 1 || len(before) != 1 || after[0].UID != before[0].UID || restarts(after[0]) != restarts(before[0]) {
				t.Errorf("the provider upgrade replaced or restarted the gateway pod: before %s, after %s", podList(before), podList(after))
			}
		})
		steady = steadySAs(t, peer, 2*time.Minute)
	}

	// 4b. Tunnel changes are loaded live: same pod, the other tunnel's
	// IKE SAs as they settled after the cutover (steady).
	s.liveReload(t, gw, pod, peer, steady)

	// 5. Rollback.
	rollback := time.Now()
	s.rollback(t)
	mustRun(t, s.env, "cluster/site/site.sh", "vm-start")
	// As a customer's always-on VM starts it when its ipsec service
	// restarts, once the floating IP answers on the VM: an IKE_SA_INIT the
	// VM sends before the L3 agent has the floating IP's SNAT for it leaves
	// with the router's own address, for which the client has no peer
	// config (NO_PROPOSAL_CHOSEN, which charon does not retry; seen with
	// the agent 13-27 s behind on a loaded machine), and conntrack keeps
	// that flow.
	rolled := fipMapped(t, s.env, fip, siteVM, time.Minute)
	waitSNATExpired(t, "rollback", "the VM's DELETE", vmStopped)
	initiate(t, siteCharon(t, s.state, "vm"), "rollback: the VM")
	t.Logf("rollback: the qrouter DNATed %s to the VM %s after the rollback's unset", fip, rolled.Sub(rollback).Round(100*time.Millisecond))
	peer.WaitSA(t, siteConn, 2*time.Minute, newer(sa))
	e = p.wait(t, siteVM, time.Minute)
	t.Logf("rollback: the client host's connections were carried by %s, then by %s: outage %d ms", e.Previous, e.Via, e.OutageMS)
	eventually(t, "rollback: the gateway's Deployment at 0 replicas and its pod gone", 2*time.Minute, func() (bool, string) {
		r, n := s.replicas(t, gw), len(s.pods(t, gw))
		return r == 0 && n == 0, "replicas and pods are not 0"
	})
	s.gatewayGone = time.Now()
	eventually(t, "rollback: the claim shows its tunnel down (no gateway pod holds it)", time.Minute, func() (bool, string) {
		up := str(s.get(t, s.xr.gvk, tenant, pinned), "status", "gateway", "tunnelsUp")
		return up == "0/1", "tunnels " + up
	})
	clientBefore.untouched(t, s.state, "rollback")

	// 6. Delete the claim.
	s.deleteClaim(t, pinned)
	if got := s.fipPort(t); got != s.runbook.VMPortID {
		t.Errorf("after deleting the claim, Neutron has the floating IP on %q, want the VM's port %s", got, s.runbook.VMPortID)
	}
	eventually(t, "the gateway's objects are gone", time.Minute, func() (bool, string) {
		err := s.kube.Get(ctx, client.ObjectKey{Namespace: tenant, Name: gw}, &appsv1.Deployment{})
		return client.IgnoreNotFound(err) == nil && err != nil && len(s.pods(t, gw)) == 0, "the Deployment or a pod exists"
	})
}

// steadySAs waits until the client's ESTABLISHED IKE SAs of the site's
// connection (clientSAs) have stayed the same ones for steadyFor, one up
// with its CHILD_SA, and returns them. After a
// cutover both sides initiate (the client's DPD restart, the gateway's
// start action) and the gateway's agent closes duplicates
// (docs/always-on.md): against this client, always on with close_action
// start, that converges on one or two IKE SAs. Each set seen is logged.
func steadySAs(t *testing.T, peer *topology.Charon, timeout time.Duration) []topology.IKESA {
	t.Helper()
	const steadyFor = 15 * time.Second
	var (
		seen  string
		since time.Time
		sas   []topology.IKESA
	)
	start := time.Now()
	eventually(t, "the client's IKE SAs settled", timeout, func() (bool, string) {
		sas = clientSAs(t, peer)
		if ids := saIDs(sas); ids != seen {
			t.Logf("%s after the check began, the client's IKE SAs of %s: %s", time.Since(start).Round(100*time.Millisecond), siteConn, saList(sas))
			seen, since = ids, time.Now()
		}
		if !slices.ContainsFunc(sas, topology.Up(siteConn)) {
			return false, "IKE SAs " + saList(sas)
		}
		return time.Since(since) >= steadyFor, "IKE SAs " + seen + " for " + time.Since(since).Round(time.Second).String()
	})
	return sas
}

// tunnelChurn logs what replaced IKE SAs after the cutover: the gateway
// agent's lines on duplicates and re-initiations, and the client charon's
// on IKE SAs established, deleted, restarted or given up (DPD).
func tunnelChurn(t *testing.T, s *stack, gw string) {
	t.Helper()
	for l := range strings.Lines(s.kubectl(t, "-n", tenant, "logs", "deploy/"+gw, "-c", "agent")) {
		if strings.Contains(l, "uplicate") || strings.Contains(l, "einitiat") {
			t.Logf("gateway agent: %s", strings.TrimSpace(l))
		}
	}
	b, err := os.ReadFile(filepath.Join(s.state, "site", "client", "charon.log"))
	if err != nil {
		t.Logf("the client's charon log: %v", err)
		return
	}
	var churn []string
	for l := range strings.Lines(string(b)) {
		for _, w := range []string{"deleting IKE_SA", "restarting CHILD_SA", "giving up", "INITIAL_CONTACT", "established between"} {
			if strings.Contains(l, w) {
				churn = append(churn, strings.TrimSpace(l))
				break
			}
		}
	}
	t.Logf("the client charon's IKE SA events (last 30):\n%s", strings.Join(churn[max(0, len(churn)-30):], "\n"))
}

// saIDs is the unique ids and states of IKE SAs, sorted: which ones they
// are, not how old.
func saIDs(sas []topology.IKESA) string {
	ids := make([]string, 0, len(sas))
	for _, sa := range sas {
		ids = append(ids, "#"+sa.UniqueID+" "+sa.State)
	}
	slices.Sort(ids)
	return strings.Join(ids, ", ")
}

// clientSAs returns the client charon's ESTABLISHED IKE SAs of the site's
// connection. One the client is still CONNECTING carries nothing and is
// left out: behind the real qrouter, the client's own IKE_SA_INIT from the
// cutover can keep being retransmitted for minutes into a conntrack entry
// made while the floating IP was elsewhere (docs/neutron-agents.md), while
// the gateway's IKE SA carries the tunnel.
func clientSAs(t *testing.T, peer *topology.Charon) []topology.IKESA {
	t.Helper()
	all, err := peer.ListSAs(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var sas []topology.IKESA
	for _, sa := range all {
		if sa.Name == siteConn && sa.State == "ESTABLISHED" {
			sas = append(sas, sa)
		}
	}
	return sas
}

// saList describes IKE SAs: unique id, state, who initiated, seconds since
// established.
func saList(sas []topology.IKESA) string {
	l := make([]string, 0, len(sas))
	for _, sa := range sas {
		l = append(l, fmt.Sprintf("#%s %s initiator=%s established=%ss", sa.UniqueID, sa.State, cmp.Or(sa.Initiator, "no"), sa.Established))
	}
	return "[" + strings.Join(l, ", ") + "]"
}

// restarts is the sum of pod's containers' restart counts.
func restarts(pod corev1.Pod) int32 {
	var n int32
	for _, c := range pod.Status.ContainerStatuses {
		n += c.RestartCount
	}
	return n
}

// podList describes pods: name, UID, restarts.
func podList(pods []corev1.Pod) string {
	l := make([]string, 0, len(pods))
	for _, p := range pods {
		l = append(l, fmt.Sprintf("%s (uid %s, %d restarts)", p.Name, p.UID, restarts(p)))
	}
	return "[" + strings.Join(l, ", ") + "]"
}

// pods returns the pods of the gateway named gw.
func (s *stack) pods(t *testing.T, gw string) []corev1.Pod {
	t.Helper()
	l := &corev1.PodList{}
	if err := s.kube.List(context.Background(), l, client.InNamespace(tenant), client.MatchingLabels{"gateway.ipsecgw.io/name": gw}); err != nil {
		t.Fatal(err)
	}
	return l.Items
}

// readyPod waits until the gateway named gw has one pod, Ready, and
// returns it.
func (s *stack) readyPod(t *testing.T, gw string, timeout time.Duration) corev1.Pod {
	t.Helper()
	var pod corev1.Pod
	eventually(t, "the gateway pod Ready", timeout, func() (bool, string) {
		l := s.pods(t, gw)
		if len(l) != 1 {
			return false, fmt.Sprintf("%d pods", len(l))
		}
		pod = l[0]
		for _, c := range pod.Status.Conditions {
			if c.Type == corev1.PodReady {
				return c.Status == corev1.ConditionTrue, c.Reason + " " + c.Message
			}
		}
		return false, string(pod.Status.Phase)
	})
	return pod
}

// podStart is the time from pod's creation to its Ready condition.
func podStart(pod corev1.Pod) time.Duration {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.LastTransitionTime.Sub(pod.CreationTimestamp.Time)
		}
	}
	return 0
}

// kubectl runs the toolchain's kubectl on the stack and returns its
// output; it fails t when kubectl fails.
func (s *stack) kubectl(t *testing.T, args ...string) string {
	t.Helper()
	out, err := s.kubectlCommand(args...).CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// kubectlCommand is the toolchain's kubectl with args on the stack.
func (s *stack) kubectlCommand(args ...string) *exec.Cmd {
	cmd := exec.Command(filepath.Join(os.Getenv("KUBEBUILDER_ASSETS"), "kubectl"), args...)
	cmd.Env = append(slices.Clone(s.env), "KUBECONFIG="+filepath.Join(s.state, "kubeconfig"))
	return cmd
}
