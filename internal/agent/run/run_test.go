package run

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/strongswan/govici/vici"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/ipsecgw/provider-ipsec/internal/agent/metrics"
	"github.com/ipsecgw/provider-ipsec/internal/agent/source"
	"github.com/ipsecgw/provider-ipsec/internal/agent/status"
	"github.com/ipsecgw/provider-ipsec/internal/agent/vicitest"
	"github.com/ipsecgw/provider-ipsec/internal/contract"
)

// within bounds every wait of these tests: the agent acts within its
// Interval (20 ms here), ChangeSettle or its reconnection (1 s), so it
// only matters on a machine too busy to schedule it.
const within = 10 * time.Second

// memSource is a configuration source in memory with a Changed signal, as
// source.API.
type memSource struct {
	mu      sync.Mutex
	f       source.Files
	changed chan struct{}
}

func newSource(f source.Files) *memSource { return &memSource{f: f, changed: make(chan struct{}, 1)} }

func (m *memSource) Read() (source.Files, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.f, nil
}

func (m *memSource) Changed() <-chan struct{} { return m.changed }

// set changes the files and signals it.
func (m *memSource) set(f source.Files) {
	m.mu.Lock()
	m.f = f
	m.mu.Unlock()
	select {
	case m.changed <- struct{}{}:
	default:
	}
}

// files returns a configuration with one connection per name, each with
// one always-on child, and a PSK.
func files(names ...string) source.Files {
	var b strings.Builder
	b.WriteString("connections {\n")
	for _, n := range names {
		fmt.Fprintf(&b, "  %s {\n    local {\n      auth = psk\n    }\n    children {\n      %s-1 {\n        local_ts = 10.0.0.0/24\n        start_action = start\n      }\n    }\n  }\n", n, n)
	}
	b.WriteString("}\n")
	return source.Files{
		SwanctlConf: []byte(b.String()),
		Secrets:     []byte("secrets {\n  ike-a {\n    id-remote = a.example.com\n    secret = not-logged\n  }\n}\n"),
	}
}

// actions are the commands that change charon (apply.Applier sends
// load-shared with every load), as
// "load-conn a (a-1: start)", "unload-conn a", "terminate ike a": not the
// reads (version, list-sas, list-conns).
func actions(cmds []vicitest.Command) []string {
	var out []string
	for _, c := range cmds {
		switch c.Name {
		case "load-conn":
			for _, conn := range c.In.Keys() {
				s := "load-conn " + conn
				if ch, ok := c.In.Get(conn).(*vici.Message).Get("children").(*vici.Message); ok {
					for _, n := range ch.Keys() {
						s += fmt.Sprintf(" (%s: %v)", n, ch.Get(n).(*vici.Message).Get("start_action"))
					}
				}
				out = append(out, s)
			}
		case "unload-conn":
			out = append(out, fmt.Sprintf("unload-conn %v", c.In.Get("name")))
		case "terminate":
			out = append(out, fmt.Sprintf("terminate ike %v", c.In.Get("ike")))
		case "version", "list-sas", "list-conns":
		default:
			out = append(out, c.Name)
		}
	}
	return out
}

// fixture is an agent on a vicitest charon, a status ConfigMap in
// controller-runtime's fake client and a metrics collector.
type fixture struct {
	charon *vicitest.Server
	src    *memSource
	kube   client.Client
	m      *metrics.Collector
	agent  *Agent
	// stop ends the agent's context (SIGTERM) and fails the test unless
	// Run returns within within; the test's cleanup calls it too.
	stop func()
}

const (
	ns       = "tenant-a"
	statusCM = "vpn" + contract.StatusSuffix
)

// start runs an agent with o on a new charon and f until the test ends.
func start(t *testing.T, f source.Files, o Options) *fixture {
	t.Helper()
	return startWith(t, nil, f, o)
}

