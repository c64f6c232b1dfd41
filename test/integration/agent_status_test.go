//go:build integration

package integration

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/strongswan/govici/vici"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ipsecgw/provider-ipsec/apis/cluster/gateway/v1alpha1"
	"github.com/ipsecgw/provider-ipsec/internal/agent/status"
	"github.com/ipsecgw/provider-ipsec/internal/contract"
	"github.com/ipsecgw/provider-ipsec/internal/render"
	"github.com/ipsecgw/provider-ipsec/test/topology"
)

// TestAgentStatusPublisher checks the agent's status ConfigMap against a
// real API server: created when missing, written only when the content
// changed, two writes at once and then at most one per MinInterval (a token
// bucket), and holding only tunnels.json.
func TestAgentStatusPublisher(t *testing.T) {
	ctx := context.Background()
	ns := "agent-status"
	create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	t.Cleanup(func() { _ = kube.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}) })

	clock := time.Date(2026, 11, 29, 22, 0, 0, 0, time.UTC)
	p := &status.Publisher{Client: kube, Namespace: ns, Name: "gw1-status", MinInterval: 5 * time.Second,
		Now: func() time.Time { return clock }}
	key := client.ObjectKey{Namespace: ns, Name: "gw1-status"}
	est := metav1.NewTime(clock.Add(-time.Minute))
	up := []v1alpha1.TunnelStatus{
		{Name: "branch-a", IKEState: "ESTABLISHED", EstablishedAt: &est, ChildSAs: []v1alpha1.ChildSAStatus{{
			Name: "net", State: "INSTALLED", LocalTS: []string{"10.0.0.0/24"}, RemoteTS: []string{"192.168.1.0/24"},
			BytesIn: 840, BytesOut: 840, PacketsIn: 10, PacketsOut: 10}}},
		{Name: "branch-b", IKEState: "DOWN", LastError: status.ErrAuthenticationFailed},
	}
	more := []v1alpha1.TunnelStatus{up[0], up[1]}
	more[0].ChildSAs = []v1alpha1.ChildSAStatus{up[0].ChildSAs[0]}
	more[0].ChildSAs[0].BytesIn, more[0].ChildSAs[0].PacketsIn = 924, 11

	// read returns the ConfigMap's resourceVersion and tunnels.
	read := func() (string, []v1alpha1.TunnelStatus) {
		t.Helper()
		cm := &corev1.ConfigMap{}
		if err := kube.Get(ctx, key, cm); err != nil {
			t.Fatal(err)
		}
		if len(cm.Data) != 1 || len(cm.BinaryData) != 0 {
			t.Errorf("the status ConfigMap holds more than %s: %v", contract.KeyTunnels, cm.Data)
		}
		var ts []v1alpha1.TunnelStatus
		if err := json.Unmarshal([]byte(cm.Data[contract.KeyTunnels]), &ts); err != nil {
			t.Fatalf("%s: %v", contract.KeyTunnels, err)
		}
		return cm.ResourceVersion, ts
	}
	publish := func(p *status.Publisher, ts []v1alpha1.TunnelStatus) time.Duration {
		t.Helper()
		wait, err := p.Publish(ctx, ts)
		if err != nil {
			t.Fatal(err)
		}
		return wait
	}
	// written reads the ConfigMap, which must have been written since
	// resourceVersion prev (else the error notWritten) and hold want (else
	// its diff, under what); it returns the new resourceVersion.
	written := func(prev string, want []v1alpha1.TunnelStatus, notWritten, what string) string {
		t.Helper()
		rv, got := read()
		if rv == prev {
			t.Error(notWritten)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s: -want, +got:\n%s", what, diff)
		}
		return rv
	}

	// Missing: created.
	if wait := publish(p, up); wait != 0 {
		t.Fatalf("first Publish waits %s", wait)
	}
	rv1, got := read()
	if diff := cmp.Diff(up, got); diff != "" {
		t.Errorf("created: -want, +got:\n%s", diff)
	}

	// Unchanged: no write, even after the interval.
	clock = clock.Add(time.Minute)
	publish(p, up)
	if rv, _ := read(); rv != rv1 {
		t.Errorf("unchanged status rewritten: resourceVersion %s -> %s", rv1, rv)
	}

	// Changed: written at once (a minute on, the bucket is full).
	publish(p, more)
	rv2, got := read()
	if rv2 == rv1 {
		t.Fatal("changed status not written")
	}
	if diff := cmp.Diff(more, got); diff != "" {
		t.Errorf("updated: -want, +got:\n%s", diff)
	}
	// Changed again 2 s later: the burst's second write, at once.
	clock = clock.Add(2 * time.Second)
	if wait := publish(p, up); wait != 0 {
		t.Errorf("Publish 2s after a write, within the burst: wait %s, want 0", wait)
	}
	rv3 := written(rv2, up, "the burst's second change not written", "the burst's second write")
	// A third change at once: held back until the bucket has a token
	// again (0.4 of one left: 3 s at one per 5 s).
	if wait := publish(p, more); (wait - 3*time.Second).Abs() > time.Millisecond {
		t.Errorf("Publish with the burst spent: wait %s, want 3s", wait)
	}
	if rv, _ := read(); rv != rv3 {
		t.Errorf("rate limit not respected: resourceVersion %s -> %s", rv3, rv)
	}
	clock = clock.Add(3 * time.Second)
	if wait := publish(p, more); wait != 0 {
		t.Errorf("Publish once the bucket has a token: wait %s", wait)
	}
	rv4 := written(rv3, more, "held-back change not written after the wait", "after the wait")

	// A restarted agent finds its content in place: no write.
	restarted := &status.Publisher{Client: kube, Namespace: ns, Name: "gw1-status"}
	publish(restarted, more)
	if rv, _ := read(); rv != rv4 {
		t.Errorf("restarted agent rewrote unchanged status: resourceVersion %s -> %s", rv4, rv)
	}

	// With the pod's identity: the gateway's ServiceAccount may only get
	// and update its own status ConfigMap (internal/workload's Role).
	create(t,
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "gw1"}},
		&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "gw1"}, Rules: []rbacv1.PolicyRule{{
			APIGroups: []string{""}, Resources: []string{"configmaps"}, ResourceNames: []string{"gw1-status"},
			Verbs: []string{"get", "update", "patch"}}}},
		&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "gw1"},
			RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "gw1"},
			Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Namespace: ns, Name: "gw1"}}},
	)
	podCfg := rest.CopyConfig(cfg)
	podCfg.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:" + ns + ":gw1"}
	pod, err := client.New(podCfg, client.Options{Scheme: kube.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	asPod := &status.Publisher{Client: pod, Namespace: ns, Name: "gw1-status"}
	eventually(t, 10*time.Second, "the gateway's ServiceAccount updates its status", func() error {
		_, err := asPod.Publish(ctx, up)
		return err
	})
	if _, got := read(); !cmp.Equal(up, got) {
		t.Errorf("as the pod: -want, +got:\n%s", cmp.Diff(up, got))
	}
	other := &status.Publisher{Client: pod, Namespace: ns, Name: "gw2-status"}
	if _, err := other.Publish(ctx, up); err == nil {
		t.Error("the gateway's ServiceAccount wrote another gateway's status ConfigMap")
	}
}

// TestAgentStatusRealTunnel runs the agent's status Watcher and Publisher
// against a real gateway charon and a real client site (test/topology) and
// reads the status ConfigMap from the API server as the provider does: the
// tunnel shows ESTABLISHED with growing byte counters, DOWN within seconds
// of being terminated, and the failure when the client site's PSK or IKE
// proposal does not match (AUTHENTICATION_FAILED with the gateway
// initiating, NO_PROPOSAL_CHOSEN with the client initiating).
func TestAgentStatusRealTunnel(t *testing.T) {
	tp := topology.Start(t, topology.Options{})
	peer := tp.Peers[0]
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const psk = "agent-status-psk-0123456789abcdef"
	ns := "agent-status-tunnel"
	create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	t.Cleanup(func() {
		_ = kube.Delete(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	})

	sheet := pfsSheet(peer, psk)
	if err := peer.LoadSheet(ctx, sheet); err != nil {
		t.Fatal(err)
	}

	// The agent's side: a Watcher on its own VICI session publishing
	// through a Publisher into the status ConfigMap.
	pub := &status.Publisher{Client: kube, Namespace: ns, Name: "gw-status", MinInterval: 500 * time.Millisecond}
	w := &status.Watcher{
		Events:  tp.Gateway.Dial(t),
		Caller:  &status.Streamer{Session: tp.Gateway.Dial(t)},
		Conns:   func() []string { return []string{"branch-a"} },
		Sink:    pub.Publish,
		Poll:    time.Second,
		OnError: func(err error) { t.Logf("watcher: %v", err) },
	}
	wctx, wcancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(wctx) }()
	stopped := false
	t.Cleanup(func() {
		wcancel()
		if stopped {
			return
		}
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Errorf("Watcher.Run: %v", err)
		}
	})

	key := client.ObjectKey{Namespace: ns, Name: "gw-status"}
	// waitStatus polls the ConfigMap until ok accepts branch-a's status
	// and returns it and how long that took.
	waitStatus := func(what string, ok func(v1alpha1.TunnelStatus) bool) (v1alpha1.TunnelStatus, time.Duration) {
		t.Helper()
		start := time.Now()
		var last []v1alpha1.TunnelStatus
		for deadline := start.Add(tunnelTimeout); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
			cm := &corev1.ConfigMap{}
			if err := kube.Get(ctx, key, cm); err != nil {
				continue
			}
			last = nil
			if err := json.Unmarshal([]byte(cm.Data[contract.KeyTunnels]), &last); err != nil {
				t.Fatalf("%s: %v", contract.KeyTunnels, err)
			}
			if len(last) == 1 && last[0].Name == "branch-a" && ok(last[0]) {
				return last[0], time.Since(start)
			}
		}
		t.Fatalf("status ConfigMap: %s not within %v; last: %+v", what, tunnelTimeout, last)
		return v1alpha1.TunnelStatus{}, 0
	}
	installed := func(s v1alpha1.TunnelStatus) bool {
		return s.IKEState == "ESTABLISHED" && len(s.ChildSAs) == 1 && s.ChildSAs[0].State == "INSTALLED"
	}

	waitStatus("DOWN before any configuration", func(s v1alpha1.TunnelStatus) bool { return s.IKEState == status.StateDown })

	spec := v1alpha1.GatewayParameters{
		Namespace: "tenant-a",
		GatewayConfig: v1alpha1.GatewayConfig{
			Endpoint: v1alpha1.Endpoint{
				PrivateAddress: v1alpha1.IPv4(topology.PrivateAddress.String()), PrefixLength: int32(topology.PrivatePrefixLength),
				Gateway: v1alpha1.IPv4(topology.Router.String()), MACAddress: topology.MACAddress, LocalID: v1alpha1.IPv4(topology.FloatingIP.String()),
			},
			Mode:          v1alpha1.ModeRouted,
			TenantSubnets: []v1alpha1.CIDR{v1alpha1.CIDR(topology.TenantSubnet.String())},
			Tunnels: []v1alpha1.Tunnel{{
				Name: "branch-a", Peer: v1alpha1.Peer{Address: peer.Address.String()}, IKEVersion: 2,
				IKEProposals: []string{"aes256-sha256-modp2048"}, ESPProposals: []string{"aes256gcm16-modp2048"},
				StartAction:      "start",
				TrafficSelectors: []v1alpha1.TrafficSelector{{Local: v1alpha1.CIDR(topology.TenantSubnet.String()), Remote: v1alpha1.CIDR(peer.Subnet.String())}},
			}},
		}}
	files, err := render.Render(render.Input{Spec: spec, PSKs: map[string][]byte{"branch-a": []byte(psk)}})
	if err != nil {
		t.Fatal(err)
	}
	if err := tp.Gateway.LoadConfig(ctx, files.SwanctlConf, files.Secrets); err != nil {
		t.Fatal(err)
	}
	up, took := waitStatus("ESTABLISHED with the CHILD_SA INSTALLED", installed)
	t.Logf("status ConfigMap shows ESTABLISHED/INSTALLED %v after the config load", took.Round(time.Millisecond))
	if up.EstablishedAt == nil || time.Since(up.EstablishedAt.Time) > time.Minute || up.LastError != "" {
		t.Errorf("established tunnel: establishedAt %v, lastError %q", up.EstablishedAt, up.LastError)
	}
	if diff := cmp.Diff([2][]string{{topology.TenantSubnet.String()}, {peer.Subnet.String()}}, [2][]string{up.ChildSAs[0].LocalTS, up.ChildSAs[0].RemoteTS}); diff != "" {
		t.Errorf("CHILD_SA traffic selectors [local, remote]: -want, +got:\n%s", diff)
	}

	// Traffic through the tunnel makes the counters grow, twice.
	prev := up.ChildSAs[0]
	for round := 1; round <= 2; round++ {
		if r, err := tp.Ping(peer.HostNS, topology.Service, 3, 2*time.Second); err != nil || r.Received == 0 {
			t.Fatalf("ping %d through the tunnel: %+v %v", round, r, err)
		}
		s, took := waitStatus("counters grown", func(s v1alpha1.TunnelStatus) bool {
			return installed(s) && s.ChildSAs[0].BytesIn > prev.BytesIn && s.ChildSAs[0].BytesOut > prev.BytesOut &&
				s.ChildSAs[0].PacketsIn >= prev.PacketsIn+3 && s.ChildSAs[0].PacketsOut >= prev.PacketsOut+3
		})
		c := s.ChildSAs[0]
		t.Logf("after ping %d: bytes in %d out %d, packets in %d out %d (shown after %v)", round, c.BytesIn, c.BytesOut, c.PacketsIn, c.PacketsOut, took.Round(time.Millisecond))
		if !s.EstablishedAt.Equal(up.EstablishedAt) {
			t.Errorf("establishedAt moved from %v to %v", up.EstablishedAt, s.EstablishedAt)
		}
		prev = c
	}

	// Terminated: DOWN within seconds. terminate and initiate go through a
	// session of their own, as an operator's swanctl would.
	control := tp.Gateway.Dial(t)
	term := vici.NewMessage()
	_ = term.Set("ike", "branch-a")
	start := time.Now()
	if _, err := control.Call(ctx, "terminate", term); err != nil {
		t.Fatalf("terminate: %v", err)
	}
	waitStatus("DOWN after terminate", func(s v1alpha1.TunnelStatus) bool { return s.IKEState == status.StateDown && len(s.ChildSAs) == 0 })
	took = time.Since(start)
	t.Logf("status ConfigMap shows DOWN %v after terminate was called", took.Round(time.Millisecond))
	// charon's ike-updown event, the watcher's 100 ms settle
	// (status.DefaultSettle) and one ConfigMap write: well under a
	// second; 5 s keeps "a tunnel down shows within seconds" on a loaded
	// machine.
	if took > 5*time.Second {
		t.Errorf("DOWN showed only %v after terminate, want within 5s", took)
	}

	// Wrong PSK at the client site; the gateway initiates and is refused.
	bad := sheet
	bad.PSK = "not-the-agent-status-psk-00000000"
	if err := peer.LoadSheet(ctx, bad); err != nil {
		t.Fatal(err)
	}
	in := vici.NewMessage()
	_ = in.Set("child", up.ChildSAs[0].Name)
	_ = in.Set("timeout", "5000")
	if _, err := control.Call(ctx, "initiate", in); err == nil {
		t.Error("initiate with a wrong PSK at the client site succeeded")
	}
	s, took := waitStatus("AUTHENTICATION_FAILED", func(s v1alpha1.TunnelStatus) bool { return s.LastError == status.ErrAuthenticationFailed })
	t.Logf("status ConfigMap shows %s (IKE state %s) %v after initiate returned", s.LastError, s.IKEState, took.Round(time.Millisecond))
	if s.IKEState == "ESTABLISHED" {
		t.Errorf("tunnel with a wrong PSK is %s", s.IKEState)
	}

	// Mismatching IKE proposal; the client site initiates, so the gateway
	// is the responder and refuses it before it knows the connection.
	bad = sheet
	bad.IKEProposals = []string{"aes128-sha256-ecp256"}
	bad.StartAction = "start"
	if err := peer.LoadSheet(ctx, bad); err != nil {
		t.Fatal(err)
	}
	s, took = waitStatus("NO_PROPOSAL_CHOSEN", func(s v1alpha1.TunnelStatus) bool {
		return s.LastError == status.ErrNoProposalChosen && s.IKEState != "ESTABLISHED"
	})
	t.Logf("status ConfigMap shows %s (IKE state %s) %v after the client site was loaded", s.LastError, s.IKEState, took.Round(time.Millisecond))

	// A matching client again: up, and the error is gone.
	good := sheet
	good.StartAction = "start"
	if err := peer.LoadSheet(ctx, good); err != nil {
		t.Fatal(err)
	}
	waitStatus("up again without an error", func(s v1alpha1.TunnelStatus) bool { return installed(s) && s.LastError == "" })

	// charon crashes: Run returns ErrEventsClosed, so that the agent
	// reconnects.
	start = time.Now()
	tp.Gateway.Restart(t)
	select {
	case err := <-done:
		stopped = true
		if !errors.Is(err, status.ErrEventsClosed) {
			t.Errorf("Watcher.Run after charon was killed: %v, want %v", err, status.ErrEventsClosed)
		}
		t.Logf("Watcher.Run returned %v after charon was killed and restarted", time.Since(start).Round(time.Millisecond))
	case <-time.After(10 * time.Second):
		t.Error("Watcher.Run still runs 10s after charon was killed")
	}
}

