//go:build integration

package integration

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/controller"
	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/networks"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	netv1alpha1 "github.com/ipsecgw/provider-ipsec/apis/cluster/networking/v1alpha1"
	"github.com/ipsecgw/provider-ipsec/internal/clients/openstack"
	"github.com/ipsecgw/provider-ipsec/internal/controller/mrsetup"
	"github.com/ipsecgw/provider-ipsec/internal/controller/network"
	"github.com/ipsecgw/provider-ipsec/internal/controller/port"
)

// importedNetwork is a Network that imports the Neutron network id with
// management policy Observe alone, using the password ProviderConfig. Its
// forProvider asks for another name and a tag, which an import must not
// apply.
func importedNetwork(name, id string) *netv1alpha1.Network {
	n := &netv1alpha1.Network{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{meta.AnnotationKeyExternalName: id}}}
	n.Spec.ManagementPolicies = xpv2.ManagementPolicies{xpv2.ManagementActionObserve}
	n.Spec.ForProvider = netv1alpha1.NetworkParameters{Name: ptr.To("not-applied"), Tags: []string{"not-applied"}}
	n.Spec.ProviderConfigReference = &xpv2.Reference{Name: "openstack"}
	return n
}

// deleteNetworks deletes the Neutron networks each MR created, found by
// its marker, if any.
func deleteNetworks(t *testing.T, sc *gophercloud.ServiceClient, mrs []client.Object) {
	ctx := context.Background()
	for _, mr := range mrs {
		if mr.GetUID() == "" {
			continue
		}
		for _, id := range createdFor(t, sc, openstack.Networks, mr) {
			if err := networks.Delete(ctx, sc, id).ExtractErr(); err != nil && !openstack.IsNotFound(err) {
				t.Errorf("cleanup: the network of %s: %v", mr.GetName(), err)
			}
		}
	}
}

// deleteGone deletes the MR mr and waits up to 30 s (eventually's what)
// until the API server no longer has it and, with get not nil, until get
// (a GET of its Neutron object, named by obj: "port <id>") fails with 404.
func deleteGone(t *testing.T, mr client.Object, what, obj string, get func() error) {
	t.Helper()
	ctx := context.Background()
	if err := kube.Delete(ctx, mr); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, what, func() error {
		if err := kube.Get(ctx, client.ObjectKeyFromObject(mr), mr.DeepCopyObject().(client.Object)); !kerrors.IsNotFound(err) {
			return fmt.Errorf("MR still there (%w)", err)
		}
		if get == nil {
			return nil
		}
		if err := get(); !openstack.IsNotFound(err) {
			return fmt.Errorf("GET %s: %w, want 404", obj, err)
		}
		return nil
	})
}

