package role

import (
	"context"
	"errors"

	"github.com/ipsecgw/provider-ipsec/internal/agent/leader"
)

// Elected runs the agent as one of an active/standby pair (--lease): the
// agent's loop, a standby at first, and the election on the pair's Lease,
// which makes it active while it holds the Lease.
type Elected struct {
	Options
	// Lease is the name of the pair's Lease.
	Lease string
	// Address is the gateway's address, which only the active pod holds
	// (leader.Address).
	Address leader.Holder
}

// Run runs the loop and the election until ctx ends; the election gives
// the address up first, then releases the Lease. Each takeover is counted
// (a failover unless the Lease had never been held) and, with a status
// ConfigMap, reported in it (leader.Report) while this pod stays active.
// It returns the election's error (none but its set-up) and the loop's.
func (r Elected) Run(ctx context.Context) error {
	r.defaults()
	e, err := r.elector(ctx, r.Lease, r.Pod)
	if err != nil {
		return err
	}
	e.Holder = holder{Holder: r.Address, agent: r.Agent, standby: true}
	e.Active = func(ctx context.Context, active bool, t leader.Takeover) {
		r.Metrics.Leader(active)
		if !active {
			return
		}
		if t.Cause != leader.CauseFirst {
			r.Metrics.FailedOver(t.Cause)
		}
		if r.StatusConfigMap != "" {
			go leader.Report(ctx, r.Client, r.Namespace, r.StatusConfigMap, r.Pod, r.Node, t, r.Log)
		}
	}
	done := make(chan error, 1)
	go func() { done <- r.Agent.Run(ctx) }()
	err = e.Run(ctx)
	return errors.Join(err, <-done)
}
