// Package run is the gateway agent's main loop: it connects to charon over
// VICI, applies the mounted configuration whenever it changes, keeps the
// tunnel status published, and after charon restarts connects again and
// re-applies everything.
package run

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"iter"
	"sync/atomic"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/logging"
	"github.com/strongswan/govici/vici"

	"github.com/ipsecgw/provider-ipsec/apis/cluster/gateway/v1alpha1"
	"github.com/ipsecgw/provider-ipsec/internal/agent/apply"
	"github.com/ipsecgw/provider-ipsec/internal/agent/metrics"
	"github.com/ipsecgw/provider-ipsec/internal/agent/nat"
	"github.com/ipsecgw/provider-ipsec/internal/agent/source"
	"github.com/ipsecgw/provider-ipsec/internal/agent/status"
	"github.com/ipsecgw/provider-ipsec/internal/agent/watchdog"
	"github.com/ipsecgw/provider-ipsec/internal/agent/xfrmlink"
)

// ChangeSettle is how long the agent waits after a source's change signal
// before it reads the configuration: the provider applies the ConfigMap
// and then the Secret, and one reload takes both.
const ChangeSettle = 200 * time.Millisecond

// Options configure the agent.
type Options struct {
	// Source gives the configuration; nil reads the mounted ConfigMap in
	// ConfigDir (swanctl.conf, nat.nft, xfrm.json) and the mounted Secret in
	// SecretsDir (secrets.conf) every Interval (source.Dir). A source with
	// a Changed signal (source.API) is read again ChangeSettle after each
	// change, besides every Interval.
	Source                source.Source
	ConfigDir, SecretsDir string
	// ViciSocket is charon's VICI socket path.
	ViciSocket string
	// Interval between checks of the configuration (default 2 s).
	Interval time.Duration
	// Validator checks a new set before the live charon is touched; nil
	// skips that check (charon still refuses what it cannot load).
	Validator apply.Validator
	// NAT loads the NAT rules; nil leaves nftables alone.
	NAT *nat.Applier
	// XFRM creates the XFRM interfaces and routes of the route-mode
	// tunnels (xfrm.json, absent when there is none), and withdraws the
	// routes of a tunnel that is down while another routes the same
	// destination (at each status read); nil leaves links and routes
	// alone.
	XFRM *xfrmlink.Applier
	// Publisher writes the tunnel status; Poll is the status poll
	// interval (default status.DefaultPoll).
	Publisher *status.Publisher
	Poll      time.Duration
	// Metrics, if set, is updated with each status and reload.
	Metrics *metrics.Collector
	// ReinitiateAfter is the bound after which the agent initiates again
	// an always-on tunnel (start action start) or CHILD_SA that is down
	// while charon is not trying (see package watchdog); 0 turns that off.
	ReinitiateAfter time.Duration
	// UnansweredAfter is how long an exchange on an ESTABLISHED IKE SA may
	// stay unanswered before the tunnel is reported down and, if always
	// on, closed and initiated anew (see watchdog.Watchdog.Unanswered); 0
	// turns that off. Only with ReinitiateAfter: the watchdog does both.
	UnansweredAfter time.Duration
	// Standby starts the agent as the standby of an active/standby pair:
	// it loads the configuration passive (apply.Applier.SetPassive) and
	// publishes no status until SetActive(true).
	Standby bool
	Log     logging.Logger
}

// An Agent runs the loop; Ready says whether a configuration is loaded and
// charon answers.
type Agent struct {
	o     Options
	ready atomic.Bool
	// watchdog is nil when Options.ReinitiateAfter is 0; it outlives the
	// charon sessions, so its counts do too.
	watchdog *watchdog.Watchdog
	// refresh makes the status be read again: after a re-initiation (the
	// watchdog's) or a reload.
	refresh chan struct{}
	// applier is the current session's.
	applier atomic.Pointer[apply.Applier]
	// active is false while the agent is a standby; switched tells the
	// session of a change (SetActive).
	active   atomic.Bool
	switched chan struct{}
}

// New returns an Agent for o.
func New(o Options) *Agent {
	if o.Interval <= 0 {
		o.Interval = 2 * time.Second
	}
	if o.Log == nil {
		o.Log = logging.NewNopLogger()
	}
	if o.Source == nil {
		o.Source = source.Dir{ConfigDir: o.ConfigDir, SecretsDir: o.SecretsDir}
	}
	a := &Agent{o: o, switched: make(chan struct{}, 1), refresh: make(chan struct{}, 1)}
	a.active.Store(!o.Standby)
	if o.ReinitiateAfter > 0 {
		unanswered := o.UnansweredAfter
		if unanswered == 0 {
			unanswered = -1 // off
		}
		a.watchdog = &watchdog.Watchdog{After: o.ReinitiateAfter, Unanswered: unanswered, Started: a.started, Log: o.Log, Reinitiated: a.refresh}
	}
	return a
}

