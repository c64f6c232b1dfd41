//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ipsecgw/provider-ipsec/internal/render"
	"github.com/ipsecgw/provider-ipsec/internal/workload"
	"github.com/ipsecgw/provider-ipsec/test/topology"
)

// liveReload edits the running gateway's tunnel on the claim (its CHILD_SA
// rekey time, which the client's peer need not agree on) and proves the
// change is loaded live: the ConfigMap changes, the agent reports the new
// configuration loaded within seconds, the gateway pod is the same (UID),
// and the client's IKE SA and CHILD_SA with it are the same (unique ids),
// charon having the new rekey time. sa is the client's IKE SA with the
// gateway. It logs the time from the claim's edit to the new ConfigMap and
// from there to the agent's report of it loaded.
func (s *stack) liveReload(t *testing.T, gw string, pod corev1.Pod, peer *topology.Charon, sa topology.IKESA) {
	t.Helper()
	ctx := context.Background()
	n := workload.NamesOf(gw)
	configHash := func() string {
		cm := &corev1.ConfigMap{}
		if err := s.kube.Get(ctx, client.ObjectKey{Namespace: tenant, Name: n.Config}, cm); err != nil {
			t.Fatal(err)
		}
		return render.ConfigHash([]byte(cm.Data[workload.KeySwanctlConf]), []byte(cm.Data[workload.KeyNATRules]), []byte(cm.Data[workload.KeyStrongSwanConf]))
	}
	loaded := func() string {
		cm := &corev1.ConfigMap{}
		if err := s.kube.Get(ctx, client.ObjectKey{Namespace: tenant, Name: n.Status}, cm); err != nil {
			t.Fatal(err)
		}
		return cm.Data[workload.KeyConfigHash]
	}
	before := configHash()
	eventually(t, "live reload: the agent reports the configuration loaded", time.Minute, func() (bool, string) {
		return loaded() == before, "loaded " + loaded() + ", rendered " + before
	})

	var edited time.Time
	eventually(t, "live reload: the claim's tunnel edited", 30*time.Second, func() (bool, string) {
		claim := s.get(t, claimGVK, tenant, pinned)
		tunnels, _, _ := unstructured.NestedSlice(claim.Object, "spec", "tunnels")
		tunnels[0].(map[string]any)["childLifetime"] = map[string]any{"rekeyTime": "50m"}
		if err := unstructured.SetNestedSlice(claim.Object, tunnels, "spec", "tunnels"); err != nil {
			t.Fatal(err)
		}
		edited = time.Now()
		err := s.kube.Update(ctx, claim)
		return err == nil, fmt.Sprint(err)
	})
	var after string
	rendered := eventually(t, "live reload: the edited tunnel reaches the gateway's ConfigMap", time.Minute, func() (bool, string) {
		after = configHash()
		return after != before, "the ConfigMap is unchanged"
	})
	reloaded := eventually(t, "live reload: the agent reports the new configuration loaded", time.Minute, func() (bool, string) {
		return loaded() == after, "loaded " + loaded() + ", rendered " + after
	})
	t.Logf("live reload: claim edited → ConfigMap changed in %s → agent reported it loaded %s later (%s in all)",
		rendered.Round(10*time.Millisecond), reloaded.Round(10*time.Millisecond), time.Since(edited).Round(10*time.Millisecond))
	if reloaded > 10*time.Second {
		t.Errorf("live reload: the agent loaded the new configuration %s after the ConfigMap changed, want within seconds (the kubelet's volume sync takes up to a minute)", reloaded)
	}

	if l := s.pods(t, gw); len(l) != 1 || l[0].UID != pod.UID {
		t.Errorf("live reload: a tunnel edit replaced the gateway pod: %s (UID %s) before, %d pods after", pod.Name, pod.UID, len(l))
	}
	now := peer.WaitSA(t, siteConn, 10*time.Second, topology.Up(siteConn))
	if now.UniqueID != sa.UniqueID || !slices.Equal(slices.Sorted(maps.Keys(now.ChildSAs)), slices.Sorted(maps.Keys(sa.ChildSAs))) {
		t.Errorf("live reload: the client's IKE SA %s with CHILD_SAs %v became %s with %v: the edit tore the tunnel down",
			sa.UniqueID, slices.Sorted(maps.Keys(sa.ChildSAs)), now.UniqueID, slices.Sorted(maps.Keys(now.ChildSAs)))
	}
	if conns := s.kubectl(t, "-n", tenant, "exec", pod.Name, "-c", "strongswan", "--", "swanctl", "--list-conns"); !strings.Contains(conns, "3000s") {
		t.Errorf("live reload: charon does not have the new CHILD_SA rekey time (50m = 3000s):\n%s", conns)
	}
	eventually(t, "live reload: the claim shows the new configuration loaded", 3*time.Minute, func() (bool, string) {
		c := s.get(t, claimGVK, tenant, pinned)
		h, l := str(c, "status", "gateway", "configHash"), str(c, "status", "gateway", "loadedConfigHash")
		return h == after && l == after, "configHash " + h + ", loadedConfigHash " + l + ", want " + after
	})
}
