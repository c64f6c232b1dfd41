package gateway

import (
	"sync"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ipsecgw/provider-ipsec/apis/cluster/gateway/v1alpha1"
)

// countersInterval is the least time between two status writes of a
// Gateway that change only its traffic counters. Every write of a
// Gateway's status is a watch event for its composite: Crossplane's XR
// circuit breaker allows an XR and its composed resources together a
// burst of 100 events (two per update), refilled at one a second, and
// once open passes a change to the claim only every 30 s, for 5 minutes
// (docs/circuit-breaker.md). The agent reports counters every 10 s while
// traffic flows: written each time they cost 0.4 events a second of that
// refill at rest and drain the bucket under failovers. A change of state
// (a tunnel up or down, the active pod, an error) is written at once and
// carries the counters with it.
const countersInterval = 30 * time.Second

// counterHold remembers, per Gateway (by UID), when its status last got
// new counters, so that a report that changes only the counters within
// countersInterval leaves the status as it is. In memory: after a restart
// of the provider the first report is written.
type counterHold struct {
	mu sync.Mutex
	at map[types.UID]time.Time
}

// onlyCounters compares tunnel status without the child SAs' counters.
var onlyCounters = cmpopts.IgnoreFields(v1alpha1.ChildSAStatus{}, "BytesIn", "BytesOut", "PacketsIn", "PacketsOut")

// tunnels returns the tunnel status of Gateway uid to write at now: was,
// the status it has, when now differs from it only in the counters and
// its counters were written less than countersInterval ago; else now,
// remembering when new counters were written.
func (h *counterHold) tunnels(uid types.UID, was, now []v1alpha1.TunnelStatus, at time.Time) []v1alpha1.TunnelStatus {
	if cmp.Equal(was, now, cmpopts.EquateEmpty()) {
		return now
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.at == nil {
		h.at = map[types.UID]time.Time{}
	}
	if cmp.Equal(was, now, onlyCounters, cmpopts.EquateEmpty()) && at.Sub(h.at[uid]) < countersInterval {
		return was
	}
	h.at[uid] = at
	return now
}

// forget drops what h remembers of Gateway uid (it was deleted).
func (h *counterHold) forget(uid types.UID) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.at, uid)
}