// startWith runs an agent with o on a new charon that answers with handle
// (vicitest.Server.Handle) and f until the test ends or stop.
func startWith(t *testing.T, handle func(cmd string, in *vici.Message) vicitest.Reply, f source.Files, o Options) *fixture {
	t.Helper()
	x := &fixture{
		charon: vicitest.Serve(t, handle),
		src:    newSource(f),
		kube:   fake.NewClientBuilder().WithObjects(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: statusCM}}).Build(),
		m:      metrics.New(),
	}
	o.Source, o.ViciSocket, o.Interval, o.Metrics = x.src, x.charon.Socket(), 20*time.Millisecond, x.m
	o.Publisher = &status.Publisher{Client: x.kube, Namespace: ns, Name: statusCM}
	x.agent = New(o)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- x.agent.Run(ctx) }()
	x.stop = sync.OnceFunc(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Run(): %v", err)
			}
		case <-time.After(within):
			t.Errorf("Run() did not return within %s of its context's end", within)
		}
	})
	t.Cleanup(x.stop)
	return x
}

func (x *fixture) actions() []string { return actions(x.charon.Commands()) }

// statusKey returns key of the status ConfigMap.
func (x *fixture) statusKey(t *testing.T, key string) string {
	t.Helper()
	cm := &corev1.ConfigMap{}
	if err := x.kube.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: statusCM}, cm); err != nil {
		t.Fatal(err)
	}
	return cm.Data[key]
}

// reloads returns ipsec_config_reloads_total{result}.
func (x *fixture) reloads(t *testing.T, result string) float64 {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(x.m)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "ipsec_config_reloads_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "result" && l.GetValue() == result {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	t.Fatalf("no ipsec_config_reloads_total{result=%q}", result)
	return 0
}

