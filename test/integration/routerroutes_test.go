//go:build integration

package integration

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/controller"
	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/extraroutes"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/routers"
	corev1 "k8s.io/api/core/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	netv1alpha1 "github.com/ipsecgw/provider-ipsec/apis/cluster/networking/v1alpha1"
	"github.com/ipsecgw/provider-ipsec/apis/cluster/v1alpha1"
	"github.com/ipsecgw/provider-ipsec/internal/clients/openstack"
	"github.com/ipsecgw/provider-ipsec/internal/controller/mrsetup"
	"github.com/ipsecgw/provider-ipsec/internal/controller/port"
	"github.com/ipsecgw/provider-ipsec/internal/controller/routerroutes"
)

// rrHostIn returns the address n hosts into the fixtures' CIDR cidr, such
// as rrHostIn("10.20.0.0/24", 50) = "10.20.0.50".
func rrHostIn(t *testing.T, cidr string, n int) string {
	t.Helper()
	a := netip.MustParsePrefix(cidr).Masked().Addr()
	for range n {
		a = a.Next()
	}
	return a.String()
}

// rrRoutesOf reads the router's extra routes from Neutron as "dst via nh".
func rrRoutesOf(ctx context.Context, sc *gophercloud.ServiceClient, id string) ([]string, error) {
	r, err := routers.Get(ctx, sc, id).Extract()
	if err != nil {
		return nil, err
	}
	out := make([]string, len(r.Routes))
	for i, rt := range r.Routes {
		out[i] = rt.DestinationCIDR + " via " + rt.NextHop
	}
	slices.Sort(out)
	return out, nil
}

// rrWantRoutes checks that the router holds exactly want (any order).
func rrWantRoutes(ctx context.Context, sc *gophercloud.ServiceClient, id string, want ...string) error {
	got, err := rrRoutesOf(ctx, sc, id)
	if err != nil {
		return err
	}
	want = slices.Sorted(slices.Values(want))
	if !slices.Equal(got, want) {
		return fmt.Errorf("router has routes %q, want %q", got, want)
	}
	return nil
}

// rrReady says why mg is not Ready, or nil.
func rrReady(mg resource.Managed) error {
	if c := mg.GetCondition(xpv2.TypeReady); c.Status != corev1.ConditionTrue {
		return fmt.Errorf("Ready %s %s: %s (Synced: %s)", c.Status, c.Reason, c.Message, mg.GetCondition(xpv2.TypeSynced).Message)
	}
	return nil
}

