//go:build e2e

package e2e

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/networks"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	mrdKind  = schema.GroupVersionKind{Group: "apiextensions.crossplane.io", Version: "v1alpha1", Kind: "ManagedResourceDefinition"}
	mrapKind = schema.GroupVersionKind{Group: "apiextensions.crossplane.io", Version: "v1alpha1", Kind: "ManagedResourceActivationPolicy"}
	crdKind  = schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"}
	// networkKind is the cluster-scoped Network, a kind the Configuration
	// does not compose and so leaves inactive.
	networkKind = schema.GroupVersionKind{Group: "networking.ipsecgw.io", Version: "v1alpha1", Kind: "Network"}
)

// networkMRDs are the Networks' ManagedResourceDefinitions (both scopes),
// and networkControllers the provider's controllers of them.
var (
	networkMRDs        = []string{"networks.networking.ipsecgw.io", "networks.networking.m.ipsecgw.io"}
	networkControllers = []string{"managed/network.networking.ipsecgw.io", "managed/network.networking.m.ipsecgw.io"}
)

// safeStart checks the provider's safe start on the stack, as Crossplane
// v2.4 runs it for a package with the safe-start capability: the Networks,
// which no activation policy names (the Configuration's activates what it
// composes), are inactive, have no CRD, and the running provider, ready,
// has no controller for them; a platform's ManagedResourceActivationPolicy
// then activates them, Crossplane makes their CRDs, the provider starts
// their controllers without a restart, and a Network is created in
// Neutron, Ready, and deleted from it.
func safeStart(t *testing.T, s *stack) {
	ctx := context.Background()
	ports := stackPorts(t, s.state)
	provider := ports["PROVIDER_METRICS_PORT"]

	// 1. Inactive: no CRD, no controller, the provider ready.
	for _, name := range networkMRDs {
		mrd := s.get(t, mrdKind, "", name)
		if mrd == nil {
			t.Fatalf("no ManagedResourceDefinition %s: the provider package installed none", name)
		}
		if st := str(mrd, "spec", "state"); st != "Inactive" {
			t.Fatalf("ManagedResourceDefinition %s is %s before any policy names it, want Inactive (the provider's safe-start capability)", name, st)
		}
		if crd := s.get(t, crdKind, "", name); crd != nil {
			t.Errorf("inactive %s has a CRD", name)
		}
	}
	running := controllers(t, provider)
	if !slices.Contains(running, "managed/securitygroup.networking.ipsecgw.io") {
		t.Fatalf("the provider runs no SecurityGroup controller (an active kind): %v", running)
	}
	for _, c := range networkControllers {
		if slices.Contains(running, c) {
			t.Errorf("the provider runs %s, the controller of an inactive kind", c)
		}
	}
	ready(t, ports["PROVIDER_HEALTH_PORT"])

	// 2. Activated while the provider runs.
	policy := &unstructured.Unstructured{}
	policy.SetGroupVersionKind(mrapKind)
	policy.SetName("e2e-networks")
	if err := unstructured.SetNestedStringSlice(policy.Object, networkMRDs, "spec", "activate"); err != nil {
		t.Fatal(err)
	}
	if err := s.kube.Create(ctx, policy); err != nil {
		t.Fatal(err)
	}
	// The Networks stay active: Crossplane refuses to deactivate a kind.
	t.Cleanup(func() { _ = s.kube.Delete(ctx, policy) })
	start := time.Now()
	eventually(t, "the Networks' CRDs established", 60*time.Second, func() (bool, string) {
		for _, name := range networkMRDs {
			crd := s.get(t, crdKind, "", name)
			if crd == nil {
				return false, name + " has no CRD"
			}
			if st, _ := condition(crd, "Established", "status", "conditions"); st != "True" {
				return false, name + " is not established"
			}
		}
		return true, ""
	})
	established := time.Since(start)
	eventually(t, "the provider's Network controllers", 60*time.Second, func() (bool, string) {
		running := controllers(t, provider)
		for _, c := range networkControllers {
			if !slices.Contains(running, c) {
				return false, "running: " + strings.Join(running, " ")
			}
		}
		return true, ""
	})
	t.Logf("safe start: the Networks' CRDs established %s after the activation policy, their controllers running %s after it",
		established.Round(100*time.Millisecond), time.Since(start).Round(100*time.Millisecond))

	// A Network, reconciled: created in the tenant's Neutron, Ready, and
	// deleted from it.
	network := &unstructured.Unstructured{}
	network.SetGroupVersionKind(networkKind)
	network.SetName("e2e-safe-start")
	network.Object["spec"] = map[string]any{
		"forProvider":       map[string]any{"name": "e2e-safe-start"},
		"providerConfigRef": map[string]any{"name": "default"},
	}
	if err := s.kube.Create(ctx, network); err != nil {
		t.Fatal(err)
	}
	var id string
	t.Cleanup(func() {
		// A failed test leaves neither the Network nor its Neutron network.
		_ = s.kube.Delete(ctx, network)
		if id != "" {
			_ = networks.Delete(ctx, s.network, id).ExtractErr()
		}
	})
	start = time.Now()
	eventually(t, "the Network Ready", 60*time.Second, func() (bool, string) {
		n := s.get(t, networkKind, "", network.GetName())
		id = str(n, "status", "atProvider", "id")
		ready, msg := condition(n, "Ready", "status", "conditions")
		synced, smsg := condition(n, "Synced", "status", "conditions")
		return ready == "True" && synced == "True" && id != "", "Ready " + ready + " " + msg + "; Synced " + synced + " " + smsg
	})
	t.Logf("safe start: the Network Ready %s after its creation", time.Since(start).Round(100*time.Millisecond))
	got, err := networks.Get(ctx, s.network, id).Extract()
	if err != nil {
		t.Fatalf("the Network's Neutron network %s: %v", id, err)
	}
	if got.Name != "e2e-safe-start" {
		t.Errorf("the Network's Neutron network is named %q, want e2e-safe-start", got.Name)
	}
	if err := s.kube.Delete(ctx, network); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the Network deleted", 60*time.Second, func() (bool, string) {
		return s.get(t, networkKind, "", network.GetName()) == nil, "it exists"
	})
	if _, err := networks.Get(ctx, s.network, id).Extract(); !gophercloud.ResponseCodeIs(err, 404) {
		t.Errorf("the deleted Network's Neutron network %s: %v, want 404", id, err)
	}
}

// controllers returns the names of the controllers the provider whose
// metrics are on port runs: controller-runtime publishes each one's
// max_concurrent_reconciles when it starts.
func controllers(t *testing.T, port string) []string {
	t.Helper()
	var names []string
	scrape(t, port, "controller_runtime_max_concurrent_reconciles", func(_, labels string, _ float64) {
		if _, rest, ok := strings.Cut(labels, `controller="`); ok {
			name, _, _ := strings.Cut(rest, `"`)
			names = append(names, name)
		}
	})
	slices.Sort(names)
	return names
}

// ready fails t unless the provider whose probes are on port is ready.
func ready(t *testing.T, port string) {
	t.Helper()
	eventually(t, "the provider's /readyz", 10*time.Second, func() (bool, string) {
		resp, err := http.Get("http://127.0.0.1:" + port + "/readyz")
		if err != nil {
			return false, err.Error()
		}
		_ = resp.Body.Close()
		return resp.StatusCode == http.StatusOK, resp.Status
	})
}
