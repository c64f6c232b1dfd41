package routerroutes

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/routers"
	"k8s.io/utils/ptr"

	"github.com/ipsecgw/provider-ipsec/apis/cluster/networking/v1alpha1"
)

func TestDesiredRoutes(t *testing.T) {
	type want struct {
		routes []routers.Route
		err    string
	}
	cases := map[string]struct {
		reason string
		p      v1alpha1.RouterRoutesParameters
		want   want
	}{
		"DefaultAndOwnNexthop": {
			reason: "A route without nexthop takes spec.forProvider.nexthop; one with its own keeps it.",
			p: v1alpha1.RouterRoutesParameters{Nexthop: ptr.To("10.20.0.50"), Routes: []v1alpha1.Route{
				{Destination: "10.30.0.0/24"}, {Destination: "10.32.0.0/24", Nexthop: ptr.To[v1alpha1.IPAddress]("10.20.0.51")}}},
			want: want{routes: []routers.Route{rA, rC}},
		},
		"Duplicates": {
			reason: "The same route twice (once explicitly via the default nexthop) is asked for once.",
			p: v1alpha1.RouterRoutesParameters{Nexthop: ptr.To("10.20.0.50"), Routes: []v1alpha1.Route{
				{Destination: "10.30.0.0/24"}, {Destination: "10.30.0.0/24", Nexthop: ptr.To[v1alpha1.IPAddress]("10.20.0.50")}}},
			want: want{routes: []routers.Route{rA}},
		},
		"EmptyDefault": {
			reason: "An empty spec.forProvider.nexthop is no nexthop.",
			p:      v1alpha1.RouterRoutesParameters{Nexthop: ptr.To(""), Routes: []v1alpha1.Route{{Destination: "10.30.0.0/24", Nexthop: ptr.To[v1alpha1.IPAddress]("10.20.0.50")}, {Destination: "10.31.0.0/24"}}},
			want:   want{err: "cannot route spec.forProvider.routes[1] (10.31.0.0/24): it has no nexthop and spec.forProvider.nexthop is not set (is the nexthopPortRef resolved?)"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := desiredRoutes(tc.p)
			if diff := cmp.Diff(tc.want.err, errText(err)); diff != "" {
				t.Errorf("%s\ndesiredRoutes(...): -want error, +got error:\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(tc.want.routes, got); err == nil && diff != "" {
				t.Errorf("%s\ndesiredRoutes(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestClassify(t *testing.T) {
	type want struct{ ours, missing, stale []routers.Route }
	cases := map[string]struct {
		reason                  string
		desired, owned, present []routers.Route
		want                    want
	}{
		"Foreign": {
			reason:  "Present routes neither desired nor owned are someone else's, also to our destination.",
			desired: []routers.Route{rA}, present: []routers.Route{foreign, foreignA},
			want: want{missing: []routers.Route{rA}},
		},
		"Mixed": {
			reason:  "Ours are desired or owned and present, sorted; stale are ours no longer desired.",
			desired: []routers.Route{rB, rA}, owned: []routers.Route{rA, rC}, present: []routers.Route{rC, foreign, rA},
			want: want{ours: []routers.Route{rA, rC}, missing: []routers.Route{rB}, stale: []routers.Route{rC}},
		},
		"CanonicalForm": {
			reason:  "Routes match whatever way an IPv6 address is spelt, and ours keep Neutron's spelling.",
			desired: []routers.Route{{DestinationCIDR: "2001:DB8:0:1::/64", NextHop: "2001:0db8::50"}},
			present: []routers.Route{{DestinationCIDR: "2001:db8:0:1::/64", NextHop: "2001:db8::50"}},
			want:    want{ours: []routers.Route{{DestinationCIDR: "2001:db8:0:1::/64", NextHop: "2001:db8::50"}}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			ours, missing, stale := classify(tc.desired, tc.owned, tc.present)
			if diff := cmp.Diff(tc.want, want{ours, missing, stale}, cmp.AllowUnexported(want{})); diff != "" {
				t.Errorf("%s\nclassify(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}