// TestRouterRoutes drives RouterRoutes against the real Neutron router of
// the fixtures: routes become present and Ready; a route another tool owns
// on the same router (one to another destination, one to our destination
// via another nexthop) survives create, update, drift repair and delete;
// a route dropped from the spec goes, a route deleted by hand comes back;
// an up-to-date Observe costs one Neutron request; nexthop comes from a Port
// managed resource's fixed IP through nexthopPortRef; delete removes exactly
// our routes.
func TestRouterRoutes(t *testing.T) {
	e := startOpenStack(t)
	ctx := context.Background()
	sc := neutron(t, e)
	router, cidr := e.Fixtures.Router.ID, e.Fixtures.TenantSub.CIDR
	gw, gw2, other, portIP := rrHostIn(t, cidr, 50), rrHostIn(t, cidr, 51), rrHostIn(t, cidr, 9), rrHostIn(t, cidr, 60)
	route := func(dst, nh string) routers.Route { return routers.Route{DestinationCIDR: dst, NextHop: nh} }
	s := func(r routers.Route) string { return r.DestinationCIDR + " via " + r.NextHop }
	// Routes another tool owns: one elsewhere, one to our destination via
	// another nexthop.
	foreign := []routers.Route{route("172.16.0.0/16", other), route("10.30.0.0/24", other)}
	a, b, c := route("10.30.0.0/24", gw), route("10.31.0.0/24", gw2), route("10.32.0.0/24", gw)
	viaPort := route("10.33.0.0/24", portIP)
	// Registered before the provider starts, so it runs after the provider
	// stopped and cannot repair what it removes.
	var mrs []client.Object
	t.Cleanup(func() {
		forgetMRs(mrs...)
		deletePorts(t, sc, mrs)
		all := append(slices.Clone(foreign), a, b, c, viaPort, route("10.40.0.0/24", other))
		if _, err := extraroutes.Remove(context.Background(), sc, router, extraroutes.Opts{Routes: &all}).Extract(); err != nil {
			t.Errorf("cleanup: remove_extraroutes: %v", err)
		}
	})
	logs := startProvider(t, func(mgr ctrl.Manager, o controller.Options) error {
		if err := port.Kind.Setup(mgr, o, mrsetup.Dependencies{OpenStack: e.Clients}); err != nil {
			return err
		}
		return routerroutes.Kind.Setup(mgr, o, mrsetup.Dependencies{OpenStack: e.Clients})
	})
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("provider log:\n%s", logs)
		}
	})
	if _, err := extraroutes.Add(ctx, sc, router, extraroutes.Opts{Routes: &foreign}).Extract(); err != nil {
		t.Fatalf("add the foreign routes: %v", err)
	}
	// Adding a route the router already has is accepted and changes
	// nothing: the premise of a create that needs no crash-safety tag.
	again := foreign[:1]
	if _, err := extraroutes.Add(ctx, sc, router, extraroutes.Opts{Routes: &again}).Extract(); err != nil {
		t.Fatalf("adding a route twice: %v", err)
	}
	if err := rrWantRoutes(ctx, sc, router, s(foreign[0]), s(foreign[1])); err != nil {
		t.Fatalf("after adding a route twice: %v", err)
	}

	mg := &netv1alpha1.RouterRoutes{
		ObjectMeta: metav1.ObjectMeta{Name: "itest-routes"},
		Spec: netv1alpha1.RouterRoutesSpec{
			ClusterManagedResourceSpec: xpv2.ClusterManagedResourceSpec{ProviderConfigReference: &xpv2.Reference{Name: "openstack"}},
			ForProvider: netv1alpha1.RouterRoutesParameters{
				RouterID: netv1alpha1.UUID(router),
				Routes: []netv1alpha1.Route{
					{Destination: "10.30.0.0/24"},
					{Destination: "10.31.0.0/24", Nexthop: ptr.To(netv1alpha1.IPAddress(gw2))},
				},
				Nexthop: ptr.To(gw),
			},
		},
	}
	mrs = append(mrs, mg)
	start := time.Now()
	create(t, mg)
	key := client.ObjectKeyFromObject(mg)
	eventually(t, 30*time.Second, "RouterRoutes Ready", func() error {
		if err := kube.Get(ctx, key, mg); err != nil {
			return err
		}
		return rrReady(mg)
	})
	t.Logf("create to Ready: %s", time.Since(start).Round(time.Millisecond))
	if err := rrWantRoutes(ctx, sc, router, s(foreign[0]), s(foreign[1]), s(a), s(b)); err != nil {
		t.Fatalf("after create: %v", err)
	}
	if en := meta.GetExternalName(mg); en != router {
		t.Errorf("external name %q, want the router's ID %s", en, router)
	}
	wantStatus := []netv1alpha1.ObservedRoute{{Destination: a.DestinationCIDR, Nexthop: a.NextHop}, {Destination: b.DestinationCIDR, Nexthop: b.NextHop}}
	if !slices.Equal(mg.Status.AtProvider.Routes, wantStatus) {
		t.Errorf("status.atProvider.routes = %+v, want %+v (ours only)", mg.Status.AtProvider.Routes, wantStatus)
	}

	// Steady state, measured two ways: the running controller's requests
	// per reconcile, and one Observe on its own with the controller paused.
	time.Sleep(2 * time.Second)
	before, reconciles := e.Requests.Load(), rrUpToDate(logs, "itest-routes")
	time.Sleep(4 * time.Second)
	requests, observes := e.Requests.Load()-before, rrUpToDate(logs, "itest-routes")-reconciles
	t.Logf("steady state: %d Neutron requests in %d reconciles", requests, observes)
	if observes == 0 || requests > int64(observes)+1 || requests < int64(observes)-1 {
		t.Errorf("%d Neutron requests in %d reconciles of an up-to-date RouterRoutes, want one each", requests, observes)
	}
	t.Run("OneRequestPerObserve", func(t *testing.T) {
		rrSetPaused(t, mg, true)
		defer rrSetPaused(t, mg, false)
		rrQuiet(t, e)
		conn := routerroutes.NewConnector(openstack.Connector{Kube: kube, Usage: resource.NewLegacyProviderConfigUsageTracker(kube, &v1alpha1.ProviderConfigUsage{}), Clients: e.Clients})
		before := e.Requests.Load()
		ext, err := conn.Connect(ctx, mg)
		if err != nil {
			t.Fatal(err)
		}
		o, err := ext.Observe(ctx, mg)
		if err != nil {
			t.Fatal(err)
		}
		if !o.ResourceExists || !o.ResourceUpToDate {
			t.Errorf("Observe = %+v, want exists and up to date", o)
		}
		if n := e.Requests.Load() - before; n != 1 {
			t.Errorf("Connect+Observe of an up-to-date RouterRoutes sent %d Neutron requests, want 1", n)
		}
	})

	t.Run("AddThenDropRoute", func(t *testing.T) {
		rrMod(t, mg, func(mg *netv1alpha1.RouterRoutes) {
			mg.Spec.ForProvider.Routes = append(mg.Spec.ForProvider.Routes, netv1alpha1.Route{Destination: "10.32.0.0/24"})
		})
		eventually(t, 30*time.Second, "route added to the spec is on the router", func() error {
			return rrWantRoutes(ctx, sc, router, s(foreign[0]), s(foreign[1]), s(a), s(b), s(c))
		})
		eventually(t, 30*time.Second, "status lists the added route", func() error {
			if err := kube.Get(ctx, key, mg); err != nil {
				return err
			}
			if n := len(mg.Status.AtProvider.Routes); n != 3 {
				return fmt.Errorf("status.atProvider.routes = %+v", mg.Status.AtProvider.Routes)
			}
			return nil
		})
		rrMod(t, mg, func(mg *netv1alpha1.RouterRoutes) {
			mg.Spec.ForProvider.Routes = slices.DeleteFunc(mg.Spec.ForProvider.Routes, func(r netv1alpha1.Route) bool { return r.Destination == "10.31.0.0/24" })
		})
		eventually(t, 30*time.Second, "only the route dropped from the spec is removed", func() error {
			return rrWantRoutes(ctx, sc, router, s(foreign[0]), s(foreign[1]), s(a), s(c))
		})
	})

	t.Run("Drift", func(t *testing.T) {
		if _, err := extraroutes.Remove(ctx, sc, router, extraroutes.Opts{Routes: &[]routers.Route{a}}).Extract(); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		eventually(t, 30*time.Second, "a route deleted by hand comes back", func() error {
			return rrWantRoutes(ctx, sc, router, s(foreign[0]), s(foreign[1]), s(a), s(c))
		})
		t.Logf("drift repaired in %s", time.Since(start).Round(time.Millisecond))
	})

	t.Run("NexthopFromPort", func(t *testing.T) {
		// The Port controller runs: the Port MR gets a real Neutron port
		// with a fixed IP in tenant-subnet, and the RouterRoutes takes that
		// address as nexthop through nexthopPortRef.
		gwPort := portMR("itest-routes-gw-port", netv1alpha1.PortParameters{
			NetworkID: ptr.To(e.Fixtures.TenantNet.ID),
			FixedIPs:  []netv1alpha1.FixedIP{{SubnetID: ptr.To(netv1alpha1.UUID(e.Fixtures.TenantSub.ID)), IPAddress: ptr.To(netv1alpha1.IPAddress(portIP))}},
		})
		byPort := &netv1alpha1.RouterRoutes{
			ObjectMeta: metav1.ObjectMeta{Name: "itest-routes-by-port"},
			Spec: netv1alpha1.RouterRoutesSpec{
				ClusterManagedResourceSpec: xpv2.ClusterManagedResourceSpec{ProviderConfigReference: &xpv2.Reference{Name: "openstack"}},
				ForProvider: netv1alpha1.RouterRoutesParameters{
					RouterID:       netv1alpha1.UUID(router),
					Routes:         []netv1alpha1.Route{{Destination: "10.33.0.0/24"}},
					NexthopPortRef: &xpv2.Reference{Name: gwPort.Name},
				},
			},
		}
		// Both at once, as a composition creates them: the RouterRoutes
		// waits for the Port's fixed IP.
		start := time.Now()
		create(t, gwPort, byPort)
		mrs = append(mrs, gwPort, byPort)
		eventually(t, 60*time.Second, "RouterRoutes with nexthop from a Port Ready", func() error {
			if err := kube.Get(ctx, client.ObjectKeyFromObject(byPort), byPort); err != nil {
				return err
			}
			return rrReady(byPort)
		})
		t.Logf("Port and RouterRoutes created together to RouterRoutes Ready: %s", time.Since(start).Round(time.Millisecond))
		if nh := ptr.Deref(byPort.Spec.ForProvider.Nexthop, ""); nh != portIP {
			t.Errorf("spec.forProvider.nexthop = %q, want the Port's fixed IP %s", nh, portIP)
		}
		if err := rrWantRoutes(ctx, sc, router, s(foreign[0]), s(foreign[1]), s(a), s(c), s(viaPort)); err != nil {
			t.Fatal(err)
		}
		if err := kube.Delete(ctx, byPort); err != nil {
			t.Fatal(err)
		}
		eventually(t, 30*time.Second, "the Port's route goes with its RouterRoutes, the other RouterRoutes' stay", func() error {
			if err := kube.Get(ctx, client.ObjectKeyFromObject(byPort), byPort); !kerrors.IsNotFound(err) {
				return fmt.Errorf("RouterRoutes still there: %w", err)
			}
			return rrWantRoutes(ctx, sc, router, s(foreign[0]), s(foreign[1]), s(a), s(c))
		})
		if err := kube.Delete(ctx, gwPort); err != nil {
			t.Fatal(err)
		}
		eventually(t, 30*time.Second, "the Port MR is deleted", func() error {
			if err := kube.Get(ctx, client.ObjectKeyFromObject(gwPort), gwPort); !kerrors.IsNotFound(err) {
				return fmt.Errorf("Port still there: %w", err)
			}
			return nil
		})
	})

	t.Run("ObserveOnlyImport", func(t *testing.T) {
		// Management policy Observe with the router as external name:
		// the routes present are reported, the missing one is not added,
		// and deleting the resource removes nothing.
		imported := &netv1alpha1.RouterRoutes{
			ObjectMeta: metav1.ObjectMeta{Name: "itest-routes-observe", Annotations: map[string]string{meta.AnnotationKeyExternalName: router}},
			Spec: netv1alpha1.RouterRoutesSpec{
				ClusterManagedResourceSpec: xpv2.ClusterManagedResourceSpec{
					ProviderConfigReference: &xpv2.Reference{Name: "openstack"},
					ManagementPolicies:      xpv2.ManagementPolicies{xpv2.ManagementActionObserve},
				},
				ForProvider: netv1alpha1.RouterRoutesParameters{
					RouterID: netv1alpha1.UUID(router),
					Routes:   []netv1alpha1.Route{{Destination: "172.16.0.0/16"}, {Destination: "10.40.0.0/24"}},
					Nexthop:  ptr.To(other),
				},
			},
		}
		create(t, imported)
		mrs = append(mrs, imported)
		eventually(t, 30*time.Second, "the imported routes are observed", func() error {
			if err := kube.Get(ctx, client.ObjectKeyFromObject(imported), imported); err != nil {
				return err
			}
			want := []netv1alpha1.ObservedRoute{{Destination: "172.16.0.0/16", Nexthop: other}}
			if !slices.Equal(imported.Status.AtProvider.Routes, want) {
				return fmt.Errorf("status.atProvider.routes = %+v, want %+v", imported.Status.AtProvider.Routes, want)
			}
			return nil
		})
		time.Sleep(2 * time.Second)
		if err := rrWantRoutes(ctx, sc, router, s(foreign[0]), s(foreign[1]), s(a), s(c)); err != nil {
			t.Errorf("Observe-only changed the router: %v", err)
		}
		if err := kube.Delete(ctx, imported); err != nil {
			t.Fatal(err)
		}
		eventually(t, 30*time.Second, "the Observe-only resource is deleted and the routes stay", func() error {
			if err := kube.Get(ctx, client.ObjectKeyFromObject(imported), imported); !kerrors.IsNotFound(err) {
				return fmt.Errorf("RouterRoutes still there: %w", err)
			}
			return rrWantRoutes(ctx, sc, router, s(foreign[0]), s(foreign[1]), s(a), s(c))
		})
	})

	if err := kube.Delete(ctx, mg); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "deleting the RouterRoutes removes exactly its routes", func() error {
		if err := kube.Get(ctx, key, mg); !kerrors.IsNotFound(err) {
			return fmt.Errorf("RouterRoutes still there: %w", err)
		}
		return rrWantRoutes(ctx, sc, router, s(foreign[0]), s(foreign[1]))
	})

	// Removing a route the router does not have: what Delete meets when a
	// route went by hand between Observe and Delete.
	gone := []routers.Route{a}
	_, err := extraroutes.Remove(ctx, sc, router, extraroutes.Opts{Routes: &gone}).Extract()
	t.Logf("remove_extraroutes of an absent route: %v", err)
	if err != nil {
		t.Errorf("remove_extraroutes of an absent route: %v, want success (idempotent)", err)
	}
}

