// Package status builds the gateway agent's per-tunnel status from charon's
// VICI interface and publishes it in the gateway's status ConfigMap, where
// the provider's Gateway controller reads it.
//
// The VICI messages followed are those of strongSwan 5.9's vici plugin
// (src/libcharon/plugins/vici/README.md: the list-sas command with its
// streamed list-sa events, and the ike-updown, child-updown and log events).
package status

import (
	"cmp"
	"context"
	"fmt"
	"iter"
	"slices"
	"strconv"
	"time"

	"github.com/strongswan/govici/vici"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ipsecgw/provider-ipsec/apis/cluster/gateway/v1alpha1"
)

// States as charon names them, and the state of a configured connection
// that has no IKE SA.
const (
	StateDown        = v1alpha1.IKEStateDown
	StateEstablished = v1alpha1.IKEStateEstablished
	StateInstalled   = "INSTALLED"
)

// A Caller makes streamed VICI command requests. Use a *Streamer: a
// *vici.Session has the same method but loses events (see Streamer).
type Caller interface {
	CallStreaming(ctx context.Context, cmd, event string, in *vici.Message) iter.Seq2[*vici.Message, error]
}

// Errors of decoding charon's answers.
const (
	errListSAs     = "cannot list IKE SAs"
	errNotASection = "cannot decode IKE SA %s of a list-sa event: not a section"
	errDecodeIKESA = "cannot decode IKE SA %s of a list-sa event"
	errSetNoblock  = "cannot ask list-sas not to block"
)

// An IKESA is the body of one IKE SA in a list-sa event (and in ike-updown
// and child-updown events), as the status and the agent's watchdog read
// it. Every value is a string; absent keys are empty.
type IKESA struct {
	// UniqueID is charon's unique id of the IKE SA, a decimal number.
	UniqueID string `vici:"uniqueid"`
	State    string `vici:"state"`
	// Initiator is "yes" when this side initiated the IKE SA.
	Initiator string `vici:"initiator"`
	// Established is the number of seconds since the IKE SA was
	// established; absent while it is not.
	Established string `vici:"established"`
	// TasksQueued and TasksActive name the exchanges charon has queued
	// and is running on the IKE SA: while any is, charon is at work on it.
	TasksQueued []string `vici:"tasks-queued"`
	TasksActive []string `vici:"tasks-active"`
	// ChildSAs are keyed by "<child name>-<unique id>".
	ChildSAs map[string]ChildSA `vici:"child-sas"`
}

// A ChildSA is the body of one CHILD_SA of a list-sa event.
type ChildSA struct {
	Name       string   `vici:"name"`
	UniqueID   string   `vici:"uniqueid"`
	State      string   `vici:"state"`
	BytesIn    string   `vici:"bytes-in"`
	PacketsIn  string   `vici:"packets-in"`
	BytesOut   string   `vici:"bytes-out"`
	PacketsOut string   `vici:"packets-out"`
	LocalTS    []string `vici:"local-ts"`
	RemoteTS   []string `vici:"remote-ts"`
}

// Carries says whether sa has an INSTALLED CHILD_SA of every one of
// children (child names, as configured).
func (sa IKESA) Carries(children []string) bool {
	for _, ch := range children {
		found := false
		for _, cs := range sa.ChildSAs {
			found = found || (cs.Name == ch && cs.State == StateInstalled)
		}
		if !found {
			return false
		}
	}
	return true
}

// DecodeIKESA decodes the IKE SA of connection conn in list-sa event m. It
// returns false when m holds no IKE SA of conn, and an error when the
// value under conn is not an IKE SA.
func DecodeIKESA(m *vici.Message, conn string) (IKESA, bool, error) {
	v := m.Get(conn)
	if v == nil {
		return IKESA{}, false, nil
	}
	sub, ok := v.(*vici.Message)
	if !ok {
		return IKESA{}, false, fmt.Errorf(errNotASection, conn)
	}
	var sa IKESA
	if err := vici.UnmarshalMessage(sub, &sa); err != nil {
		return IKESA{}, false, fmt.Errorf(errDecodeIKESA+": %w", conn, err)
	}
	return sa, true, nil
}

// An Option configures Collect.
type Option func(*options)

type options struct {
	now      func() time.Time
	children func(conn string) []string
}

// WithChildren gives Collect the names of each connection's configured
// children, so that a tunnel is Up only when every one of them has an
// INSTALLED CHILD_SA. Without it a tunnel is Up when its IKE SA is
// ESTABLISHED and has CHILD_SAs, all INSTALLED.
func WithChildren(children func(conn string) []string) Option {
	return func(o *options) { o.children = children }
}

// WithClock makes Collect convert charon's "established N seconds ago" to a
// time with now instead of time.Now.
func WithClock(now func() time.Time) Option {
	return func(o *options) { o.now = now }
}

