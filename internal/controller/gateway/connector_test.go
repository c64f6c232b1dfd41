package gateway

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"
	"github.com/crossplane/crossplane-runtime/v2/pkg/test"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/ipsecgw/provider-ipsec/apis"
	"github.com/ipsecgw/provider-ipsec/apis/cluster/gateway/v1alpha1"
	pcv1alpha1 "github.com/ipsecgw/provider-ipsec/apis/cluster/v1alpha1"
	nsv1alpha1 "github.com/ipsecgw/provider-ipsec/apis/namespaced/gateway/v1alpha1"
	nspcv1alpha1 "github.com/ipsecgw/provider-ipsec/apis/namespaced/v1alpha1"
	"github.com/ipsecgw/provider-ipsec/internal/clients/cluster"
)

// providerCluster is a fake of the provider's own cluster holding objs,
// which knows the provider's API types.
func providerCluster(t *testing.T, objs ...client.Object) client.Client {
	t.Helper()
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	if err := apis.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	return fake.NewClientBuilder().WithScheme(s).WithObjects(objs...).Build()
}

// ownConnector is the connector of Gateways whose ProviderConfigs kube
// holds, tracking usage with track's error.
func ownConnector(kube client.Client, track error) *connector {
	return &connector{config: kube, secrets: kube, objects: kube, clusters: &cluster.Targets[client.Client]{Own: kube}, targets: &targets{}, details: &detailHold{},
		usage: resource.LegacyTrackerFn(func(context.Context, resource.LegacyManaged) error { return track })} //nolint:staticcheck // SA1019: the cluster-scoped Gateway is a legacy managed resource
}

func TestConnect(t *testing.T) {
	withRef := func(name string) *v1alpha1.Gateway {
		gw := testGateway()
		gw.Spec.ProviderConfigReference = &xpv2.Reference{Name: name}
		return gw
	}
	cases := map[string]struct {
		reason string
		gw     *v1alpha1.Gateway
		track  error
		err    error
	}{
		"InjectedIdentity": {
			reason: "A ProviderConfig without a kubeconfig targets the provider's own cluster.",
			gw:     withRef("default"),
		},
		"TrackFails": {
			reason: "A usage that cannot be recorded is an error.",
			gw:     withRef("default"), track: errBoom,
			err: fmt.Errorf(errTrackUsage+": %w", errBoom),
		},
		"NoRef": {
			reason: "A Gateway naming no ProviderConfig says which field to set.",
			gw:     testGateway(),
			err:    fmt.Errorf("spec.providerConfigRef is not set"),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			kube := providerCluster(t, &pcv1alpha1.ProviderConfig{ObjectMeta: metav1.ObjectMeta{Name: "default"}})
			e, err := ownConnector(kube, tc.track).Connect(context.Background(), tc.gw)
			if diff := cmp.Diff(tc.err, err, test.EquateErrors()); diff != "" {
				t.Fatalf("%s\nConnect(): -want error, +got error:\n%s", tc.reason, diff)
			}
			if err == nil && e.(*external).target != kube {
				t.Errorf("%s\nConnect(): the target is not the provider's own cluster", tc.reason)
			}
		})
	}
}

// TestConnectNamespaced: a namespaced Gateway uses its own namespace's
// ProviderConfig, and never takes the objects of a cluster-scoped Gateway
// of the same name in its namespace.
func TestConnectNamespaced(t *testing.T) {
	gw := &nsv1alpha1.Gateway{ObjectMeta: metav1.ObjectMeta{Namespace: testNS, Name: "vpn"}}
	gw.Spec.ProviderConfigReference = &xpv2.ProviderConfigReference{Kind: nspcv1alpha1.ProviderConfigKind, Name: "default"}
	pc := func(ns string) *nspcv1alpha1.ProviderConfig {
		return &nspcv1alpha1.ProviderConfig{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "default"}}
	}
	clusterGW := func(ns string) *v1alpha1.Gateway {
		g := testGateway()
		g.Spec.ForProvider.Namespace = ns
		return g
	}
	cases := map[string]struct {
		reason string
		objs   []client.Object
		// err is what the error says, "" for none.
		err string
	}{
		"OwnNamespace": {
			reason: "The ProviderConfig of the Gateway's namespace connects it.",
			objs:   []client.Object{pc(testNS)},
		},
		"AnotherNamespaceOnly": {
			reason: "A ProviderConfig of that name in another namespace is not the Gateway's.",
			objs:   []client.Object{pc("tenant-b")},
			err:    "cannot get ProviderConfig tenant-a/default",
		},
		"ClusterGatewayElsewhere": {
			reason: "A cluster-scoped Gateway of the same name whose objects are in another namespace is no conflict.",
			objs:   []client.Object{pc(testNS), clusterGW("tenant-b")},
		},
		"Taken": {
			reason: "A cluster-scoped Gateway of the same name running its objects in the Gateway's namespace is refused: the two would take each other's objects.",
			objs:   []client.Object{pc(testNS), clusterGW(testNS)},
			err:    "give this Gateway another name",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			kube := providerCluster(t, tc.objs...)
			c := &nsConnector{connector: ownConnector(kube, nil), gateways: kube,
				usage: resource.ModernTrackerFn(func(context.Context, resource.ModernManaged) error { return nil })}
			_, err := c.Connect(context.Background(), gw.DeepCopy())
			if got := fmt.Sprint(err); (err != nil) != (tc.err != "") || !strings.Contains(got, tc.err) {
				t.Errorf("%s\nConnect(): error %v, want one saying %q", tc.reason, err, tc.err)
			}
		})
	}
}
