package role

import (
	"context"
	"errors"
	"os"
	"strings"
	"time"

	"github.com/ipsecgw/provider-ipsec/internal/agent/leader"
	"github.com/ipsecgw/provider-ipsec/internal/contract"
)

// HandoverFallback is how long the single pod waits to read the gateway's
// Lease before it answers ARP without it: the gateway's only pod must not
// stay silent because the API server is out of its reach (or the Lease is
// missing), which is likelier than an old pod that still answers.
const HandoverFallback = 30 * time.Second

// HandoverLease returns the name of the gateway's Lease through which the
// single pod (an empty lease, the --lease of a pair's pod) hands over to
// its replacement: the gateway's name, which its status ConfigMap's name
// statusConfigMap begins with, as the provider renders it (the gateway's
// name and contract.StatusSuffix); empty (no handover) for a pair's pod or
// another status ConfigMap's name.
func HandoverLease(lease, statusConfigMap string) string {
	if lease != "" {
		return ""
	}
	gw, ok := strings.CutSuffix(statusConfigMap, contract.StatusSuffix)
	if !ok {
		return ""
	}
	return gw
}

// An Interface is the single pod's tenant interface (leader.Handover): a
// Holder whose Take lets it answer ARP and announces its addresses, whose
// Release silences it, and which Answer lets answer without the handover.
type Interface interface {
	leader.Holder
	// Answer lets the interface answer ARP.
	Answer() error
}

// Single runs the agent of a gateway's single pod (no --lease), whose
// tenant interface has its address from the CNI.
type Single struct {
	Options
	// Interface is the tenant interface, net1.
	Interface Interface
	// Lease is the gateway's Lease (HandoverLease); empty: no handover.
	Lease string
	// Fallback is how long the pod waits to read the Lease before it
	// answers without it (HandoverFallback when zero).
	Fallback time.Duration
}

// Run runs the agent's loop until ctx ends or the loop fails. With a
// Lease (this pod's name or else its host name the identity) the pod is
// the gateway only while it holds the Lease (or could not read it within
// Fallback): only then does charon initiate the tunnels and the interface
// answer ARP, if the CNI made it silent, and when ctx ends (SIGTERM: the
// pod is deleted or its container restarted) the interface is silenced
// before the Lease is released, so that the replacement, which holds the
// same address, starts the tunnels once the pod is quiet; the agent
// reports in the status ConfigMap that it does so
// (leader.ReportSilentStart), so that the provider may have the CNI make
// the interface of its image's pods silent. Without one (the agent run
// outside a gateway pod) the interface answers from the start and is
// silenced when ctx ends. An interface that cannot be changed (none such)
// is logged, not an error.
func (r Single) Run(ctx context.Context) error {
	r.defaults()
	h := holder{Holder: r.Interface, agent: r.Agent}
	var elected chan error
	if r.Lease != "" {
		id := r.Pod
		if id == "" {
			id, _ = os.Hostname() // a pod's host name is its name
		}
		go leader.ReportSilentStart(ctx, r.Client, r.Namespace, r.StatusConfigMap, id, r.Log)
		e, err := r.elector(ctx, r.Lease, id)
		if err != nil {
			return err
		}
		e.Holder, e.Keep = h, true
		e.LeaseDuration, e.RenewDeadline, e.RetryPeriod = leader.HandoverLeaseDuration, leader.HandoverRenewDeadline, leader.HandoverRetryPeriod
		e.Active = func(_ context.Context, active bool, _ leader.Takeover) { r.Metrics.Leader(active) }
		elected = make(chan error, 1)
		go func() { elected <- e.Run(ctx) }()
		go r.fallback(ctx, e, h)
	} else if err := r.Interface.Answer(); err != nil {
		r.Log.Debug("Cannot let the tenant interface answer ARP", "error", err)
	}
	done := make(chan error, 1)
	go func() { done <- r.Agent.Run(ctx) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	var err error
	if elected != nil {
		err = <-elected
	}
	// Again after the election, which silences only while it holds the
	// Lease: a pod that answered without it (fallback) goes quiet too.
	if err := h.Release(ctx); err != nil {
		r.Log.Info("Cannot silence the tenant interface", "error", err)
	} else {
		r.Log.Info("Silenced the tenant interface (ARP off) for the pod's replacement", "interface", r.Interface)
	}
	return errors.Join(err, <-done)
}

// fallback lets h take when e has read no Lease within r.Fallback.
func (r Single) fallback(ctx context.Context, e *leader.Elector, h holder) {
	wait := r.Fallback
	if wait == 0 {
		wait = HandoverFallback
	}
	select {
	case <-ctx.Done():
		return
	case <-time.After(wait):
	}
	if e.Read() || ctx.Err() != nil {
		return
	}
	r.Log.Info("Cannot read the gateway's Lease: the gateway without the handover", "after", wait)
	if err := h.Take(ctx); err != nil {
		r.Log.Info("Cannot let the tenant interface answer ARP", "error", err)
	}
}