// TestAgentStatusStreamer checks, against a real charon, that a Streamer
// returns every event of a streamed command, call after call on one
// session, which govici v0.8.0's Session.CallStreaming does not (see
// status.Streamer); the count of calls it got wrong is logged.
func TestAgentStatusStreamer(t *testing.T) {
	c := topology.StartValidator(t)
	ctx := context.Background()
	const conns, calls = 5, 300
	for i := range conns {
		conn := vici.NewMessage()
		_ = conn.Set("version", "2")
		_ = conn.Set("local_addrs", []string{"192.0.2.1"})
		_ = conn.Set("remote_addrs", []string{fmt.Sprintf("192.0.2.%d", 10+i)})
		in := vici.NewMessage()
		_ = in.Set(fmt.Sprintf("conn%d", i), conn)
		if _, err := c.Call(ctx, "load-conn", in); err != nil {
			t.Fatal(err)
		}
	}
	count := func(cl status.Caller) (wrong int) {
		for range calls {
			n := 0
			for m, err := range cl.CallStreaming(ctx, "list-conns", "list-conn", nil) {
				if err != nil {
					break
				}
				n += len(m.Keys())
			}
			if n != conns {
				wrong++
			}
		}
		return wrong
	}
	s, err := vici.NewSession(vici.WithSocketPath(filepath.Join(c.Dir, "charon.vici")))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	if wrong := count(&status.Streamer{Session: s}); wrong != 0 {
		t.Errorf("Streamer: %d of %d list-conns calls did not return all %d connections", wrong, calls, conns)
	}
	t.Logf("govici Session.CallStreaming on the same charon: %d of %d list-conns calls incomplete", count(c.Session), calls)
}
