//go:build integration

package integration

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ipsecgw/provider-ipsec/internal/agent/leader"
)

// timeline is what the pods of one election held, in order: "A take",
// "B release", ...
type timeline struct {
	mu     sync.Mutex
	events []string
	at     []time.Time
	// holding is the pods that hold the address now; overlaps counts the
	// moments two did.
	holding  map[string]bool
	overlaps int
}

func (tl *timeline) add(pod, what string) {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	switch what {
	case "take":
		tl.holding[pod] = true
		if len(tl.holding) > 1 {
			tl.overlaps++
		}
	case "release":
		delete(tl.holding, pod)
	}
	tl.events = append(tl.events, pod+" "+what)
	tl.at = append(tl.at, time.Now())
}

// holder returns the pod holding the address, "" for none.
func (tl *timeline) holder() string {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	for p := range tl.holding {
		return p
	}
	return ""
}

// last returns when pod last did what.
func (tl *timeline) last(pod, what string) time.Time {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	for i := len(tl.events) - 1; i >= 0; i-- {
		if tl.events[i] == pod+" "+what {
			return tl.at[i]
		}
	}
	return time.Time{}
}

// recorder is a leader.Holder that records on a timeline.
type recorder struct {
	pod string
	tl  *timeline
}

func (r recorder) Take(context.Context) error    { r.tl.add(r.pod, "take"); return nil }
func (r recorder) Release(context.Context) error { r.tl.add(r.pod, "release"); return nil }

// Refresh records nothing: the timeline is of takes and releases.
func (recorder) Refresh(context.Context, time.Duration) error { return nil }

// agentPod is one elected pod: its own API connection, which cut
// breaks, as a node cut off from the API server is.
type agentPod struct {
	name string
	cut  atomic.Bool
	stop context.CancelFunc
	done chan error

	mu        sync.Mutex
	takeovers []leader.Takeover
}

func (p *agentPod) takeover() []leader.Takeover {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]leader.Takeover(nil), p.takeovers...)
}

func startPod(t *testing.T, name, ns string, tl *timeline) *agentPod {
	t.Helper()
	p := &agentPod{name: name, done: make(chan error, 1)}
	c := rest.CopyConfig(cfg)
	c.Timeout = 2 * time.Second
	c.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(r *http.Request) (*http.Response, error) {
			if p.cut.Load() {
				return nil, errors.New("cut off from the API server (test)")
			}
			return rt.RoundTrip(r)
		})
	}
	cs, err := kubernetes.NewForConfig(c)
	if err != nil {
		t.Fatal(err)
	}
	lock, err := resourcelock.New(resourcelock.LeasesResourceLock, ns, "vpn", cs.CoreV1(), cs.CoordinationV1(), resourcelock.ResourceLockConfig{Identity: name})
	if err != nil {
		t.Fatal(err)
	}
	e := &leader.Elector{
		Lock: lock, Holder: recorder{pod: name, tl: tl},
		Active: func(_ context.Context, active bool, tk leader.Takeover) {
			if active {
				p.mu.Lock()
				p.takeovers = append(p.takeovers, tk)
				p.mu.Unlock()
			}
		},
	}
	ctx, cancel := context.WithCancel(context.Background())
	p.stop = cancel
	go func() { p.done <- e.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-p.done; err != nil {
			t.Errorf("%s: %v", name, err)
		}
	})
	return p
}

// waitHolder waits up to within for pod to hold the address and returns
// how long that took.
func waitHolder(t *testing.T, tl *timeline, pod string, within time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	for tl.holder() != pod {
		if time.Since(start) > within {
			t.Fatalf("%s does not hold the address after %s; timeline %v", pod, within, tl.events)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return time.Since(start)
}

// stays says that pod holds the address, and nobody else took it, for d.
func stays(t *testing.T, tl *timeline, pod string, d time.Duration) {
	t.Helper()
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		if h := tl.holder(); h != pod {
			t.Fatalf("holder %q, want %s to keep the address; timeline %v", h, pod, tl.events)
		}
	}
}

// TestLeaderElection runs the election of two agents on a Lease of a real
// kube-apiserver, with the agents' default timings: the first takes the
// address, the second stays standby; a leader cut off from the API server
// gives the address up before the other takes it (the Lease expired), and
// when it is back does not take it again while the other renews; a leader
// that stops hands over at once (released). At no moment do both hold it.
func TestLeaderElection(t *testing.T) {
	ctx := context.Background()
	ns := fmt.Sprintf("leader-%d", nsSeq.Add(1))
	if err := kube.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	// The provider creates the Lease, with no holder (workload.lease).
	if err := kube.Create(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "vpn"}}); err != nil {
		t.Fatal(err)
	}
	tl := &timeline{holding: map[string]bool{}}

	a := startPod(t, "vpn-a", ns, tl)
	took := waitHolder(t, tl, "vpn-a", 5*time.Second)
	t.Logf("vpn-a active %s after start", took)
	b := startPod(t, "vpn-b", ns, tl)
	stays(t, tl, "vpn-a", 3*time.Second)

	// vpn-a's node loses the API server.
	cut := time.Now()
	a.cut.Store(true)
	took = waitHolder(t, tl, "vpn-b", 15*time.Second)
	released, taken := tl.last("vpn-a", "release"), tl.last("vpn-b", "take")
	t.Logf("cut off: vpn-a gave up after %s, vpn-b active after %s (gap %s)", released.Sub(cut), took, taken.Sub(released))
	if released.IsZero() || !released.Before(taken) {
		t.Fatalf("vpn-a gave the address up at %v, after vpn-b took it at %v; timeline %v", released, taken, tl.events)
	}
	if got := b.takeover(); len(got) != 1 || got[0].Cause != leader.CauseExpired || got[0].Previous != "vpn-a" {
		t.Errorf("vpn-b's takeover %+v, want cause %s from vpn-a", got, leader.CauseExpired)
	}

	// vpn-a comes back: vpn-b keeps renewing, vpn-a stays standby.
	a.cut.Store(false)
	stays(t, tl, "vpn-b", 10*time.Second)

	// vpn-b stops (its pod is deleted): it gives up the address, then
	// releases the Lease, and vpn-a takes over within a retry period.
	stopped := time.Now()
	b.stop()
	<-b.done
	b.done <- nil // for its cleanup
	took = waitHolder(t, tl, "vpn-a", 3*time.Second)
	t.Logf("vpn-b stopped: vpn-a active %s later", took)
	if got := a.takeover(); len(got) != 2 || got[1].Cause != leader.CauseReleased {
		t.Errorf("vpn-a's takeovers %+v, want first then %s", got, leader.CauseReleased)
	}
	if tl.last("vpn-b", "release").After(tl.last("vpn-a", "take")) || tl.last("vpn-b", "release").Before(stopped) {
		t.Errorf("vpn-b did not give the address up before vpn-a took it; timeline %v", tl.events)
	}
	if tl.overlaps != 0 {
		t.Errorf("two pods held the address at once %d time(s); timeline %v", tl.overlaps, tl.events)
	}
	l := &coordinationv1.Lease{}
	if err := kube.Get(ctx, client.ObjectKey{Namespace: ns, Name: "vpn"}, l); err != nil {
		t.Fatal(err)
	}
	if l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity != "vpn-a" {
		t.Errorf("Lease holder %v, want vpn-a", l.Spec.HolderIdentity)
	}
}