// TestNetwork drives Network managed resources against the real Neutron
// with the Network and Port controllers running: an Observe-only import of
// the fixtures' tenant network reports its subnets and leaves it exactly
// as it was; a Port referencing that Network by networkIdRef becomes Ready
// on it; one GET per Observe; a Network the provider creates is tagged,
// corrected after a change by hand and deleted with its MR.
func TestNetwork(t *testing.T) {
	e := startOpenStack(t)
	ctx := context.Background()
	sc := neutron(t, e)
	var mrs []client.Object
	// Runs after the provider stopped (cleanups run last-in first-out).
	t.Cleanup(func() {
		deletePorts(t, sc, mrs)
		deleteNetworks(t, sc, mrs)
		forgetMRs(mrs...)
	})
	startProvider(t, func(mgr ctrl.Manager, o controller.Options) error {
		if err := network.Kind.Setup(mgr, o, mrsetup.Dependencies{OpenStack: e.Clients}); err != nil {
			return err
		}
		return port.Kind.Setup(mgr, o, mrsetup.Dependencies{OpenStack: e.Clients})
	})

	netID := e.Fixtures.TenantNet.ID
	before, err := networks.Get(ctx, sc, netID).Extract()
	if err != nil {
		t.Fatal(err)
	}
	imported := importedNetwork("itest-net-imported", netID)
	mrs = append(mrs, imported)
	start := time.Now()
	create(t, imported)

	t.Run("ObserveOnlyImport", func(t *testing.T) {
		waitReady(t, imported, func() xpv2.ConditionedStatus { return imported.Status.ConditionedStatus })
		t.Logf("imported Network create to Ready: %s", time.Since(start).Round(10*time.Millisecond))
		at := imported.Status.AtProvider
		if at.ID != netID || at.Status != "ACTIVE" || at.MTU == 0 || at.Shared || at.External || at.RevisionNumber != before.RevisionNumber {
			t.Errorf("status.atProvider = %+v, want the ACTIVE, unshared, internal network %s with an MTU and revision %d", at, netID, before.RevisionNumber)
		}
		if want := []string{e.Fixtures.TenantSub.ID}; !slices.Equal(at.Subnets, want) {
			t.Errorf("status.atProvider.subnets = %v, want the fixture's tenant subnet %v", at.Subnets, want)
		}
	})

	t.Run("ObserveIsOneRequest", func(t *testing.T) {
		own, n := ownNetwork(t)
		if err := kube.Get(ctx, client.ObjectKeyFromObject(imported), imported); err != nil {
			t.Fatal(err)
		}
		obs, err := network.NewExternal(own, openstack.Settling{}).Observe(ctx, imported)
		if err != nil {
			t.Fatal(err)
		}
		// The spec's name and tag differ from Neutron's: up to date it is
		// not, and only management policy Observe keeps the reconciler
		// from changing the network.
		if !obs.ResourceExists || obs.ResourceUpToDate {
			t.Errorf("Observe() = %+v, want an existing network that differs from forProvider", obs)
		}
		if got := n.Load(); got != 1 {
			t.Errorf("Observe of a Network sent %d Neutron requests, want 1", got)
		}
	})

	t.Run("PortByNetworkIDRef", func(t *testing.T) {
		p := portMR("itest-net-port", netv1alpha1.PortParameters{
			NetworkIDRef: &xpv2.Reference{Name: imported.Name},
			Name:         ptr.To("itest-net-port"),
		})
		mrs = append(mrs, p)
		start := time.Now()
		create(t, p)
		waitReady(t, p, func() xpv2.ConditionedStatus { return p.Status.ConditionedStatus })
		t.Logf("Port by networkIdRef create to Ready: %s", time.Since(start).Round(10*time.Millisecond))
		if got := ptr.Deref(p.Spec.ForProvider.NetworkID, ""); got != netID {
			t.Errorf("spec.forProvider.networkId = %q, want %s resolved from the Network", got, netID)
		}
		np, err := ports.Get(ctx, sc, meta.GetExternalName(p)).Extract()
		if err != nil {
			t.Fatal(err)
		}
		if np.NetworkID != netID || len(np.FixedIPs) != 1 || np.FixedIPs[0].SubnetID != e.Fixtures.TenantSub.ID {
			t.Errorf("Neutron port on network %s with fixed IPs %v, want network %s and an address of subnet %s",
				np.NetworkID, np.FixedIPs, netID, e.Fixtures.TenantSub.ID)
		}
		deleteGone(t, p, "the Port MR and its Neutron port are gone", "port "+np.ID, func() error {
			_, err := ports.Get(ctx, sc, np.ID).Extract()
			return err
		})
	})

	t.Run("ImportLeavesTheNetwork", func(t *testing.T) {
		// A few more 1 s polls, then the MR's deletion: neither touches
		// the network.
		time.Sleep(2 * time.Second)
		deleteGone(t, imported, "the imported Network MR is gone", "", nil)
		after, err := networks.Get(ctx, sc, netID).Extract()
		if err != nil {
			t.Fatalf("the imported network after the MR's deletion: %v, want it untouched", err)
		}
		if after.RevisionNumber != before.RevisionNumber || after.Name != before.Name || !slices.Equal(after.Tags, before.Tags) {
			t.Errorf("network after the import: revision %d, name %q, tags %v; want it as before: revision %d, name %q, tags %v",
				after.RevisionNumber, after.Name, after.Tags, before.RevisionNumber, before.Name, before.Tags)
		}
	})

	t.Run("CreateUpdateDelete", func(t *testing.T) {
		n := &netv1alpha1.Network{ObjectMeta: metav1.ObjectMeta{Name: "itest-net-managed"}}
		n.Spec.ForProvider = netv1alpha1.NetworkParameters{Name: ptr.To("itest-net-managed"), Description: ptr.To("TestNetwork"), Tags: []string{"itest"}}
		n.Spec.ProviderConfigReference = &xpv2.Reference{Name: "openstack"}
		mrs = append(mrs, n)
		start := time.Now()
		create(t, n)
		waitReady(t, n, func() xpv2.ConditionedStatus { return n.Status.ConditionedStatus })
		t.Logf("managed Network create to Ready: %s", time.Since(start).Round(10*time.Millisecond))
		id := meta.GetExternalName(n)
		got, err := networks.Get(ctx, sc, id).Extract()
		if err != nil {
			t.Fatal(err)
		}
		slices.Sort(got.Tags)
		if want := []string{"itest"}; got.Name != "itest-net-managed" || !slices.Equal(got.Tags, want) || got.Description != openstack.Mark(n, "TestNetwork") {
			t.Errorf("Neutron network name %q, description %q, tags %v; want itest-net-managed, the marked description, %v", got.Name, got.Description, got.Tags, want)
		}

		if _, err := networks.Update(ctx, sc, id, networks.UpdateOpts{Name: ptr.To("renamed-by-hand")}).Extract(); err != nil {
			t.Fatal(err)
		}
		renamed := time.Now()
		eventually(t, 30*time.Second, "the name comes back", func() error {
			got, err := networks.Get(ctx, sc, id).Extract()
			if err != nil {
				return err
			}
			if got.Name != "itest-net-managed" {
				return fmt.Errorf("name %q", got.Name)
			}
			return nil
		})
		t.Logf("name restored %s after its change by hand", time.Since(renamed).Round(10*time.Millisecond))

		deleteGone(t, n, "the Network MR and its Neutron network are gone", "network "+id, func() error {
			_, err := networks.Get(ctx, sc, id).Extract()
			return err
		})
	})
}

// dryRunExample applies examples/networking/file to the API server as a
// dry run, failing t when it does not apply, and returns it.
func dryRunExample(t *testing.T, file string) *unstructured.Unstructured {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot, "examples", "networking", file))
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal(b, &u.Object); err != nil {
		t.Fatal(err)
	}
	if err := kube.Create(context.Background(), u, client.DryRunAll); err != nil {
		t.Fatalf("%s does not apply: %v", file, err)
	}
	return u
}

// TestNetworkExample applies examples/networking/network.yaml to the API
// server (dry run): the example is valid against the CRD as it is.
func TestNetworkExample(t *testing.T) {
	dryRunExample(t, "network.yaml")
}