func waitUntil(t *testing.T, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("not within %s: %s", within, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// settled waits until the agent has asked charon's version (its tick)
// twice more, so that whatever a tick would do was done.
func (x *fixture) settled(t *testing.T) {
	t.Helper()
	count := func() int {
		n := 0
		for _, c := range x.charon.Commands() {
			if c.Name == "version" {
				n++
			}
		}
		return n
	}
	n := count()
	waitUntil(t, "two more ticks", func() bool { return count() >= n+2 })
}

// TestRunReloads proves the loop's reloads: the configuration is loaded at
// the start and the status says which (its hash); an unchanged one is not
// loaded again on the agent's ticks; a change is loaded after the source's
// signal (the removed connection unloaded and its SAs closed); a
// configuration that does not parse is refused, the running one kept, the
// agent still ready.
func TestRunReloads(t *testing.T) {
	first, second := files("a"), files("b")
	x := start(t, first, Options{})
	waitUntil(t, "ready", x.agent.Ready)
	waitUntil(t, "the loaded configuration's hash published", func() bool { return x.statusKey(t, contract.KeyConfigHash) == first.Hash() })
	x.settled(t)
	if diff := cmp.Diff([]string{"load-shared", "load-conn a (a-1: start)"}, x.actions()); diff != "" {
		t.Errorf("the configuration loaded once at the start, not again on the ticks: -want, +got:\n%s", diff)
	}

	x.src.set(second)
	waitUntil(t, "the new configuration's hash published", func() bool { return x.statusKey(t, contract.KeyConfigHash) == second.Hash() })
	x.settled(t)
	want := []string{"load-shared", "load-conn a (a-1: start)", "load-shared", "load-conn b (b-1: start)", "unload-conn a", "terminate ike a"}
	if diff := cmp.Diff(want, x.actions()); diff != "" {
		t.Errorf("a changed configuration loaded, the removed connection unloaded and closed: -want, +got:\n%s", diff)
	}

	x.src.set(source.Files{SwanctlConf: []byte("connections {\n  c {\n"), Secrets: second.Secrets})
	waitUntil(t, "the refusal counted", func() bool { return x.reloads(t, metrics.ResultFailure) == 1 })
	x.settled(t)
	if diff := cmp.Diff(want, x.actions()); diff != "" {
		t.Errorf("a configuration that does not parse changes nothing in charon: -want, +got:\n%s", diff)
	}
	if !x.agent.Ready() {
		t.Error("after a refused configuration the agent is not ready, with the last one running")
	}
	if got := x.statusKey(t, contract.KeyConfigHash); got != second.Hash() {
		t.Errorf("after a refused configuration the status names %q, want the running one's %q", got, second.Hash())
	}
	if got := x.reloads(t, metrics.ResultSuccess); got != 2 {
		t.Errorf("successful reloads: %v, want 2", got)
	}
}

// TestRunCharonRestarts proves that a lost charon makes the agent unready
// and that it connects again and loads the configuration into the new
// charon, which knows nothing of the old one's.
func TestRunCharonRestarts(t *testing.T) {
	x := start(t, files("a"), Options{})
	waitUntil(t, "ready", x.agent.Ready)
	x.charon.Drop()
	waitUntil(t, "unready without charon", func() bool { return !x.agent.Ready() })
	waitUntil(t, "ready again", x.agent.Ready)
	if diff := cmp.Diff([]string{"load-shared", "load-conn a (a-1: start)", "load-shared", "load-conn a (a-1: start)"}, x.actions()); diff != "" {
		t.Errorf("the configuration loaded into the restarted charon: -want, +got:\n%s", diff)
	}
}

// TestRunStandby proves the roles: a standby loads the configuration
// passive (no child started) and publishes no status; made active, it
// loads it as rendered and publishes; made a standby again, it loads it
// passive and closes every IKE SA.
func TestRunStandby(t *testing.T) {
	x := start(t, files("a"), Options{Standby: true})
	waitUntil(t, "ready", x.agent.Ready)
	x.settled(t)
	if diff := cmp.Diff([]string{"load-shared", "load-conn a (a-1: none)"}, x.actions()); diff != "" {
		t.Errorf("a standby's load: -want, +got:\n%s", diff)
	}
	if got := x.statusKey(t, contract.KeyTunnels); got != "" {
		t.Errorf("a standby published the tunnels %s", got)
	}

	x.agent.SetActive(true)
	waitUntil(t, "the active pod's tunnels published", func() bool { return x.statusKey(t, contract.KeyTunnels) != "" })
	want := []string{"load-shared", "load-conn a (a-1: none)", "load-shared", "load-conn a (a-1: start)"}
	if diff := cmp.Diff(want, x.actions()); diff != "" {
		t.Errorf("made active: -want, +got:\n%s", diff)
	}

	x.agent.SetActive(false)
	want = append(want, "load-shared", "load-conn a (a-1: none)", "terminate ike a")
	waitUntil(t, "a standby again", func() bool { return len(x.actions()) >= len(want) })
	if diff := cmp.Diff(want, x.actions()); diff != "" {
		t.Errorf("made a standby again: -want, +got:\n%s", diff)
	}
}

// TestRunStopsWhileCharonLists proves that the agent stops on SIGTERM while
// charon is still busy with the list-sas of the watcher and of the
// watchdog, and sends their SAs only afterwards, as a loaded charon does
// (the kernel tier's guest): Run returns within within. It did not return
// at all when the watchdog's VICI session deadlocked (see status.Streamer).
func TestRunStopsWhileCharonLists(t *testing.T) {
	var armed atomic.Bool
	listing := make(chan struct{}, 2)
	release := make(chan struct{})
	x := startWith(t, func(cmd string, _ *vici.Message) vicitest.Reply {
		if cmd != "list-sas" || !armed.Load() {
			return vicitest.Reply{}
		}
		select {
		case listing <- struct{}{}:
		default: // a later list-sas, after the two the test waits for
		}
		<-release
		return vicitest.Reply{Event: "list-sa", Events: []*vici.Message{vicitest.Msg("a", vicitest.Msg("uniqueid", "1", "state", "ESTABLISHED"))}}
	}, files("a"), Options{Poll: 50 * time.Millisecond, ReinitiateAfter: 100 * time.Millisecond})
	releaseOnce := sync.OnceFunc(func() { close(release) })
	t.Cleanup(releaseOnce) // before the charon's cleanup, which waits for its handlers
	waitUntil(t, "ready", x.agent.Ready)
	armed.Store(true)
	// Each of the two sessions that list (the watcher's poll, the
	// watchdog's look at tunnel a, down) waits in its own handler.
	for i := range 2 {
		select {
		case <-listing:
		case <-time.After(within):
			t.Fatalf("charon got %d list-sas within %s, want 2 (the watcher's and the watchdog's)", i, within)
		}
	}
	// charon sends the SAs while the agent stops.
	time.AfterFunc(100*time.Millisecond, releaseOnce)
	x.stop()
}
