//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ipsecgw/provider-ipsec/internal/contract"
	"github.com/ipsecgw/provider-ipsec/internal/workload"
	"github.com/ipsecgw/provider-ipsec/test/topology"
)

// liveReload changes the tunnels of the running gateway on the claim and
// proves the change is loaded live: a tunnel added (branch-b, to a peer
// that never answers, startAction respond: charon sends nothing), then
// removed again. Each time the ConfigMap changes, the agent reports the new
// configuration loaded within seconds and the gateway pod is the same
// (UID); after the addition the untouched tunnel's IKE SA and CHILD_SA (the
// client's, sa) keep their unique ids. After the removal they were made
// anew in the one run so far: logged, open (docs/live-reload.md). It logs the time from the claim's edit to the new
// ConfigMap and from there to the agent's report of it loaded.
func (s *stack) liveReload(t *testing.T, gw string, pod corev1.Pod, peer *topology.Charon, steady []topology.IKESA) {
	t.Helper()
	ctx := context.Background()
	configHash := func() string { return s.renderedHash(t, gw) }
	loaded := func() string { return s.loadedHash(t, gw) }
	before := configHash()
	eventually(t, "live reload: the agent reports the configuration loaded", time.Minute, func() (bool, string) {
		return loaded() == before, "loaded " + loaded() + ", rendered " + before
	})
	var original []any
	// edit sets the claim's tunnels to edit(its tunnels) and checks the
	// change is loaded live, and that the untouched tunnel
	// kept its IKE SAs; it returns the new configuration's hash.
	edit := func(what string, edit func([]any) []any) string {
		t.Helper()
		old := configHash()
		var edited time.Time
		eventually(t, "live reload: "+what+" on the claim", 30*time.Second, func() (bool, string) {
			claim := s.get(t, s.xr.gvk, tenant, pinned)
			tunnels, _, _ := unstructured.NestedSlice(claim.Object, "spec", "tunnels")
			if original == nil {
				original = tunnels
			}
			if err := unstructured.SetNestedSlice(claim.Object, edit(tunnels), "spec", "tunnels"); err != nil {
				t.Fatal(err)
			}
			edited = time.Now()
			err := s.kube.Update(ctx, claim)
			return err == nil, fmt.Sprint(err)
		})
		var now string
		rendered := eventually(t, "live reload: "+what+" reaches the gateway's ConfigMap", time.Minute, func() (bool, string) {
			now = configHash()
			return now != old, "the ConfigMap is unchanged"
		})
		reloaded := eventually(t, "live reload: the agent reports "+what+" loaded", time.Minute, func() (bool, string) {
			return loaded() == now, "loaded " + loaded() + ", rendered " + now
		})
		t.Logf("live reload, %s: claim edited → ConfigMap changed in %s → agent reported it loaded %s later (%s in all)",
			what, rendered.Round(10*time.Millisecond), reloaded.Round(10*time.Millisecond), time.Since(edited).Round(10*time.Millisecond))
		if reloaded > 10*time.Second {
			t.Errorf("live reload, %s: the agent loaded it %s after the ConfigMap changed, want within seconds (the kubelet's volume sync takes up to a minute)", what, reloaded)
		}
		if l := s.pods(t, gw); len(l) != 1 || l[0].UID != pod.UID {
			t.Errorf("live reload, %s: the gateway pod was replaced: %s (UID %s) before, %d pods after", what, pod.Name, pod.UID, len(l))
		}
		peer.WaitSA(t, siteConn, 30*time.Second, topology.Up(siteConn))
		if now := clientSAs(t, peer); saIDs(now) != saIDs(steady) {
			t.Errorf("live reload, %s: the untouched tunnel's IKE SAs %s became %s", what, saList(steady), saList(now))
		}
		return now
	}

	added := edit("a tunnel added", func(ts []any) []any {
		b := map[string]any{}
		for k, v := range ts[0].(map[string]any) {
			b[k] = v
		}
		b["name"], b["peer"], b["startAction"] = "branch-b", map[string]any{"address": "198.51.100.8"}, "respond"
		b["trafficSelectors"] = []any{map[string]any{"local": "100.64.0.0/24", "remote": "192.168.20.0/24"}}
		return append(slices.Clone(ts), b)
	})
	if conns := s.kubectl(t, "-n", tenant, "exec", pod.Name, "-c", "strongswan", "--", "swanctl", "--list-conns"); !strings.Contains(conns, "branch-b:") {
		t.Errorf("live reload: charon does not have the added tunnel branch-b:\n%s", conns)
	}
	eventually(t, "live reload: the claim shows the new configuration loaded", 3*time.Minute, func() (bool, string) {
		c := s.get(t, s.xr.gvk, tenant, pinned)
		h, l := str(c, "status", "gateway", "configHash"), str(c, "status", "gateway", "loadedConfigHash")
		return h == added && l == added, "configHash " + h + ", loadedConfigHash " + l + ", want " + added
	})
	if back := edit("the tunnel removed", func([]any) []any { return original }); back != before {
		t.Errorf("live reload: the claim's tunnels as before render %s, before %s", back, before)
	}
}

// renderedHash returns the hash of the configuration the provider rendered
// into gateway gw's ConfigMap (contract.ConfigHash of its files).
func (s *stack) renderedHash(t *testing.T, gw string) string {
	t.Helper()
	cm := &corev1.ConfigMap{}
	if err := s.kube.Get(context.Background(), client.ObjectKey{Namespace: tenant, Name: workload.NamesOf(gw).Config}, cm); err != nil {
		t.Fatal(err)
	}
	return contract.ConfigHash([]byte(cm.Data[contract.KeySwanctlConf]), []byte(cm.Data[contract.KeyNATRules]), []byte(cm.Data[contract.KeyStrongSwanConf]), []byte(cm.Data[contract.KeyXFRMInterfaces]))
}

// loadedHash returns the hash of the configuration gateway gw's agent
// reports loaded into charon (its status ConfigMap).
func (s *stack) loadedHash(t *testing.T, gw string) string {
	t.Helper()
	cm := &corev1.ConfigMap{}
	if err := s.kube.Get(context.Background(), client.ObjectKey{Namespace: tenant, Name: workload.NamesOf(gw).Status}, cm); err != nil {
		t.Fatal(err)
	}
	return cm.Data[contract.KeyConfigHash]
}
