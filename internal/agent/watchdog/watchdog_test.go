package watchdog

import (
	"context"
	"fmt"
	"iter"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/strongswan/govici/vici"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ipsecgw/provider-ipsec/apis/cluster/gateway/v1alpha1"
	"github.com/ipsecgw/provider-ipsec/internal/agent/status"
	"github.com/ipsecgw/provider-ipsec/internal/agent/vicitest"
)

// msg builds a vici message from alternating keys and values.
var msg = vicitest.Msg

// sa is a list-sa event of one IKE SA of conn in state with the named
// CHILD_SAs and, if given, queued tasks.
func sa(conn, state string, queued []string, children ...string) *vici.Message {
	kv := []any{"state", state}
	if len(queued) > 0 {
		kv = append(kv, "tasks-queued", queued)
	}
	if len(children) > 0 {
		cs := vici.NewMessage()
		for i, c := range children {
			_ = cs.Set(c+"-"+string(rune('1'+i)), msg("name", c, "state", "INSTALLED"))
		}
		kv = append(kv, "child-sas", cs)
	}
	return msg(conn, msg(kv...))
}

// fakeCharon answers list-sas with sas (those of the connection asked
// for, if one is) and records initiate requests as "conn/child (timeout)".
type fakeCharon struct {
	mu        sync.Mutex
	sas       []*vici.Message
	lists     int
	initiated []string
	// terminated are the terminate requests, "ike-id (timeout)".
	terminated []string
	fail       string
}

func (f *fakeCharon) Call(_ context.Context, cmd string, in *vici.Message) (*vici.Message, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := msg("success", "yes")
	if cmd == "terminate" {
		how, _ := in.Get("timeout").(string)
		if in.Get("force") == "yes" {
			how = "force"
		}
		f.terminated = append(f.terminated, in.Get("ike-id").(string)+" ("+how+")")
	}
	if cmd == "initiate" {
		f.initiated = append(f.initiated, in.Get("ike").(string)+"/"+in.Get("child").(string)+" ("+in.Get("timeout").(string)+")")
		if f.fail != "" {
			out = msg("success", "no", "errmsg", f.fail)
		}
	}
	return out, nil
}

func (f *fakeCharon) CallStreaming(_ context.Context, cmd, _ string, in *vici.Message) iter.Seq2[*vici.Message, error] {
	f.mu.Lock()
	sas := f.sas
	f.lists++
	f.mu.Unlock()
	return func(yield func(*vici.Message, error) bool) {
		if cmd != "list-sas" || in.Get("noblock") != "yes" {
			return
		}
		for _, m := range sas {
			if ike, ok := in.Get("ike").(string); ok && m.Get(ike) == nil {
				continue
			}
			if !yield(m, nil) {
				return
			}
		}
	}
}

var t0 = time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)

// tunnelStatus is a status read of tunnel name in IKE state, with children INSTALLED.
func tunnelStatus(name, state string, children ...string) v1alpha1.TunnelStatus {
	ts := v1alpha1.TunnelStatus{Name: name, IKEState: state}
	for _, c := range children {
		ts.ChildSAs = append(ts.ChildSAs, v1alpha1.ChildSAStatus{Name: c, State: "INSTALLED"})
	}
	return ts
}

// A read is one status read the Watchdog observes, at t0 plus at.
type read struct {
	at      time.Duration
	tunnels []v1alpha1.TunnelStatus
}

