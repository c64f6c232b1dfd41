package role

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/prometheus/client_golang/prometheus/testutil"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	kubefake "k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/ipsecgw/provider-ipsec/apis/cluster/gateway/v1alpha1"
	"github.com/ipsecgw/provider-ipsec/internal/agent/metrics"
	"github.com/ipsecgw/provider-ipsec/internal/contract"
)

const (
	ns     = "tenant-a"
	status = "vpn" + contract.StatusSuffix
	// within bounds every wait of these tests: the roles act at once (a
	// free Lease is taken at the first try), so it only matters on a
	// machine too busy to schedule them.
	within = 10 * time.Second
)

// calls records, in order, the calls to a role's holder and agent.
type calls struct {
	mu  sync.Mutex
	all []string
}

func (c *calls) add(s string) { c.mu.Lock(); c.all = append(c.all, s); c.mu.Unlock() }

func (c *calls) get() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.all...)
}

// has says whether s was recorded.
func (c *calls) has(s string) bool {
	for _, x := range c.get() {
		if x == s {
			return true
		}
	}
	return false
}

// fakeAgent is the agent's loop: Run waits for ctx and returns err (at
// once with failNow).
type fakeAgent struct {
	c       *calls
	err     error
	failNow bool
}

func (a *fakeAgent) Run(ctx context.Context) error {
	if !a.failNow {
		<-ctx.Done()
	}
	return a.err
}

func (a *fakeAgent) SetActive(active bool) {
	if active {
		a.c.add("agent active")
	} else {
		a.c.add("agent standby")
	}
}

// fakeHolder is an address or a tenant interface that only records.
type fakeHolder struct{ c *calls }

func (h fakeHolder) Take(context.Context) error    { h.c.add("take"); return nil }
func (h fakeHolder) Release(context.Context) error { h.c.add("release"); return nil }
func (h fakeHolder) Refresh(context.Context, time.Duration) error {
	return nil
}
func (h fakeHolder) Answer() error { h.c.add("answer"); return nil }

// world is the API server a role talks to: client-go's fake clientset for
// the Lease and controller-runtime's fake client for the status ConfigMap.
type world struct {
	kube *kubefake.Clientset
	c    client.Client
	m    *metrics.Collector
}

func newWorld(t *testing.T, leases ...runtime.Object) *world {
	t.Helper()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: status}}
	return &world{
		kube: kubefake.NewClientset(leases...),
		c:    fake.NewClientBuilder().WithObjects(cm).Build(),
		m:    metrics.New(),
	}
}

func (w *world) options(a Agent) Options {
	return Options{Agent: a, Metrics: w.m, Kube: w.kube, Client: w.c, Namespace: ns, StatusConfigMap: status, Pod: "vpn-b", Node: "node-2"}
}

// statusKey returns key of the status ConfigMap, empty while it is not
// there.
func (w *world) statusKey(t *testing.T, key string) string {
	t.Helper()
	cm := &corev1.ConfigMap{}
	if err := w.c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: status}, cm); err != nil {
		t.Fatal(err)
	}
	return cm.Data[key]
}