// Collect asks charon for its IKE SAs (list-sas, with noblock so that an
// SA busy in a job does not stall it) and returns the status of every
// connection in conns, sorted by name: one entry per connection, with
// IKEState DOWN when the connection has no IKE SA, and Up as WithChildren
// says. IKE SAs of connections
// not in conns are ignored. LastError is left empty: it comes from events
// (see Watcher).
//
// When a connection has several IKE SAs (for example while it is
// reauthenticated), the ESTABLISHED one established most recently wins.
// When a child has several CHILD_SAs (while it is rekeyed), the INSTALLED
// one with the highest unique id wins, so counters are those of the
// CHILD_SA carrying the traffic.
func Collect(ctx context.Context, c Caller, conns []string, opts ...Option) ([]v1alpha1.TunnelStatus, error) {
	o := options{now: time.Now}
	for _, opt := range opts {
		opt(&o)
	}
	want := make(map[string]bool, len(conns))
	for _, n := range conns {
		want[n] = true
	}
	best := map[string]IKESA{}
	in := vici.NewMessage()
	if err := in.Set("noblock", "yes"); err != nil {
		return nil, fmt.Errorf(errSetNoblock+": %w", err)
	}
	for m, err := range c.CallStreaming(ctx, "list-sas", "list-sa", in) {
		if err != nil {
			return nil, fmt.Errorf(errListSAs+": %w", err)
		}
		// Each list-sa event holds one IKE SA, keyed by its connection.
		for _, name := range m.Keys() {
			if !want[name] {
				continue
			}
			sa, _, err := DecodeIKESA(m, name)
			if err != nil {
				return nil, err
			}
			if prev, ok := best[name]; !ok || betterIKE(sa, prev) {
				best[name] = sa
			}
		}
	}
	now := o.now()
	out := make([]v1alpha1.TunnelStatus, 0, len(want))
	for name := range want {
		sa, ok := best[name]
		if !ok {
			out = append(out, v1alpha1.TunnelStatus{Name: name, IKEState: StateDown})
			continue
		}
		ts := tunnelStatus(name, sa, now)
		var configured []string
		if o.children != nil {
			configured = o.children(name)
		}
		ts.Up = up(ts, configured)
		out = append(out, ts)
	}
	slices.SortFunc(out, func(a, b v1alpha1.TunnelStatus) int { return cmp.Compare(a.Name, b.Name) })
	return out, nil
}

// betterIKE reports whether a should represent its connection rather than b.
func betterIKE(a, b IKESA) bool {
	if (a.State == StateEstablished) != (b.State == StateEstablished) {
		return a.State == StateEstablished
	}
	if a.Established != b.Established {
		// Fewer seconds since established is more recent; an empty
		// value (not established) parses as 0 but both are then not
		// established, handled above.
		return Atoi(a.Established) < Atoi(b.Established)
	}
	return Atoi(a.UniqueID) > Atoi(b.UniqueID)
}

// betterChild reports whether a should represent its child rather than b.
func betterChild(a, b ChildSA) bool {
	if (a.State == StateInstalled) != (b.State == StateInstalled) {
		return a.State == StateInstalled
	}
	return Atoi(a.UniqueID) > Atoi(b.UniqueID)
}

func tunnelStatus(name string, sa IKESA, now time.Time) v1alpha1.TunnelStatus {
	ts := v1alpha1.TunnelStatus{Name: name, IKEState: sa.State}
	if sa.Established != "" {
		if s, err := strconv.ParseInt(sa.Established, 10, 64); err == nil {
			t := metav1.NewTime(now.Add(-time.Duration(s) * time.Second).Truncate(time.Second))
			ts.EstablishedAt = &t
		}
	}
	children := map[string]ChildSA{}
	for _, c := range sa.ChildSAs {
		if prev, ok := children[c.Name]; !ok || betterChild(c, prev) {
			children[c.Name] = c
		}
	}
	for _, c := range children {
		ts.ChildSAs = append(ts.ChildSAs, v1alpha1.ChildSAStatus{
			Name:       c.Name,
			State:      c.State,
			LocalTS:    c.LocalTS,
			RemoteTS:   c.RemoteTS,
			BytesIn:    Atoi(c.BytesIn),
			BytesOut:   Atoi(c.BytesOut),
			PacketsIn:  Atoi(c.PacketsIn),
			PacketsOut: Atoi(c.PacketsOut),
		})
	}
	slices.SortFunc(ts.ChildSAs, func(a, b v1alpha1.ChildSAStatus) int { return cmp.Compare(a.Name, b.Name) })
	return ts
}

// up says whether ts carries traffic: IKE SA ESTABLISHED and each of the
// configured children INSTALLED; with no configured children known, at
// least one CHILD_SA and all of them INSTALLED.
func up(ts v1alpha1.TunnelStatus, configured []string) bool {
	if ts.IKEState != StateEstablished {
		return false
	}
	installed := map[string]bool{}
	for _, c := range ts.ChildSAs {
		installed[c.Name] = c.State == StateInstalled
	}
	if configured == nil {
		if len(ts.ChildSAs) == 0 {
			return false
		}
		for _, c := range ts.ChildSAs {
			configured = append(configured, c.Name)
		}
	}
	for _, c := range configured {
		if !installed[c] {
			return false
		}
	}
	return true
}

// Atoi parses one of charon's decimal values (counters, unique ids,
// seconds); anything else is 0. Values above MaxInt64 saturate.
func Atoi(s string) int64 {
	u, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0
	}
	if u > 1<<63-1 {
		return 1<<63 - 1
	}
	return int64(u)
}
