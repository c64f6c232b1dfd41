package status

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"sync"
	"time"

	"golang.org/x/time/rate"
	corev1 "k8s.io/api/core/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ipsecgw/provider-ipsec/apis/cluster/gateway/v1alpha1"
	"github.com/ipsecgw/provider-ipsec/internal/contract"
)

// kept are the keys beside contract.KeyTunnels that a Publisher leaves as
// they are: the active pod of an active/standby gateway (leader.Report
// writes it) and the single pod's silent start (leader.ReportSilentStart).
var kept = []string{contract.KeyLeader, contract.KeySilentStart}

// DefaultMinInterval is the least time between a Publisher's writes once
// its burst is spent.
const DefaultMinInterval = 5 * time.Second

// PublishBurst is how many writes a Publisher makes at once before
// MinInterval applies: a tunnel that goes down right after a counter
// update is written at once, not MinInterval later.
const PublishBurst = 2

// A Publisher writes a gateway's tunnel status into its status ConfigMap
// (<gateway>-status in the gateway's namespace), with the pod's own
// identity: it creates the ConfigMap if it is missing, writes only when the
// content changed, and at most PublishBurst times at once, then once per
// MinInterval (a token bucket). The ConfigMap holds contract.KeyTunnels
// and the kept keys and nothing else;
// TunnelStatus carries no secret.
type Publisher struct {
	Client    client.Client
	Namespace string
	Name      string
	// MinInterval defaults to DefaultMinInterval.
	MinInterval time.Duration
	// Now defaults to time.Now.
	Now func() time.Time

	mu sync.Mutex
	// written is the content last written or found in the ConfigMap;
	// nil when unknown (first call, or after a failed write).
	written []byte
	// writes is the token bucket of writes, made at the first call.
	writes *rate.Limiter
	// loaded is SetLoaded's hash, "" before the first.
	loaded string
}

// SetLoaded makes the next Publish write hash, contract.ConfigHash of the
// configuration the agent loaded, as contract.KeyConfigHash beside the
// tunnels: the provider compares it with the configuration it rendered.
func (p *Publisher) SetLoaded(hash string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.loaded = hash
}

// Publish writes tunnels unless the ConfigMap already holds them. It
// returns 0 when it wrote or had nothing to write, or how long to wait
// before calling again when the rate limit held a change back (the change
// is not written by itself: offer the then current status again).
// Unchanged content costs no API call once the Publisher knows what the
// ConfigMap holds.
func (p *Publisher) Publish(ctx context.Context, tunnels []v1alpha1.TunnelStatus) (time.Duration, error) { //nolint:gocyclo // read, compare, write with its conflict retries, in one place
	if tunnels == nil {
		tunnels = []v1alpha1.TunnelStatus{}
	}
	data, err := json.Marshal(tunnels)
	if err != nil {
		return 0, fmt.Errorf("cannot encode the tunnel status: %w", err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	// What is written: the tunnels and the loaded configuration's hash.
	written := append(append(slices.Clip(data), 0), p.loaded...)
	if p.written != nil && bytes.Equal(p.written, written) {
		return 0, nil
	}
	now, minInterval := time.Now, p.MinInterval
	if p.Now != nil {
		now = p.Now
	}
	if minInterval <= 0 {
		minInterval = DefaultMinInterval
	}
	if p.writes == nil {
		p.writes = rate.NewLimiter(rate.Every(minInterval), PublishBurst)
	}
	at := now()
	if tokens := p.writes.TokensAt(at); tokens < 1 {
		// Rounded up to the millisecond: the bucket counts in floating
		// point, and a wait a nanosecond short finds it still empty.
		return time.Duration(math.Ceil((1-tokens)*float64(minInterval)/float64(time.Millisecond))) * time.Millisecond, nil
	}

	nn := types.NamespacedName{Namespace: p.Namespace, Name: p.Name}
	cm := &corev1.ConfigMap{}
	err = p.Client.Get(ctx, nn, cm)
	switch {
	case kerrors.IsNotFound(err):
		cm = &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Namespace: p.Namespace, Name: p.Name},
			Data:       agentData(&corev1.ConfigMap{}, data, p.loaded),
		}
		if err := p.Client.Create(ctx, cm); err != nil {
			p.written = nil
			return 0, fmt.Errorf("cannot create the status ConfigMap %s: %w", nn, err)
		}
	case err != nil:
		p.written = nil
		return 0, fmt.Errorf("cannot get the status ConfigMap %s: %w", nn, err)
	case maps.Equal(cm.Data, agentData(cm, data, p.loaded)) && len(cm.BinaryData) == 0:
		// Already there (the agent restarted): no write.
		p.written = written
		return 0, nil
	default:
		cm.Data = agentData(cm, data, p.loaded)
		cm.BinaryData = nil
		if err := p.Client.Update(ctx, cm); err != nil {
			p.written = nil
			return 0, fmt.Errorf("cannot update the status ConfigMap %s: %w", nn, err)
		}
	}
	p.written = written
	p.writes.AllowN(at, 1)
	return 0, nil
}

// agentData is the data the status ConfigMap cm is to hold with tunnels and
// the loaded configuration's hash: contract.KeyTunnels,
// contract.KeyConfigHash unless loaded is "", and the kept keys cm holds.
func agentData(cm *corev1.ConfigMap, tunnels []byte, loaded string) map[string]string {
	d := map[string]string{contract.KeyTunnels: string(tunnels)}
	if loaded != "" {
		d[contract.KeyConfigHash] = loaded
	}
	for _, k := range kept {
		if v, ok := cm.Data[k]; ok {
			d[k] = v
		}
	}
	return d
}
