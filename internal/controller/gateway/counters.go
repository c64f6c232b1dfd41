package gateway

import (
	"sync"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ipsecgw/provider-ipsec/apis/cluster/gateway/v1alpha1"
)

// countersInterval is the least time between two status writes of a
// Gateway that change only its details: its traffic counters, and its
// count of ready pods while at least one is ready. Every write of a
// Gateway's status is a watch event for its composite: Crossplane's XR
// circuit breaker allows an XR and its composed resources together a
// burst of 100 events (two per update), refilled at one a second, and
// once open passes a change to the claim only every 30 s, for 5 minutes
// (docs/circuit-breaker.md). The agent reports counters every 10 s while
// traffic flows: written each time they cost 0.4 events a second of that
// refill at rest. With two pods each takeover changes the ready pods
// twice (the deleted pod at once, its replacement seconds later), which
// the composite does not read: written each time they cost a third of a
// takeover's events. A change of state (a tunnel up or down, the active
// pod, an error, no pod ready or the first one ready) is written at once
// and carries the details with it; a held change is written at the latest
// countersInterval after the status was last written (due).
const countersInterval = 30 * time.Second

// detailHold remembers, per Gateway (by UID), when its status was last
// written and whether a change of details alone is held since, so that
// such a change within countersInterval of the last write leaves the
// status as it is, and the Gateway is observed again when it may be
// written. In memory: after a restart of the provider the first
// observation is written.
type detailHold struct {
	mu   sync.Mutex
	at   map[types.UID]time.Time
	held map[types.UID]bool
}

// onlyCounters compares tunnel status without the child SAs' counters.
var onlyCounters = cmpopts.IgnoreFields(v1alpha1.ChildSAStatus{}, "BytesIn", "BytesOut", "PacketsIn", "PacketsOut")

// withoutDetails compares observations without their details: the
// counters (the child SAs' and their sums) and the ready pods.
var withoutDetails = cmp.Options{onlyCounters, cmpopts.EquateEmpty(),
	cmpopts.IgnoreFields(v1alpha1.GatewayObservation{}, "BytesIn", "BytesOut", "ReadyReplicas")}

// observation returns the observed state of Gateway uid to write at now:
// was, the status it has, when now differs from it only in its details
// (no pod ready, or the first one, is not a detail) and the status was
// written less than countersInterval ago; else now, remembering when it
// was written.
func (h *detailHold) observation(uid types.UID, was, now v1alpha1.GatewayObservation, at time.Time) v1alpha1.GatewayObservation {
	// Every Observe of every Gateway asks, and at rest nothing changed:
	// apimachinery's semantic equality (nil and empty equal, as
	// EquateEmpty) at a fraction of go-cmp's cost.
	if equality.Semantic.DeepEqual(was, now) {
		return now
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.at == nil {
		h.at, h.held = map[types.UID]time.Time{}, map[types.UID]bool{}
	}
	detail := (was.ReadyReplicas == 0) == (now.ReadyReplicas == 0) && cmp.Equal(was, now, withoutDetails)
	if detail && at.Sub(h.at[uid]) < countersInterval {
		h.held[uid] = true
		return was
	}
	h.at[uid] = at
	delete(h.held, uid)
	return now
}

// due returns when Gateway uid is to be observed again after a successful
// observation at now, given its poll interval d: d, or when it holds a
// change, when that may be written (at least a second), if sooner.
func (h *detailHold) due(uid types.UID, d time.Duration, now time.Time) time.Duration {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.held[uid] {
		return d
	}
	return min(d, max(time.Second, countersInterval-now.Sub(h.at[uid])))
}

// forget drops what h remembers of Gateway uid (it was deleted).
func (h *detailHold) forget(uid types.UID) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.at, uid)
	delete(h.held, uid)
}