func TestWatchdog(t *testing.T) {
	started := map[string][]string{"a": {"a-1", "a-2"}, "r": {}}
	cases := map[string]struct {
		reason string
		// reads are observed in order; the worker runs what was queued
		// after each.
		reads []read
		// sas is what charon lists when the worker checks again.
		sas  []*vici.Message
		fail string
		// want are the initiate requests, wantLast the status of a read
		// at the time of the last one, after the worker ran.
		want     []string
		wantLast []v1alpha1.TunnelStatus
	}{
		"DownShorterThanBound": {
			reason:   "A tunnel without an IKE SA for less than After is left to charon.",
			reads:    []read{{0, []v1alpha1.TunnelStatus{tunnelStatus("a", "DOWN")}}, {29 * time.Second, []v1alpha1.TunnelStatus{tunnelStatus("a", "DOWN")}}},
			wantLast: []v1alpha1.TunnelStatus{tunnelStatus("a", "DOWN")},
		},
		"DownLongerThanBound": {
			reason: "A tunnel without an IKE SA for After is initiated, every kept-up child, without charon waiting, and the status says so.",
			reads:  []read{{0, []v1alpha1.TunnelStatus{tunnelStatus("a", "DOWN")}}, {30 * time.Second, []v1alpha1.TunnelStatus{tunnelStatus("a", "DOWN")}}},
			want:   []string{"a/a-1 (-1)", "a/a-2 (-1)"},
			wantLast: []v1alpha1.TunnelStatus{func() v1alpha1.TunnelStatus {
				ts := tunnelStatus("a", "DOWN")
				ts.Reinitiations, ts.LastReinitiate = 1, &metav1.Time{Time: t0.Add(30 * time.Second)}
				return ts
			}()},
		},
		"OncePerBound": {
			reason: "A tunnel that stays down is initiated again only After after the last time.",
			reads: []read{
				{0, []v1alpha1.TunnelStatus{tunnelStatus("a", "DOWN")}}, {30 * time.Second, []v1alpha1.TunnelStatus{tunnelStatus("a", "DOWN")}},
				{59 * time.Second, []v1alpha1.TunnelStatus{tunnelStatus("a", "DOWN")}}, {60 * time.Second, []v1alpha1.TunnelStatus{tunnelStatus("a", "DOWN")}},
			},
			want: []string{"a/a-1 (-1)", "a/a-2 (-1)", "a/a-1 (-1)", "a/a-2 (-1)"},
			wantLast: []v1alpha1.TunnelStatus{func() v1alpha1.TunnelStatus {
				ts := tunnelStatus("a", "DOWN")
				ts.Reinitiations, ts.LastReinitiate = 2, &metav1.Time{Time: t0.Add(60 * time.Second)}
				return ts
			}()},
		},
		"DownCountsFromTheDrop": {
			reason: "A tunnel's downtime counts from the first read without an IKE SA, not from the last one with it.",
			reads: []read{
				{0, []v1alpha1.TunnelStatus{tunnelStatus("a", "ESTABLISHED", "a-1", "a-2")}}, {9 * time.Second, []v1alpha1.TunnelStatus{tunnelStatus("a", "DOWN")}},
				{38 * time.Second, []v1alpha1.TunnelStatus{tunnelStatus("a", "DOWN")}},
			},
			wantLast: []v1alpha1.TunnelStatus{tunnelStatus("a", "DOWN")},
		},
		"CharonTrying": {
			reason: "A tunnel whose IKE SA is CONNECTING is charon's own retry: the bound starts again.",
			reads: []read{
				{0, []v1alpha1.TunnelStatus{tunnelStatus("a", "DOWN")}}, {20 * time.Second, []v1alpha1.TunnelStatus{tunnelStatus("a", "CONNECTING")}},
				{45 * time.Second, []v1alpha1.TunnelStatus{tunnelStatus("a", "DOWN")}},
			},
			wantLast: []v1alpha1.TunnelStatus{tunnelStatus("a", "DOWN")},
		},
		"CharonTryingWhenChecked": {
			reason:   "When charon has an IKE SA of the connection by the time the worker checks, nothing is initiated.",
			reads:    []read{{0, []v1alpha1.TunnelStatus{tunnelStatus("a", "DOWN")}}, {30 * time.Second, []v1alpha1.TunnelStatus{tunnelStatus("a", "DOWN")}}},
			sas:      []*vici.Message{sa("a", "CONNECTING", nil)},
			wantLast: []v1alpha1.TunnelStatus{tunnelStatus("a", "DOWN")},
		},
		"ChildMissing": {
			reason: "A kept-up child missing from the ESTABLISHED IKE SA for After is initiated alone, into that IKE SA.",
			reads: []read{
				{0, []v1alpha1.TunnelStatus{tunnelStatus("a", "ESTABLISHED", "a-1")}}, {30 * time.Second, []v1alpha1.TunnelStatus{tunnelStatus("a", "ESTABLISHED", "a-1")}},
			},
			sas:  []*vici.Message{sa("a", "ESTABLISHED", nil, "a-1")},
			want: []string{"a/a-2 (-1)"},
			wantLast: []v1alpha1.TunnelStatus{func() v1alpha1.TunnelStatus {
				ts := tunnelStatus("a", "ESTABLISHED", "a-1")
				ts.Reinitiations, ts.LastReinitiate = 1, &metav1.Time{Time: t0.Add(30 * time.Second)}
				return ts
			}()},
		},
		"ChildMissingCountsFromTheDrop": {
			reason: "A child's downtime counts from the first read without it, not from the last one with it.",
			reads: []read{
				{0, []v1alpha1.TunnelStatus{tunnelStatus("a", "ESTABLISHED", "a-1", "a-2")}}, {9 * time.Second, []v1alpha1.TunnelStatus{tunnelStatus("a", "ESTABLISHED", "a-1")}},
				{38 * time.Second, []v1alpha1.TunnelStatus{tunnelStatus("a", "ESTABLISHED", "a-1")}},
			},
			sas:      []*vici.Message{sa("a", "ESTABLISHED", nil, "a-1")},
			wantLast: []v1alpha1.TunnelStatus{tunnelStatus("a", "ESTABLISHED", "a-1")},
		},
		"ChildMissingSinceEstablished": {
			reason: "A child's downtime counts only while its IKE SA is ESTABLISHED.",
			reads: []read{
				{0, []v1alpha1.TunnelStatus{tunnelStatus("a", "CONNECTING")}}, {20 * time.Second, []v1alpha1.TunnelStatus{tunnelStatus("a", "ESTABLISHED", "a-1")}},
				{40 * time.Second, []v1alpha1.TunnelStatus{tunnelStatus("a", "ESTABLISHED", "a-1")}},
			},
			sas:      []*vici.Message{sa("a", "ESTABLISHED", nil, "a-1")},
			wantLast: []v1alpha1.TunnelStatus{tunnelStatus("a", "ESTABLISHED", "a-1")},
		},
		"ChildBeingCreated": {
			reason: "While the IKE SA has exchanges queued (a CHILD_SA being created), nothing is initiated.",
			reads: []read{
				{0, []v1alpha1.TunnelStatus{tunnelStatus("a", "ESTABLISHED", "a-1")}}, {30 * time.Second, []v1alpha1.TunnelStatus{tunnelStatus("a", "ESTABLISHED", "a-1")}},
			},
			sas:      []*vici.Message{sa("a", "ESTABLISHED", []string{"CHILD_CREATE"}, "a-1")},
			wantLast: []v1alpha1.TunnelStatus{tunnelStatus("a", "ESTABLISHED", "a-1")},
		},
		"ChildInDuplicate": {
			reason: "A child present in another IKE SA of the connection is not initiated again.",
			reads: []read{
				{0, []v1alpha1.TunnelStatus{tunnelStatus("a", "ESTABLISHED", "a-1")}}, {30 * time.Second, []v1alpha1.TunnelStatus{tunnelStatus("a", "ESTABLISHED", "a-1")}},
			},
			sas:      []*vici.Message{sa("a", "ESTABLISHED", nil, "a-1"), sa("a", "ESTABLISHED", nil, "a-2")},
			wantLast: []v1alpha1.TunnelStatus{tunnelStatus("a", "ESTABLISHED", "a-1")},
		},
		"NotAlwaysOn": {
			reason:   "A tunnel without children charon starts itself (trap, respond) is never initiated.",
			reads:    []read{{0, []v1alpha1.TunnelStatus{tunnelStatus("r", "DOWN")}}, {time.Hour, []v1alpha1.TunnelStatus{tunnelStatus("r", "DOWN")}}},
			wantLast: []v1alpha1.TunnelStatus{tunnelStatus("r", "DOWN")},
		},
		"InitiateRefused": {
			reason:   "When charon refuses every initiate, nothing is counted.",
			reads:    []read{{0, []v1alpha1.TunnelStatus{tunnelStatus("a", "DOWN")}}, {30 * time.Second, []v1alpha1.TunnelStatus{tunnelStatus("a", "DOWN")}}},
			fail:     "CHILD_SA config 'a-1' not found",
			want:     []string{"a/a-1 (-1)", "a/a-2 (-1)"},
			wantLast: []v1alpha1.TunnelStatus{tunnelStatus("a", "DOWN")},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c := &fakeCharon{sas: tc.sas, fail: tc.fail}
			var now time.Time
			w := &Watchdog{Started: func(conn string) []string { return started[conn] }, Now: func() time.Time { return now }}
			w.work = make(chan job, queueSize)
			var last []v1alpha1.TunnelStatus
			for _, r := range tc.reads {
				now = t0.Add(r.at)
				last = append([]v1alpha1.TunnelStatus(nil), r.tunnels...)
				w.Observe(last)
				for len(w.work) > 0 {
					w.run(context.Background(), c, <-w.work)
				}
			}
			// The status read after the last one shows what the worker did.
			last = append([]v1alpha1.TunnelStatus(nil), tc.reads[len(tc.reads)-1].tunnels...)
			w.Observe(last)
			if diff := cmp.Diff(tc.want, c.initiated, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("%s\ninitiate requests: -want, +got:\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(tc.wantLast, last); diff != "" {
				t.Errorf("%s\nlast status: -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

// TestWatchdogServe checks that Serve takes the queued re-initiations and
// that Observe never blocks without a worker.
func TestWatchdogServe(t *testing.T) {
	c := &fakeCharon{}
	now := t0
	w := &Watchdog{Started: func(string) []string { return []string{"a-1"} }, Now: func() time.Time { return now }}
	w.Observe([]v1alpha1.TunnelStatus{tunnelStatus("a", "DOWN")})
	now = now.Add(time.Minute)
	w.Observe([]v1alpha1.TunnelStatus{tunnelStatus("a", "DOWN")}) // no worker: dropped, not blocked
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { w.Serve(ctx, c); close(done) }()
	for deadline := time.Now().Add(5 * time.Second); ; {
		w.Observe([]v1alpha1.TunnelStatus{tunnelStatus("a", "DOWN")})
		c.mu.Lock()
		n := len(c.initiated)
		c.mu.Unlock()
		if n > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("Serve did not initiate the queued tunnel")
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	<-done
	if diff := cmp.Diff([]string{"a/a-1 (-1)"}, c.initiated); diff != "" {
		t.Errorf("initiate requests: -want, +got:\n%s", diff)
	}
}

// withEstablished sets the established seconds of the IKE SA of
// connection a in m.
func withEstablished(m *vici.Message, seconds string) *vici.Message {
	_ = m.Get("a").(*vici.Message).Set("established", seconds)
	return m
}

// ike is a list-sa event of IKE SA id of connection a: initiated by the
// gateway or the peer, in state, with the named CHILD_SAs INSTALLED.
func ike(id string, ours bool, state string, children ...string) *vici.Message {
	kv := []any{"uniqueid", id, "state", state}
	if ours {
		kv = append(kv, "initiator", "yes")
	}
	if len(children) > 0 {
		cs := vici.NewMessage()
		for _, c := range children {
			_ = cs.Set(c+"-"+id, msg("name", c, "state", "INSTALLED"))
		}
		kv = append(kv, "child-sas", cs)
	}
	return msg("a", msg(kv...))
}

func TestWatchdogDuplicates(t *testing.T) {
	cases := map[string]struct {
		reason string
		sas    []*vici.Message
		// laterAt is when the second look runs, after the first.
		laterAt time.Duration
		// changed, if set, is what charon lists at the second look.
		changed []*vici.Message
		want    []string
	}{
		"OursBesideThePeers": {
			reason:  "The gateway's duplicate, beside the peer's IKE SA carrying every CHILD_SA for the grace, is closed without waiting.",
			sas:     []*vici.Message{ike("1", true, "ESTABLISHED", "a-1", "a-2"), ike("2", false, "ESTABLISHED", "a-1", "a-2")},
			laterAt: dupGrace,
			want:    []string{"1 (-1)"},
		},
		"OursConnecting": {
			reason:  "The gateway's IKE SA still being set up beside the peer's complete one is closed before it becomes a duplicate.",
			sas:     []*vici.Message{ike("3", true, "CONNECTING"), ike("2", false, "ESTABLISHED", "a-1", "a-2")},
			laterAt: dupGrace,
			want:    []string{"3 (-1)"},
		},
		"PeersIncomplete": {
			reason:  "When the peer's IKE SA lacks a CHILD_SA, the gateway's is not a duplicate: nothing is closed.",
			sas:     []*vici.Message{ike("1", true, "ESTABLISHED", "a-1", "a-2"), ike("2", false, "ESTABLISHED", "a-1")},
			laterAt: dupGrace,
		},
		"OnlyThePeers": {
			reason:  "Of the peer's own duplicates the older is closed, the newest (fewest seconds since established) kept.",
			sas:     []*vici.Message{ike("1", false, "ESTABLISHED", "a-1", "a-2"), withEstablished(ike("2", false, "ESTABLISHED", "a-1", "a-2"), "50")},
			laterAt: dupGrace,
			want:    []string{"2 (-1)"},
		},
		"Transient": {
			reason:  "A duplicate gone at the second look (a make-before-break reauthentication) is left alone.",
			sas:     []*vici.Message{ike("1", true, "ESTABLISHED", "a-1", "a-2"), ike("2", false, "ESTABLISHED", "a-1", "a-2")},
			laterAt: dupGrace,
			changed: []*vici.Message{ike("2", false, "ESTABLISHED", "a-1", "a-2")},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c := &fakeCharon{sas: tc.sas}
			now := t0
			var later []func()
			w := &Watchdog{Started: func(string) []string { return []string{"a-1", "a-2"} }, Now: func() time.Time { return now },
				AfterFunc: func(_ time.Duration, f func()) { later = append(later, f) }}
			w.work = make(chan job, queueSize)
			drain := func() {
				for len(w.work) > 0 {
					w.run(context.Background(), c, <-w.work)
				}
			}
			w.Observe([]v1alpha1.TunnelStatus{tunnelStatus("a", "ESTABLISHED", "a-1", "a-2")})
			drain()
			if len(c.terminated) > 0 {
				t.Fatalf("%s\nclosed %v at the first look", tc.reason, c.terminated)
			}
			now = now.Add(tc.laterAt)
			if tc.changed != nil {
				c.sas = tc.changed
			}
			for _, f := range later {
				f()
			}
			drain()
			if diff := cmp.Diff(tc.want, c.terminated, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("%s\nterminate requests: -want, +got:\n%s", tc.reason, diff)
			}
			if len(c.initiated) > 0 {
				t.Errorf("%s\ninitiated %v", tc.reason, c.initiated)
			}
		})
	}
}

// TestWatchdogPeersDuplicatesOnce checks that duplicates the peer initiated
// are closed once, and not again within peerDupRetry when the peer makes
// new ones (a peer re-creating each IKE SA it is told to delete).
func TestWatchdogPeersDuplicatesOnce(t *testing.T) {
	c := &fakeCharon{sas: []*vici.Message{ike("1", false, "ESTABLISHED", "a-1"), withEstablished(ike("2", false, "ESTABLISHED", "a-1"), "9")}}
	now := t0
	var later []func()
	w := &Watchdog{Started: func(string) []string { return []string{"a-1"} }, Now: func() time.Time { return now },
		AfterFunc: func(_ time.Duration, f func()) { later = append(later, f) }}
	w.work = make(chan job, queueSize)
	step := func(d time.Duration) {
		now = now.Add(d)
		w.Observe([]v1alpha1.TunnelStatus{tunnelStatus("a", "ESTABLISHED", "a-1")})
		for fs := later; len(fs) > 0; fs = later {
			later = nil
			for _, f := range fs {
				f()
			}
		}
		for len(w.work) > 0 {
			w.run(context.Background(), c, <-w.work)
		}
	}
	step(0)
	step(dupGrace)
	c.sas = []*vici.Message{ike("1", false, "ESTABLISHED", "a-1"), withEstablished(ike("3", false, "ESTABLISHED", "a-1"), "1")}
	step(dupCheckEvery)
	step(dupGrace)
	step(peerDupRetry - 3*dupGrace)
	if diff := cmp.Diff([]string{"2 (-1)"}, c.terminated); diff != "" {
		t.Errorf("terminate requests within peerDupRetry: -want, +got:\n%s", diff)
	}
	step(3 * dupGrace)
	step(dupGrace)
	if diff := cmp.Diff([]string{"2 (-1)", "3 (-1)"}, c.terminated); diff != "" {
		t.Errorf("terminate requests after peerDupRetry: -want, +got:\n%s", diff)
	}
}

// TestWatchdogLook checks the worker's own looks between status reads: a
// tunnel last seen down or with a CHILD_SA missing is listed every Tick and
// re-initiated once the bound has passed since the drop, without waiting
// for the next status read; a tunnel that is up is not listed.
func TestWatchdogLook(t *testing.T) {
	type look struct {
		at  time.Duration
		sas []*vici.Message
	}
	cases := map[string]struct {
		reason string
		// read is the status read observed at t0; looks follow in order.
		read  v1alpha1.TunnelStatus
		looks []look
		// want are the initiate requests, wantLists how many list-sas the
		// looks made.
		want      []string
		wantLists int
	}{
		"Up": {
			reason:    "A tunnel up at the last read is left to the status reads: the looks list nothing.",
			read:      tunnelStatus("a", "ESTABLISHED", "a-1", "a-2"),
			looks:     []look{{time.Second, nil}, {time.Minute, nil}},
			wantLists: 0,
		},
		"GaveUp": {
			reason: "A tunnel charon tried (CONNECTING) and then dropped is re-initiated After after the look that saw it gone.",
			read:   tunnelStatus("a", "CONNECTING"),
			looks: []look{
				{5 * time.Second, []*vici.Message{sa("a", "CONNECTING", nil)}},
				{6 * time.Second, nil}, {35 * time.Second, nil}, {36 * time.Second, nil},
			},
			want:      []string{"a/a-1 (-1)", "a/a-2 (-1)"},
			wantLists: 5, // four looks and the worker's check before initiating
		},
		"ChildGone": {
			reason: "A CHILD_SA missing since a read is initiated at the first look After later, not at the next read.",
			read:   tunnelStatus("a", "ESTABLISHED", "a-1"),
			looks: []look{
				{29 * time.Second, []*vici.Message{sa("a", "ESTABLISHED", nil, "a-1")}},
				{30 * time.Second, []*vici.Message{sa("a", "ESTABLISHED", nil, "a-1")}},
			},
			want:      []string{"a/a-2 (-1)"},
			wantLists: 3,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c := &fakeCharon{}
			now := t0
			w := &Watchdog{Started: func(string) []string { return []string{"a-1", "a-2"} }, Now: func() time.Time { return now },
				AfterFunc: func(time.Duration, func()) {}}
			w.work = make(chan job, queueSize)
			w.Observe([]v1alpha1.TunnelStatus{tc.read})
			for len(w.work) > 0 {
				if j := <-w.work; !j.dups {
					w.run(context.Background(), c, j)
				}
			}
			for _, l := range tc.looks {
				now = t0.Add(l.at)
				c.mu.Lock()
				c.sas = l.sas
				c.mu.Unlock()
				w.look(context.Background(), c)
				for len(w.work) > 0 {
					if j := <-w.work; !j.dups {
						w.run(context.Background(), c, j)
					}
				}
			}
			if diff := cmp.Diff(tc.want, c.initiated, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("%s\ninitiate requests: -want, +got:\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(tc.wantLists, c.lists); diff != "" {
				t.Errorf("%s\nlist-sas calls: -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

// busy is a list-sa event of IKE SA id of conn in state, with the named
// exchanges active and the named CHILD_SAs INSTALLED.
func busy(conn, id, state string, active []string, children ...string) *vici.Message {
	kv := []any{"uniqueid", id, "state", state}
	if len(active) > 0 {
		kv = append(kv, "tasks-active", active)
	}
	if len(children) > 0 {
		cs := vici.NewMessage()
		for _, c := range children {
			_ = cs.Set(c+"-"+id, msg("name", c, "state", "INSTALLED"))
		}
		kv = append(kv, "child-sas", cs)
	}
	return msg(conn, msg(kv...))
}

func TestUnanswered(t *testing.T) {
	dpd := []string{"IKE_DPD"}
	established := func(id string, active []string) status.IKESA {
		return status.IKESA{UniqueID: id, State: "ESTABLISHED", TasksActive: active}
	}
	type want struct {
		id   string
		for_ time.Duration
	}
	cases := map[string]struct {
		reason   string
		busy     map[string]time.Time
		sas      []status.IKESA
		want     want
		wantBusy map[string]time.Time
	}{
		"Idle": {
			reason:   "An ESTABLISHED IKE SA without an active exchange is not followed.",
			sas:      []status.IKESA{established("1", nil)},
			wantBusy: map[string]time.Time{},
		},
		"FirstSeen": {
			reason:   "An exchange first seen active is followed from now: unanswered for no time yet.",
			sas:      []status.IKESA{established("1", dpd)},
			want:     want{"1", 0},
			wantBusy: map[string]time.Time{"1": t0.Add(time.Minute)},
		},
		"StillActive": {
			reason:   "An exchange active in every listing since the first that showed it is unanswered since then.",
			busy:     map[string]time.Time{"1": t0.Add(time.Minute - 9*time.Second)},
			sas:      []status.IKESA{established("1", dpd)},
			want:     want{"1", 9 * time.Second},
			wantBusy: map[string]time.Time{"1": t0.Add(time.Minute - 9*time.Second)},
		},
		"Answered": {
			reason:   "A listing without the exchange active (it was answered) starts over.",
			busy:     map[string]time.Time{"1": t0},
			sas:      []status.IKESA{established("1", nil)},
			wantBusy: map[string]time.Time{},
		},
		"Gone": {
			reason:   "An IKE SA no longer listed is forgotten.",
			busy:     map[string]time.Time{"1": t0},
			wantBusy: map[string]time.Time{},
		},
		"NotEstablished": {
			reason:   "An IKE SA being set up (CONNECTING, its IKE_SA_INIT retransmitted) is charon's own retry, not a silent peer of an established tunnel.",
			busy:     map[string]time.Time{"1": t0},
			sas:      []status.IKESA{{UniqueID: "1", State: "CONNECTING", TasksActive: []string{"IKE_INIT"}}},
			wantBusy: map[string]time.Time{},
		},
		"Queued": {
			reason:   "Exchanges only queued are not waiting for the peer.",
			sas:      []status.IKESA{{UniqueID: "1", State: "ESTABLISHED", TasksQueued: dpd}},
			wantBusy: map[string]time.Time{},
		},
		"Longest": {
			reason:   "Of two IKE SAs with exchanges active the one unanswered longest is named.",
			busy:     map[string]time.Time{"1": t0.Add(30 * time.Second), "2": t0},
			sas:      []status.IKESA{established("1", dpd), established("2", []string{"IKE_REKEY"})},
			want:     want{"2", time.Minute},
			wantBusy: map[string]time.Time{"1": t0.Add(30 * time.Second), "2": t0},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			b := map[string]time.Time{}
			for k, v := range tc.busy {
				b[k] = v
			}
			var got want
			got.id, got.for_ = unanswered(b, tc.sas, t0.Add(time.Minute))
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(want{})); diff != "" {
				t.Errorf("%s\nunanswered IKE SA and for how long: -want, +got:\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(tc.wantBusy, b); diff != "" {
				t.Errorf("%s\nfollowed exchanges: -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

// TestWatchdogSilentPeer checks what the worker does about an IKE SA whose
// peer stopped answering: the listings every few seconds find its exchange
// unanswered, the status read says the tunnel is down, and an always-on
// tunnel's IKE SA is closed by force and the tunnel initiated anew.
func TestWatchdogSilentPeer(t *testing.T) {
	dpd := []string{"IKE_DPD"}
	type listing struct {
		at  time.Duration
		sas []*vici.Message
	}
	cases := map[string]struct {
		reason   string
		started  []string
		listings []listing
		// again is what charon lists when the worker checks before acting.
		again          []*vici.Message
		wantTerminated []string
		wantInitiated  []string
		// wantUp and wantError are the status read between the last
		// listing and the worker's job.
		wantUp    bool
		wantError string
		// wantReinitiations is the count of the read after the job.
		wantReinitiations int32
	}{
		"Answering": {
			reason:   "A peer that answers each DPD leaves the tunnel up and alone.",
			started:  []string{"a-1"},
			listings: []listing{{0, []*vici.Message{busy("a", "1", "ESTABLISHED", dpd, "a-1")}}, {3 * time.Second, []*vici.Message{busy("a", "1", "ESTABLISHED", nil, "a-1")}}, {12 * time.Second, []*vici.Message{busy("a", "1", "ESTABLISHED", dpd, "a-1")}}},
			wantUp:   true,
		},
		"NotHeardFrom": {
			reason:  "A DPD unanswered for a fifth of the bound (2 s): the tunnel is down, nothing heard from the peer since, but charon's retransmissions still have time.",
			started: []string{"a-1"},
			listings: []listing{
				{0, []*vici.Message{busy("a", "7", "ESTABLISHED", dpd, "a-1")}}, {2 * time.Second, []*vici.Message{busy("a", "7", "ESTABLISHED", dpd, "a-1")}},
			},
			wantError: fmt.Sprintf(msgSilent, "7", "2s"),
		},
		"LostPacket": {
			reason:  "A DPD unanswered for less than a fifth of the bound (one listing caught it in flight) leaves the tunnel up.",
			started: []string{"a-1"},
			listings: []listing{
				{0, []*vici.Message{busy("a", "7", "ESTABLISHED", dpd, "a-1")}}, {time.Second, []*vici.Message{busy("a", "7", "ESTABLISHED", dpd, "a-1")}},
			},
			wantUp: true,
		},
		"Silent": {
			reason:  "A DPD unanswered in every listing for 10 s: the tunnel is down, its IKE SA closed without a DELETE and the tunnel initiated anew, counted.",
			started: []string{"a-1"},
			listings: []listing{
				{0, []*vici.Message{busy("a", "7", "ESTABLISHED", dpd, "a-1")}}, {5 * time.Second, []*vici.Message{busy("a", "7", "ESTABLISHED", dpd, "a-1")}},
				{10 * time.Second, []*vici.Message{busy("a", "7", "ESTABLISHED", dpd, "a-1")}},
			},
			again:             []*vici.Message{busy("a", "7", "ESTABLISHED", dpd, "a-1")},
			wantTerminated:    []string{"7 (force)"},
			wantInitiated:     []string{"a/a-1 (-1)"},
			wantError:         fmt.Sprintf(msgSilent, "7", "10s"),
			wantReinitiations: 1,
		},
		"AnsweredAtLast": {
			reason:  "A DPD answered between the listing and the worker's check: nothing is closed.",
			started: []string{"a-1"},
			listings: []listing{
				{0, []*vici.Message{busy("a", "7", "ESTABLISHED", dpd, "a-1")}}, {10 * time.Second, []*vici.Message{busy("a", "7", "ESTABLISHED", dpd, "a-1")}},
			},
			again:     []*vici.Message{busy("a", "7", "ESTABLISHED", nil, "a-1")},
			wantError: fmt.Sprintf(msgSilent, "7", "10s"),
		},
		"AnotherIKESA": {
			reason:  "The silent IKE SA is closed, but another IKE SA of the connection (the peer's new one) is left to carry the tunnel: nothing initiated.",
			started: []string{"a-1"},
			listings: []listing{
				{0, []*vici.Message{busy("a", "7", "ESTABLISHED", dpd, "a-1")}}, {10 * time.Second, []*vici.Message{busy("a", "7", "ESTABLISHED", dpd, "a-1")}},
			},
			again:          []*vici.Message{busy("a", "7", "ESTABLISHED", dpd, "a-1"), busy("a", "8", "CONNECTING", nil)},
			wantTerminated: []string{"7 (force)"},
			wantError:      fmt.Sprintf(msgSilent, "7", "10s"),
		},
		"NotAlwaysOn": {
			reason:  "A tunnel charon does not start itself (respond, trap) is reported down but left to charon and the peer.",
			started: nil,
			listings: []listing{
				{0, []*vici.Message{busy("a", "7", "ESTABLISHED", dpd, "a-1")}}, {10 * time.Second, []*vici.Message{busy("a", "7", "ESTABLISHED", dpd, "a-1")}},
			},
			wantError: fmt.Sprintf(msgSilent, "7", "10s"),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c := &fakeCharon{}
			now := t0
			refresh := make(chan struct{}, 1)
			w := &Watchdog{Started: func(string) []string { return tc.started }, Now: func() time.Time { return now },
				AfterFunc: func(time.Duration, func()) {}, Reinitiated: refresh}
			w.work = make(chan job, queueSize)
			read := func() v1alpha1.TunnelStatus {
				ts := []v1alpha1.TunnelStatus{tunnelStatus("a", "ESTABLISHED", "a-1")}
				ts[0].Up = true
				w.Observe(ts)
				return ts[0]
			}
			read()
			for len(w.work) > 0 {
				<-w.work // the duplicate check of an ESTABLISHED tunnel
			}
			for _, l := range tc.listings {
				now = t0.Add(l.at)
				c.sas = l.sas
				w.listen(context.Background(), c)
			}
			st := read()
			if diff := cmp.Diff(tc.wantUp, st.Up); diff != "" {
				t.Errorf("%s\nup in the status read: -want, +got:\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(tc.wantError, st.LastError); diff != "" {
				t.Errorf("%s\nlast error in the status read: -want, +got:\n%s", tc.reason, diff)
			}
			if tc.wantError != "" && len(refresh) == 0 {
				t.Errorf("%s\nno status read asked for when the peer turned silent", tc.reason)
			}
			c.sas = tc.again
			for len(w.work) > 0 {
				if j := <-w.work; !j.dups {
					w.run(context.Background(), c, j)
				}
			}
			if diff := cmp.Diff(tc.wantTerminated, c.terminated, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("%s\nterminate requests: -want, +got:\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(tc.wantInitiated, c.initiated, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("%s\ninitiate requests: -want, +got:\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(tc.wantReinitiations, read().Reinitiations); diff != "" {
				t.Errorf("%s\nre-initiations in the next read: -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}