// TestRouterRoutesExample applies examples/networking/routerroutes.yaml to
// the API server (dry run): the example is valid against the CRD.
func TestRouterRoutesExample(t *testing.T) {
	u := dryRunExample(t, "routerroutes.yaml")
	// And CEL refuses a route that has no nexthop from anywhere.
	delete(u.Object["spec"].(map[string]any)["forProvider"].(map[string]any), "nexthopPortRef")
	if err := kube.Create(context.Background(), u, client.DryRunAll); err == nil || !strings.Contains(err.Error(), "every route needs a nexthop") {
		t.Errorf("a route without any nexthop: %v, want refused", err)
	}
}

// rrUpToDate counts the reconciles of the managed resource name that
// found it up to date, from the provider's debug log.
func rrUpToDate(logs *syncBuffer, name string) int {
	n := 0
	for l := range strings.Lines(logs.String()) {
		if strings.Contains(l, "External resource is up to date") && strings.Contains(l, `"request": {"name":"`+name+`"}`) {
			n++
		}
	}
	return n
}

// rrMod changes mg's spec with f, retrying on conflicts with the
// controller's status writes.
func rrMod(t *testing.T, mg *netv1alpha1.RouterRoutes, f func(*netv1alpha1.RouterRoutes)) {
	t.Helper()
	eventually(t, 10*time.Second, "update "+mg.Name, func() error {
		if err := kube.Get(context.Background(), client.ObjectKeyFromObject(mg), mg); err != nil {
			return err
		}
		f(mg)
		return kube.Update(context.Background(), mg)
	})
}

// rrSetPaused sets or clears crossplane.io/paused on mg.
func rrSetPaused(t *testing.T, mg *netv1alpha1.RouterRoutes, paused bool) {
	t.Helper()
	rrMod(t, mg, func(mg *netv1alpha1.RouterRoutes) {
		if paused {
			meta.AddAnnotations(mg, map[string]string{meta.AnnotationKeyReconciliationPaused: "true"})
		} else {
			meta.RemoveAnnotations(mg, meta.AnnotationKeyReconciliationPaused)
		}
	})
}

// rrQuiet waits until no OpenStack request was sent for 1.5 s, so that a
// reconcile in flight does not count towards what follows.
func rrQuiet(t *testing.T, e *openStackEnv) {
	t.Helper()
	eventually(t, 15*time.Second, "no OpenStack requests in flight", func() error {
		n := e.Requests.Load()
		time.Sleep(1500 * time.Millisecond)
		if m := e.Requests.Load(); m != n {
			return fmt.Errorf("%d requests in 1.5 s", m-n)
		}
		return nil
	})
}