// started returns the children of conn that charon starts itself, as the
// current session's Applier last loaded them.
func (a *Agent) started(conn string) []string {
	if ap := a.applier.Load(); ap != nil {
		return ap.Started(conn)
	}
	return nil
}

// SetActive makes the agent the active pod of an active/standby pair
// (true: the configuration loaded as rendered, so that charon initiates
// the tunnels, and the status published) or a standby (false: the
// configuration loaded passive and every IKE SA closed). It does not wait:
// the session applies it next.
func (a *Agent) SetActive(active bool) {
	a.active.Store(active)
	select {
	case a.switched <- struct{}{}:
	default:
	}
}

// Ready reports whether the current configuration is loaded into a charon
// that answers: the agent's readiness.
func (a *Agent) Ready() bool { return a.ready.Load() }

// Run runs until ctx ends and then returns nil. Losing charon is not an
// error: the agent connects again (every second) and re-applies the
// mounted configuration to the new charon.
func (a *Agent) Run(ctx context.Context) error {
	for ctx.Err() == nil {
		err := a.session(ctx)
		a.ready.Store(false)
		if ctx.Err() != nil {
			return nil //nolint:nilerr // ctx ended: the session's error is the way it ended
		}
		a.o.Log.Info("Lost charon; connecting again", "error", err)
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
	return nil
}

// sessions are the VICI sessions of one connection to charon: one for
// commands, one for events, one for streamed lists (govici v0.8.0 must not
// mix them; see status.Streamer) and one for the watchdog's worker, whose
// calls must not wait behind the others.
type sessions struct{ cmd, events, stream, watch *vici.Session }

func (s *sessions) close() {
	for _, x := range []*vici.Session{s.cmd, s.events, s.stream, s.watch} {
		if x != nil {
			_ = x.Close()
		}
	}
}

func (a *Agent) dial() (*sessions, error) {
	s := &sessions{}
	for _, p := range []**vici.Session{&s.cmd, &s.events, &s.stream, &s.watch} {
		var err error
		if *p, err = vici.NewSession(vici.WithSocketPath(a.o.ViciSocket)); err != nil {
			s.close()
			return nil, fmt.Errorf("cannot connect to charon at %s: %w", a.o.ViciSocket, err)
		}
	}
	return s, nil
}

// session serves one connection to charon until it is lost or ctx ends.
func (a *Agent) session(ctx context.Context) error {
	s, err := a.dial()
	if err != nil {
		return err
	}
	defer s.close()
	applier := apply.New(s.cmd, apply.WithValidator(a.o.Validator))
	applier.SetPassive(!a.active.Load())
	a.applier.Store(applier)
	w := &status.Watcher{
		Events:   s.events,
		Caller:   &status.Streamer{Session: s.stream},
		Conns:    applier.Applied,
		Children: applier.Children,
		Poll:     a.o.Poll,
		Sink:     a.sink,
		Refresh:  a.refresh,
		OnError: func(err error) {
			a.o.Log.Debug("Cannot read or publish the tunnel status", "error", err)
		},
	}
	if a.watchdog != nil {
		w.Observe = a.watchdog.Observe
	}
	// Subscribed before the first load: a tunnel that starts at once can
	// fail within milliseconds, and the reason is only in charon's log.
	if err := w.Subscribe(ctx); err != nil {
		return err
	}
	var last []byte
	a.reload(ctx, applier, &last)

	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	watched := make(chan error, 1)
	go func() { watched <- w.Run(wctx) }()
	if a.watchdog != nil {
		served := make(chan struct{})
		defer func() { cancel(); <-served }()
		go func() {
			defer close(served)
			a.watchdog.Serve(wctx, watchSession{call: s.watch, stream: &status.Streamer{Session: s.watch}})
		}()
	}

	tick := time.NewTicker(a.o.Interval)
	defer tick.Stop()
	settle := time.NewTimer(0)
	<-settle.C
	for {
		select {
		case <-ctx.Done():
			return nil
		case err := <-watched:
			return err
		case <-a.switched:
			a.changeRole(ctx, applier, &last)
		case <-a.o.Source.Changed():
			settle.Reset(ChangeSettle)
		case <-settle.C:
			a.reload(ctx, applier, &last)
		case <-tick.C:
			if _, err := s.cmd.Call(ctx, "version", nil); err != nil {
				return fmt.Errorf("charon does not answer: %w", err)
			}
			a.reload(ctx, applier, &last)
		}
	}
}

// changeRole loads the mounted configuration again as the agent's role says
// (SetActive) and, for a standby, closes every IKE SA.
func (a *Agent) changeRole(ctx context.Context, applier *apply.Applier, last *[]byte) {
	active := a.active.Load()
	applier.SetPassive(!active)
	*last = nil
	a.reload(ctx, applier, last)
	if !active {
		if err := applier.TerminateAll(ctx); err != nil {
			a.o.Log.Info("Cannot close the SAs of a standby", "error", err)
		}
	}
}

// watchSession is the watchdog's VICI session: plain calls (initiate) and
// streamed lists through a status.Streamer on the same session, which the
// watchdog's single worker never uses at the same time.
type watchSession struct {
	call   *vici.Session
	stream *status.Streamer
}

func (s watchSession) Call(ctx context.Context, cmd string, in *vici.Message) (*vici.Message, error) {
	return s.call.Call(ctx, cmd, in)
}

func (s watchSession) CallStreaming(ctx context.Context, cmd, event string, in *vici.Message) iter.Seq2[*vici.Message, error] {
	return s.stream.CallStreaming(ctx, cmd, event, in)
}

// sink hands a status read to the metrics, the XFRM interfaces' routes
// (a route-mode tunnel that is down gives its routes up to another that
// routes the same destination: xfrmlink.Usable) and the publisher.
func (a *Agent) sink(ctx context.Context, ts []v1alpha1.TunnelStatus) (time.Duration, error) {
	if a.o.Metrics != nil {
		a.o.Metrics.Update(ts)
	}
	if a.o.XFRM != nil {
		var down []string
		for _, t := range ts {
			if !t.Up {
				down = append(down, t.Name)
			}
		}
		changed, err := a.o.XFRM.SetDown(down)
		if changed.Changed() {
			a.o.Log.Info("Changed the routes of the XFRM interfaces to follow the tunnels", "down", down, "routed", changed.Routed, "unrouted", changed.Unrouted)
		}
		if err != nil {
			a.o.Log.Info("Cannot change the routes of the XFRM interfaces to follow the tunnels", "down", down, "error", err)
		}
	}
	// A standby's tunnels are down by design: the active pod publishes.
	if a.o.Publisher == nil || !a.active.Load() {
		return 0, nil
	}
	return a.o.Publisher.Publish(ctx, ts)
}

// reload applies the source's files when they differ from what was last
// applied to this charon (*last). A set that fails leaves the running
// configuration as it is; it is tried again when the files change.
func (a *Agent) reload(ctx context.Context, applier *apply.Applier, last *[]byte) {
	f, err := a.o.Source.Read()
	if err != nil {
		a.o.Log.Info("Cannot read the configuration", "error", err)
		return
	}
	conf, secrets, rules, links := f.SwanctlConf, f.Secrets, f.NATRules, f.XFRMInterfaces
	// strongswan.conf counts only for the hash: charon read it at start.
	all := bytes.Join([][]byte{conf, secrets, rules, links, f.StrongSwanConf}, []byte{0})
	if *last != nil && bytes.Equal(all, *last) {
		return
	}
	*last = all
	res, err := applier.Apply(ctx, conf, secrets)
	if err == nil && a.o.NAT != nil {
		_, err = a.o.NAT.Apply(ctx, rules)
	}
	if err == nil && a.o.XFRM != nil {
		var changed xfrmlink.Result
		if changed, err = a.o.XFRM.Apply(links); changed.Changed() {
			a.o.Log.Info("Changed the XFRM interfaces and routes", "created", changed.Created, "deleted", changed.Deleted, "routed", changed.Routed, "unrouted", changed.Unrouted)
		}
	}
	if a.o.Metrics != nil {
		a.o.Metrics.Reloaded(err == nil)
	}
	if err != nil {
		var invalid *apply.InvalidError
		if errors.As(err, &invalid) {
			a.o.Log.Info("Refused an invalid configuration; the running one stays", "error", err)
		} else {
			a.o.Log.Info("Cannot apply the configuration", "error", err)
		}
		if !a.ready.Load() {
			*last = nil
		}
		return
	}
	a.ready.Store(true)
	// The status says which configuration runs (contract.ConfigHash).
	if a.o.Publisher != nil {
		a.o.Publisher.SetLoaded(f.Hash())
	}
	select {
	case a.refresh <- struct{}{}:
	default:
	}
	a.o.Log.Info("Applied the configuration", "hash", f.Hash(), "loaded", res.Loaded, "unloaded", res.Unloaded, "unchanged", len(res.Unchanged))
}