// holderOf returns the holder the Lease name names, empty for none.
func (w *world) holderOf(t *testing.T, name string) string {
	t.Helper()
	l, err := w.kube.CoordinationV1().Leases(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return ptr.Deref(l.Spec.HolderIdentity, "")
}

// metric compares the leader and failover metrics with want.
func (w *world) metric(want string) error {
	return testutil.CollectAndCompare(w.m, strings.NewReader(want), "ipsec_gateway_leader", "ipsec_gateway_failovers_total")
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

// heldLease is the Lease name held by holder, last renewed renewed ago
// for 1 s: client-go counts a Lease's duration from when it first read it,
// so that the pod takes it over a second after its start.
func heldLease(name, holder string, renewed time.Duration) *coordinationv1.Lease {
	at := metav1.NewMicroTime(time.Now().Add(-renewed))
	return &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: coordinationv1.LeaseSpec{
			HolderIdentity: ptr.To(holder), LeaseDurationSeconds: ptr.To[int32](1),
			AcquireTime: &at, RenewTime: &at,
		},
	}
}

// metricsText is the exposition of the leader and failover metrics, with
// the failovers by expiry and the leader gauge to fill in.
const metricsText = `
# HELP ipsec_gateway_failovers_total Times this gateway pod became active after another pod held the gateway's Lease, by cause.
# TYPE ipsec_gateway_failovers_total counter
ipsec_gateway_failovers_total{cause="expired"} %d
ipsec_gateway_failovers_total{cause="released"} 0
# HELP ipsec_gateway_leader Whether this gateway pod is the active one (1), holding the gateway's address and tunnels, or a standby (0).
# TYPE ipsec_gateway_leader gauge
ipsec_gateway_leader %d
`

func TestElected(t *testing.T) {
	type want struct {
		leader v1alpha1.LeaderStatus
		// active are the calls once this pod is active, stopped those
		// after Run returned.
		active, stopped []string
		failovers       int
	}
	cases := map[string]struct {
		reason string
		leases []runtime.Object
		want   want
	}{
		"First": {
			reason: "A Lease never held: the pod gives up what it may hold from an earlier run, takes the address, then makes the agent active, reports itself active (cause first, no failover), and when it stops gives the address up, makes the agent a standby and releases the Lease.",
			want: want{
				leader:  v1alpha1.LeaderStatus{Pod: "vpn-b", Node: "node-2", Cause: "first"},
				active:  []string{"release", "agent standby", "take", "agent active"},
				stopped: []string{"release", "agent standby", "take", "agent active", "release", "agent standby"},
			},
		},
		"Expired": {
			reason: "A Lease that vpn-a stopped renewing: the pod takes over, counts a failover by expiry and reports vpn-a as the previous holder.",
			leases: []runtime.Object{heldLease("vpn", "vpn-a", time.Minute)},
			want: want{
				leader:    v1alpha1.LeaderStatus{Pod: "vpn-b", Node: "node-2", Cause: "expired", Previous: "vpn-a"},
				active:    []string{"release", "agent standby", "take", "agent active"},
				stopped:   []string{"release", "agent standby", "take", "agent active", "release", "agent standby"},
				failovers: 1,
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			w := newWorld(t, tc.leases...)
			c := &calls{}
			r := Elected{Options: w.options(&fakeAgent{c: c}), Lease: "vpn", Address: fakeHolder{c: c}}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			done := make(chan error, 1)
			go func() { done <- r.Run(ctx) }()

			waitUntil(t, "the pod reported active", func() bool { return w.statusKey(t, contract.KeyLeader) != "" })
			var got v1alpha1.LeaderStatus
			if err := json.Unmarshal([]byte(w.statusKey(t, contract.KeyLeader)), &got); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want.leader, got, cmpopts.IgnoreFields(v1alpha1.LeaderStatus{}, "Since")); diff != "" {
				t.Errorf("%s\nstatus ConfigMap's %s: -want, +got:\n%s", tc.reason, contract.KeyLeader, diff)
			}
			if got.Since == nil {
				t.Errorf("%s\nstatus ConfigMap's %s has no since", tc.reason, contract.KeyLeader)
			}
			if diff := cmp.Diff(tc.want.active, c.get()); diff != "" {
				t.Errorf("%s\ncalls while active: -want, +got:\n%s", tc.reason, diff)
			}
			if h := w.holderOf(t, "vpn"); h != "vpn-b" {
				t.Errorf("%s\nwhile active the Lease is held by %q, want vpn-b", tc.reason, h)
			}
			if err := w.metric(fmt.Sprintf(metricsText, tc.want.failovers, 1)); err != nil {
				t.Errorf("%s\nmetrics while active: %v", tc.reason, err)
			}

			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("%s\nRun(): %v", tc.reason, err)
				}
			case <-time.After(within):
				t.Fatalf("Run() did not return within %s of its context's end", within)
			}
			if diff := cmp.Diff(tc.want.stopped, c.get()); diff != "" {
				t.Errorf("%s\ncalls after Run(): -want, +got:\n%s", tc.reason, diff)
			}
			if h := w.holderOf(t, "vpn"); h != "" {
				t.Errorf("%s\nafter Run() the Lease is held by %q, want released", tc.reason, h)
			}
			if err := w.metric(fmt.Sprintf(metricsText, tc.want.failovers, 0)); err != nil {
				t.Errorf("%s\nmetrics after Run(): %v", tc.reason, err)
			}
		})
	}
}

