package gateway

import (
	"context"
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ipsecgw/provider-ipsec/apis/cluster/gateway/v1alpha1"
	"github.com/ipsecgw/provider-ipsec/internal/contract"
	"github.com/ipsecgw/provider-ipsec/internal/workload"
)

// agentReport is what the gateway's agent publishes in its status
// ConfigMap (the keys of contract), decoded in one place (report).
type agentReport struct {
	// tunnels are the tunnels' status (contract.KeyTunnels), nil before
	// the agent's first report.
	tunnels []v1alpha1.TunnelStatus
	// leader is the active pod of an active/standby gateway
	// (contract.KeyLeader), nil when none is reported.
	leader *v1alpha1.LeaderStatus
	// loadedHash is the hash of the configuration the agent last loaded
	// (contract.KeyConfigHash), "" when it has loaded none.
	loadedHash string
	// silentStartPod is the pod whose agent resets arp_ignore
	// (contract.KeySilentStart), "" when none said so.
	silentStartPod string
}

// report reads the agent's status ConfigMap and decodes it: the zero
// report while the ConfigMap does not exist (no report yet). A key whose
// content does not parse is an error naming the ConfigMap and the key;
// what parsed is returned with it.
func (e *external) report(ctx context.Context, gw *v1alpha1.Gateway) (agentReport, error) {
	ns, name := gw.Spec.ForProvider.Namespace, workload.NamesOf(gw.Name).Status
	got, err := e.get(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}})
	if kerrors.IsNotFound(err) {
		return agentReport{}, nil
	}
	if err != nil {
		return agentReport{}, fmt.Errorf("cannot get the agent's status ConfigMap %s/%s: %w", ns, name, err)
	}
	data := got.(*corev1.ConfigMap).Data
	r := agentReport{loadedHash: data[contract.KeyConfigHash], silentStartPod: data[contract.KeySilentStart]}
	if raw, ok := data[contract.KeyTunnels]; ok {
		if err := json.Unmarshal([]byte(raw), &r.tunnels); err != nil {
			return r, fmt.Errorf("the agent's status ConfigMap %s/%s has no valid %s: %w", ns, name, contract.KeyTunnels, err)
		}
	}
	if raw, ok := data[contract.KeyLeader]; ok {
		r.leader = &v1alpha1.LeaderStatus{}
		if err := json.Unmarshal([]byte(raw), r.leader); err != nil {
			return r, fmt.Errorf("the agent's status ConfigMap %s/%s has no valid %s: %w", ns, name, contract.KeyLeader, err)
		}
	}
	return r, nil
}

// counts returns what of r counts for gw, whose Deployment runs replicas
// pods, ready of them ready. Without a ready pod every tunnel is down
// (idle) and no configuration is loaded. With fewer than 2 replicas there is no
// active pod, whatever the ConfigMap still holds: a gateway scaled back to
// 1 leaves its last report there.
func (r agentReport) counts(gw *v1alpha1.Gateway, replicas, ready int32) agentReport {
	if ready == 0 {
		return agentReport{tunnels: idle(gw), silentStartPod: r.silentStartPod}
	}
	if replicas < 2 {
		r.leader = nil
	}
	return r
}
