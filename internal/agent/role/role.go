// Package role runs the gateway agent in its pod's role: the only pod of a
// gateway with replicas 1 (Single: it hands the gateway over to its
// replacement through the gateway's Lease) or one of an active/standby pair
// (Elected: it is active while it holds the pair's Lease). Either makes the
// agent's loop (run.Agent) active only while the pod holds what only the
// gateway may hold (a leader.Holder: the tenant interface's answers to ARP,
// or the gateway's address), and gives that up before the Lease can pass.
package role

import (
	"context"
	"fmt"

	"github.com/crossplane/crossplane-runtime/v2/pkg/logging"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ipsecgw/provider-ipsec/internal/agent/leader"
	"github.com/ipsecgw/provider-ipsec/internal/agent/metrics"
)

// An Agent is the agent's loop as a role drives it (run.Agent).
type Agent interface {
	// Run runs the loop until ctx ends.
	Run(ctx context.Context) error
	// SetActive makes the loop active (true: charon initiates, the status
	// is published) or a standby, without waiting.
	SetActive(active bool)
}

// Options are what both roles need.
type Options struct {
	// Agent is the loop the role runs and switches.
	Agent Agent
	// Metrics is told whether this pod is active and of each failover.
	Metrics *metrics.Collector
	// Kube reads and writes the Lease in Namespace, and watches it.
	Kube kubernetes.Interface
	// Client patches the status ConfigMap StatusConfigMap in Namespace;
	// with an empty StatusConfigMap nothing is reported.
	Client                     client.Client
	Namespace, StatusConfigMap string
	// Pod and Node are this pod's name and node. Pod is its identity in
	// the Lease; a Single without one takes its host name, which is a
	// pod's name.
	Pod, Node string
	Log       logging.Logger
}

func (o *Options) defaults() {
	if o.Log == nil {
		o.Log = logging.NewNopLogger()
	}
}

// Errors of the roles' set-up.
const (
	errLock = "cannot make a lock of the Lease %s/%s"
)

// elector returns the election of identity on the Lease name in
// o.Namespace, with the watch of its releases, which ends with ctx; the
// caller sets its Holder.
func (o *Options) elector(ctx context.Context, name, identity string) (*leader.Elector, error) {
	lock, err := resourcelock.New(resourcelock.LeasesResourceLock, o.Namespace, name, o.Kube.CoreV1(), o.Kube.CoordinationV1(),
		resourcelock.ResourceLockConfig{Identity: identity})
	if err != nil {
		return nil, fmt.Errorf(errLock+": %w", o.Namespace, name, err)
	}
	return &leader.Elector{
		Lock: lock, Log: o.Log,
		Released: leader.WatchReleases(ctx, o.Kube.CoordinationV1().Leases(o.Namespace), name, o.Log),
	}, nil
}

// holder is what the gateway's pod holds while it is the gateway: its
// Holder (an active pod's leader.Address, or a single pod's answers to
// ARP, leader.Handover), then the tunnels. Refresh is the Holder's.
type holder struct {
	leader.Holder
	agent Agent
	// standby: Release makes the agent a standby (an active/standby
	// pair's pod); a single pod releases only when it stops, and what
	// charon holds goes with the pod.
	standby bool
}

// Take takes the Holder, then makes the agent active.
func (h holder) Take(ctx context.Context) error {
	if err := h.Holder.Take(ctx); err != nil {
		return err
	}
	h.agent.SetActive(true)
	return nil
}

// Release gives the Holder up first: without the address the SAs carry nothing
// and charon can send nothing, even before the agent closes them.
func (h holder) Release(ctx context.Context) error {
	err := h.Holder.Release(ctx)
	if h.standby {
		h.agent.SetActive(false)
	}
	return err
}