func TestSingle(t *testing.T) {
	errLoop := errors.New("the loop failed")
	type want struct {
		// active are the calls once the pod is the gateway, stopped those
		// after Run returned.
		active, stopped []string
		silentStart     string
		leader          int
		err             error
	}
	cases := map[string]struct {
		reason string
		lease  string
		// cutOff makes every Lease request fail, as for a pod that cannot
		// reach the API server.
		cutOff bool
		agent  fakeAgent
		want   want
	}{
		"Handover": {
			reason: "With the gateway's Lease the pod reports that it starts silent, answers and makes the agent active once it holds the Lease, and when it stops silences the interface (again after the election) and releases the Lease, the agent left active: what charon holds goes with the pod.",
			lease:  "vpn",
			want: want{
				active:      []string{"take", "agent active"},
				stopped:     []string{"take", "agent active", "release", "release"},
				silentStart: "vpn-b",
				leader:      1,
			},
		},
		"CutOff": {
			reason: "A pod that cannot read the Lease within the fallback answers without it (still reporting that it starts silent), and goes quiet when it stops.",
			lease:  "vpn",
			cutOff: true,
			want: want{
				active:      []string{"take", "agent active"},
				stopped:     []string{"take", "agent active", "release"},
				silentStart: "vpn-b",
			},
		},
		"NoHandover": {
			reason: "Without a Lease (outside a gateway pod) the interface answers from the start, the agent active as it was started, and is silenced when the pod stops.",
			want: want{
				active:  []string{"answer"},
				stopped: []string{"answer", "release"},
			},
		},
		"LoopFails": {
			reason: "The agent's loop ending with an error ends Run with it.",
			agent:  fakeAgent{err: errLoop, failNow: true},
			want: want{
				active:  []string{"answer"},
				stopped: []string{"answer"},
				err:     errLoop,
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			w := newWorld(t)
			if tc.cutOff {
				w.kube.PrependReactor("*", "leases", func(k8stesting.Action) (bool, runtime.Object, error) {
					return true, nil, errors.New("cut off")
				})
			}
			c := &calls{}
			a := tc.agent
			a.c = c
			r := Single{Options: w.options(&a), Interface: fakeHolder{c: c}, Lease: tc.lease, Fallback: 100 * time.Millisecond}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			done := make(chan error, 1)
			go func() { done <- r.Run(ctx) }()

			last := tc.want.active[len(tc.want.active)-1]
			waitUntil(t, "the pod answering: "+last, func() bool { return c.has(last) })
			if tc.want.silentStart != "" {
				waitUntil(t, "the pod reporting that it starts silent", func() bool { return w.statusKey(t, contract.KeySilentStart) != "" })
			}
			if diff := cmp.Diff(tc.want.active, c.get()); diff != "" {
				t.Errorf("%s\ncalls while the gateway: -want, +got:\n%s", tc.reason, diff)
			}
			if got := w.statusKey(t, contract.KeySilentStart); got != tc.want.silentStart {
				t.Errorf("%s\nstatus ConfigMap's %s: got %q, want %q", tc.reason, contract.KeySilentStart, got, tc.want.silentStart)
			}
			if tc.lease != "" && !tc.cutOff {
				if h := w.holderOf(t, tc.lease); h != "vpn-b" {
					t.Errorf("%s\nwhile the gateway the Lease is held by %q, want vpn-b", tc.reason, h)
				}
			}
			if err := w.metric(fmt.Sprintf(metricsText, 0, tc.want.leader)); err != nil {
				t.Errorf("%s\nmetrics while the gateway: %v", tc.reason, err)
			}

			cancel()
			select {
			case err := <-done:
				if diff := cmp.Diff(tc.want.err, err, cmpopts.EquateErrors()); diff != "" {
					t.Errorf("%s\nRun(): -want error, +got error:\n%s", tc.reason, diff)
				}
			case <-time.After(within):
				t.Fatalf("Run() did not return within %s of its context's end", within)
			}
			if diff := cmp.Diff(tc.want.stopped, c.get()); diff != "" {
				t.Errorf("%s\ncalls after Run(): -want, +got:\n%s", tc.reason, diff)
			}
			if tc.lease != "" && !tc.cutOff {
				if h := w.holderOf(t, tc.lease); h != "" {
					t.Errorf("%s\nafter Run() the Lease is held by %q, want released", tc.reason, h)
				}
			}
		})
	}
}

func TestHandoverLease(t *testing.T) {
	cases := map[string]struct {
		reason                 string
		lease, statusConfigMap string
		want                   string
	}{
		"AsThePodRunsIt": {
			reason:          "The single pod's status ConfigMap names the gateway, whose Lease it hands over through.",
			statusConfigMap: "vpn" + contract.StatusSuffix,
			want:            "vpn",
		},
		"NoStatus": {
			reason: "An agent without a status ConfigMap (outside a gateway pod) has no handover.",
		},
		"OtherName": {
			reason:          "A status ConfigMap the provider did not name says no gateway.",
			statusConfigMap: "tunnels",
		},
		"Elected": {
			reason:          "A pod of an active/standby pair is elected on --lease, not handed over to.",
			statusConfigMap: "vpn" + contract.StatusSuffix,
			lease:           "vpn",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, HandoverLease(tc.lease, tc.statusConfigMap)); diff != "" {
				t.Errorf("%s\nHandoverLease(): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}
