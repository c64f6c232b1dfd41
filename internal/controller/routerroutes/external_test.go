package routerroutes

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/routers"
	th "github.com/gophercloud/gophercloud/v2/testhelper"
	fakeclient "github.com/gophercloud/gophercloud/v2/testhelper/client"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/ipsecgw/provider-ipsec/apis/cluster/networking/v1alpha1"
)

// routerID is the fake router's ID.
const routerID = "8604a0de-7f6b-409a-a47c-a1cc7bc77b2e"

// A failure is an error response the fake Neutron gives.
type failure struct {
	code int
	typ  string
	msg  string
}

// fakeNeutron is one router in a gophercloud testhelper server that
// answers GET /v2.0/routers/{id} and PUT .../add_extraroutes and
// .../remove_extraroutes as Neutron does, and records each request.
type fakeNeutron struct {
	t      *testing.T
	mu     sync.Mutex
	routes []routers.Route
	rev    int
	// gone makes the router 404 (RouterNotFound).
	gone bool
	// fail answers "GET", "add" or "remove" with an error.
	fail map[string]failure
	// calls are "GET", "add 10.30.0.0/24 via 10.20.0.50, …", "remove …".
	calls []string
}

// start serves f and returns a Neutron client of it; the server stops when
// the test ends.
func (f *fakeNeutron) start(t *testing.T) *gophercloud.ServiceClient {
	f.t = t
	s := th.SetupHTTP()
	t.Cleanup(s.Teardown)
	s.Mux.HandleFunc("/v2.0/routers/", f.serve)
	sc := fakeclient.ServiceClient(s)
	sc.ResourceBase = sc.Endpoint + "v2.0/"
	return sc
}

func (f *fakeNeutron) serve(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	parts := strings.Split(strings.TrimPrefix(r.URL.Path, "/v2.0/routers/"), "/")
	op := "GET"
	if len(parts) == 2 {
		op = strings.TrimSuffix(parts[1], "_extraroutes")
	}
	var body struct {
		Router struct {
			Routes []routers.Route `json:"routes"`
		} `json:"router"`
	}
	if r.Method == http.MethodPut {
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
			f.t.Errorf("%s: bad body: %v", r.URL.Path, err)
		}
		f.calls = append(f.calls, op+" "+describe(body.Router.Routes))
	} else {
		f.calls = append(f.calls, op)
	}
	w.Header().Set("Content-Type", "application/json")
	fl, failing := f.fail[op]
	switch {
	case parts[0] != routerID || f.gone:
		fl, failing = failure{http.StatusNotFound, "RouterNotFound", "Router " + parts[0] + " could not be found"}, true
	case op == "GET" && r.Method != http.MethodGet, op != "GET" && r.Method != http.MethodPut:
		f.t.Errorf("%s %s: unexpected method", r.Method, r.URL.Path)
	}
	if failing {
		w.WriteHeader(fl.code)
		fmt.Fprintf(w, `{"NeutronError": {"type": %q, "message": %q, "detail": ""}}`, fl.typ, fl.msg)
		return
	}
	switch op {
	case "add":
		for _, n := range body.Router.Routes {
			if !contains(f.routes, n) {
				f.routes = append(f.routes, n)
			}
		}
		f.rev++
	case "remove":
		var kept []routers.Route
		for _, o := range f.routes {
			if !contains(body.Router.Routes, o) {
				kept = append(kept, o)
			}
		}
		f.routes = kept
		f.rev++
	}
	out := map[string]any{"router": map[string]any{"id": routerID, "name": "tenant-a-router", "routes": f.routes, "revision_number": f.rev}}
	if err := json.NewEncoder(w).Encode(out); err != nil {
		f.t.Error(err)
	}
}

func contains(rs []routers.Route, r routers.Route) bool {
	for _, x := range rs {
		if key(x) == key(r) {
			return true
		}
	}
	return false
}

const otherRouter = "0b4c1f1e-2a43-4f0e-9d49-6c1a1f0e5c11"

// Routes of the tests: ours via the gateway port, and a foreign one
// another tool set on the same router.
var (
	rA       = routers.Route{DestinationCIDR: "10.30.0.0/24", NextHop: "10.20.0.50"}
	rB       = routers.Route{DestinationCIDR: "10.31.0.0/24", NextHop: "10.20.0.50"}
	rC       = routers.Route{DestinationCIDR: "10.32.0.0/24", NextHop: "10.20.0.51"}
	foreign  = routers.Route{DestinationCIDR: "172.16.0.0/16", NextHop: "10.20.0.9"}
	foreignA = routers.Route{DestinationCIDR: "10.30.0.0/24", NextHop: "10.20.0.9"}
)

type mod func(*v1alpha1.RouterRoutes)

// rr is a RouterRoutes for router routerID with routes 10.30.0.0/24 and
// 10.31.0.0/24 via the default nexthop 10.20.0.50, created (external name
// set) unless a mod says otherwise.
func rr(mods ...mod) *v1alpha1.RouterRoutes {
	mg := &v1alpha1.RouterRoutes{
		ObjectMeta: metav1.ObjectMeta{Name: "vpn-routes", UID: "c0ffee"},
		Spec: v1alpha1.RouterRoutesSpec{ForProvider: v1alpha1.RouterRoutesParameters{
			RouterID: routerID,
			Routes:   []v1alpha1.Route{{Destination: "10.30.0.0/24"}, {Destination: "10.31.0.0/24"}},
			Nexthop:  ptr.To("10.20.0.50"),
		}},
	}
	meta.SetExternalName(mg, routerID)
	for _, m := range mods {
		m(mg)
	}
	return mg
}

func withExternalName(n string) mod {
	return func(mg *v1alpha1.RouterRoutes) { meta.SetExternalName(mg, n) }
}

func withOwned(rs ...routers.Route) mod {
	return func(mg *v1alpha1.RouterRoutes) { mg.Status.AtProvider.Routes = observed(rs) }
}

func withStatus(rev int, rs ...routers.Route) mod {
	return func(mg *v1alpha1.RouterRoutes) {
		mg.Status.AtProvider = v1alpha1.RouterRoutesObservation{Routes: observed(rs), RevisionNumber: rev}
	}
}

func withCondition(c xpv2.Condition) mod {
	return func(mg *v1alpha1.RouterRoutes) { mg.SetConditions(c) }
}

func withRoutes(rs ...v1alpha1.Route) mod {
	return func(mg *v1alpha1.RouterRoutes) { mg.Spec.ForProvider.Routes = rs }
}

func deleting(mg *v1alpha1.RouterRoutes) {
	now := metav1.NewTime(time.Unix(1, 0))
	mg.SetDeletionTimestamp(&now)
}

// errText is err's text, "" for nil: errors are compared by what a user
// reads.
func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// ignoreTimes ignores conditions' transition times.
var ignoreTimes = cmpopts.IgnoreFields(xpv2.Condition{}, "LastTransitionTime")

func TestObserve(t *testing.T) {
	type args struct {
		mg     *v1alpha1.RouterRoutes
		router []routers.Route
		gone   bool
		fail   map[string]failure
	}
	type want struct {
		o     managed.ExternalObservation
		err   string
		mg    *v1alpha1.RouterRoutes
		calls []string
	}
	cases := map[string]struct {
		reason string
		args   args
		want   want
	}{
		"NotCreated": {
			reason: "Without an external name nothing was created yet, and Neutron is not asked.",
			args:   args{mg: rr(withExternalName(""))},
			want:   want{mg: rr(withExternalName(""))},
		},
		"InitializerPlaceholder": {
			reason: "The default initializer's placeholder (metadata.name) means not created either.",
			args:   args{mg: rr(withExternalName("vpn-routes"))},
			want:   want{mg: rr(withExternalName("vpn-routes"))},
		},
		"RouterGone": {
			reason: "A router that is gone (404) means the resource does not exist, and its routes with it.",
			args:   args{mg: rr(withOwned(rA, rB)), gone: true},
			want:   want{mg: rr(), calls: []string{"GET"}},
		},
		"GetFails": {
			reason: "A failed GET is an error with Neutron's type and message and the router's ID.",
			args:   args{mg: rr(), fail: map[string]failure{"GET": {http.StatusForbidden, "PolicyNotAuthorized", "rule:get_router is disallowed by policy"}}},
			want: want{
				mg:    rr(),
				err:   "cannot get Neutron router " + routerID + ": Neutron 403 PolicyNotAuthorized: rule:get_router is disallowed by policy",
				calls: []string{"GET"},
			},
		},
		"RouterChanged": {
			reason: "Routes are not moved between routers: a changed routerId is an error naming both.",
			args:   args{mg: rr(withExternalName(otherRouter))},
			want: want{
				mg:  rr(withExternalName(otherRouter)),
				err: "cannot move routes between routers: spec.forProvider.routerId changed from " + otherRouter + " to " + routerID + "; set it back, or delete this resource (which removes its routes from " + otherRouter + ") and create a new one",
			},
		},
		"NoNexthop": {
			reason: "A route without any nexthop (unresolved reference) is an error naming the route.",
			args:   args{mg: rr(func(mg *v1alpha1.RouterRoutes) { mg.Spec.ForProvider.Nexthop = nil })},
			want: want{
				mg:  rr(func(mg *v1alpha1.RouterRoutes) { mg.Spec.ForProvider.Nexthop = nil }),
				err: "cannot route spec.forProvider.routes[0] (10.30.0.0/24): it has no nexthop and spec.forProvider.nexthop is not set (is the nexthopPortRef resolved?)",
			},
		},
		"UpToDate": {
			reason: "Every desired route present: up to date with one GET, Available, status lists ours and not the foreign route.",
			args:   args{mg: rr(), router: []routers.Route{foreign, rB, rA}},
			want: want{
				o:     managed.ExternalObservation{ResourceExists: true, ResourceUpToDate: true},
				mg:    rr(withStatus(0, rA, rB), withCondition(xpv2.Available())),
				calls: []string{"GET"},
			},
		},
		"Missing": {
			reason: "A desired route missing (never added, or deleted by hand) is not up to date and not Ready.",
			args:   args{mg: rr(withOwned(rA, rB)), router: []routers.Route{foreign, rA}},
			want: want{
				o:     managed.ExternalObservation{ResourceExists: true, Diff: "missing: 10.31.0.0/24 via 10.20.0.50"},
				mg:    rr(withStatus(0, rA), withCondition(xpv2.Unavailable().WithMessage("routes missing on router "+routerID+": 10.31.0.0/24 via 10.20.0.50"))),
				calls: []string{"GET"},
			},
		},
		"DroppedFromSpec": {
			reason: "A route owned at the last observation and dropped from the spec stays ours until removed.",
			args:   args{mg: rr(withOwned(rA, rB, rC)), router: []routers.Route{rA, rB, rC, foreign}},
			want: want{
				o:     managed.ExternalObservation{ResourceExists: true, Diff: "no longer in spec: 10.32.0.0/24 via 10.20.0.51"},
				mg:    rr(withStatus(0, rA, rB, rC), withCondition(xpv2.Available())),
				calls: []string{"GET"},
			},
		},
		"DroppedAndGone": {
			reason: "A route dropped from the spec that is no longer on the router leaves the status.",
			args:   args{mg: rr(withOwned(rA, rB, rC)), router: []routers.Route{rA, rB}},
			want: want{
				o:     managed.ExternalObservation{ResourceExists: true, ResourceUpToDate: true},
				mg:    rr(withStatus(0, rA, rB), withCondition(xpv2.Available())),
				calls: []string{"GET"},
			},
		},
		"ForeignSameDestination": {
			reason: "Another tool's route to our destination via another nexthop is not ours.",
			args:   args{mg: rr(), router: []routers.Route{foreignA, rB}},
			want: want{
				o:     managed.ExternalObservation{ResourceExists: true, Diff: "missing: 10.30.0.0/24 via 10.20.0.50"},
				mg:    rr(withStatus(0, rB), withCondition(xpv2.Unavailable().WithMessage("routes missing on router "+routerID+": 10.30.0.0/24 via 10.20.0.50"))),
				calls: []string{"GET"},
			},
		},
		"OwnNexthopAndCanonicalForm": {
			reason: "A route's own nexthop beats the default, and IPv6 spellings are compared in canonical form.",
			args: args{
				mg:     rr(withRoutes(v1alpha1.Route{Destination: "2001:DB8:1::/64", Nexthop: ptr.To[v1alpha1.IPAddress]("2001:DB8::50")})),
				router: []routers.Route{{DestinationCIDR: "2001:db8:1::/64", NextHop: "2001:db8::50"}},
			},
			want: want{
				o: managed.ExternalObservation{ResourceExists: true, ResourceUpToDate: true},
				mg: rr(withRoutes(v1alpha1.Route{Destination: "2001:DB8:1::/64", Nexthop: ptr.To[v1alpha1.IPAddress]("2001:DB8::50")}),
					withStatus(0, routers.Route{DestinationCIDR: "2001:db8:1::/64", NextHop: "2001:db8::50"}), withCondition(xpv2.Available())),
				calls: []string{"GET"},
			},
		},
		"DeletingWithRoutes": {
			reason: "While deleting, the resource exists as long as one of its routes is on the router.",
			args:   args{mg: rr(deleting, withOwned(rA, rB)), router: []routers.Route{rB, foreign}},
			want: want{
				o:     managed.ExternalObservation{ResourceExists: true, ResourceUpToDate: true},
				mg:    rr(deleting, withStatus(0, rB)),
				calls: []string{"GET"},
			},
		},
		"DeletingDone": {
			reason: "While deleting, a router with none of its routes left means the resource is gone, though the router exists.",
			args:   args{mg: rr(deleting, withOwned(rA, rB)), router: []routers.Route{foreign, foreignA}},
			want: want{
				o:     managed.ExternalObservation{ResourceUpToDate: true},
				mg:    rr(deleting),
				calls: []string{"GET"},
			},
		},
		"DeletingUnresolved": {
			reason: "While deleting, a nexthop that cannot be resolved does not block removing the routes owned.",
			args:   args{mg: rr(deleting, withOwned(rA), func(mg *v1alpha1.RouterRoutes) { mg.Spec.ForProvider.Nexthop = nil }), router: []routers.Route{rA}},
			want: want{
				o:     managed.ExternalObservation{ResourceExists: true, ResourceUpToDate: true},
				mg:    rr(deleting, withStatus(0, rA), func(mg *v1alpha1.RouterRoutes) { mg.Spec.ForProvider.Nexthop = nil }),
				calls: []string{"GET"},
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			f := &fakeNeutron{routes: tc.args.router, gone: tc.args.gone, fail: tc.args.fail}
			e := &external{neutron: f.start(t)}
			got, err := e.Observe(context.Background(), tc.args.mg)
			if diff := cmp.Diff(tc.want.err, errText(err)); diff != "" {
				t.Errorf("%s\nObserve(...): -want error, +got error:\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(tc.want.o, got); diff != "" {
				t.Errorf("%s\nObserve(...): -want, +got:\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(tc.want.mg, tc.args.mg, ignoreTimes); diff != "" {
				t.Errorf("%s\nObserve(...): -want managed resource, +got:\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(tc.want.calls, f.calls); diff != "" {
				t.Errorf("%s\nObserve(...): -want Neutron requests, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestCreate(t *testing.T) {
	type args struct {
		mg     *v1alpha1.RouterRoutes
		router []routers.Route
		gone   bool
		fail   map[string]failure
	}
	type want struct {
		err    string
		mg     *v1alpha1.RouterRoutes
		router []routers.Route
		calls  []string
	}
	cases := map[string]struct {
		reason string
		args   args
		want   want
	}{
		"AddsAll": {
			reason: "Create names the router as external name and adds every desired route in one add_extraroutes, leaving other routes alone.",
			args:   args{mg: rr(withExternalName("vpn-routes")), router: []routers.Route{foreign}},
			want: want{
				mg:     rr(withStatus(1, rA, rB)),
				router: []routers.Route{foreign, rA, rB},
				calls:  []string{"add 10.30.0.0/24 via 10.20.0.50, 10.31.0.0/24 via 10.20.0.50"},
			},
		},
		"AlreadyThere": {
			reason: "Create after a crash that lost the external name adds again; what is there already stays once.",
			args:   args{mg: rr(withExternalName("")), router: []routers.Route{rA}},
			want: want{
				mg:     rr(withStatus(1, rA, rB)),
				router: []routers.Route{rA, rB},
				calls:  []string{"add 10.30.0.0/24 via 10.20.0.50, 10.31.0.0/24 via 10.20.0.50"},
			},
		},
		"RouterMissing": {
			reason: "A router that does not exist is an error with Neutron's type, naming the routes and the router.",
			args:   args{mg: rr(withExternalName("")), gone: true},
			want: want{
				mg:    rr(),
				err:   "cannot add extra routes 10.30.0.0/24 via 10.20.0.50, 10.31.0.0/24 via 10.20.0.50 to Neutron router " + routerID + ": Neutron 404 RouterNotFound: Router " + routerID + " could not be found",
				calls: []string{"add 10.30.0.0/24 via 10.20.0.50, 10.31.0.0/24 via 10.20.0.50"},
			},
		},
		"InvalidNexthop": {
			reason: "Neutron refusing a nexthop outside the router's subnets is an error with its message.",
			args: args{mg: rr(withExternalName("")), fail: map[string]failure{"add": {http.StatusBadRequest, "InvalidRoutes",
				"Invalid format for routes: [{'destination': '10.30.0.0/24', 'nexthop': '10.20.0.50'}], the nexthop is not connected with router"}}},
			want: want{
				mg: rr(),
				err: "cannot add extra routes 10.30.0.0/24 via 10.20.0.50, 10.31.0.0/24 via 10.20.0.50 to Neutron router " + routerID +
					": Neutron 400 InvalidRoutes: Invalid format for routes: [{'destination': '10.30.0.0/24', 'nexthop': '10.20.0.50'}], the nexthop is not connected with router",
				calls: []string{"add 10.30.0.0/24 via 10.20.0.50, 10.31.0.0/24 via 10.20.0.50"},
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			f := &fakeNeutron{routes: tc.args.router, gone: tc.args.gone, fail: tc.args.fail}
			e := &external{neutron: f.start(t)}
			got, err := e.Create(context.Background(), tc.args.mg)
			if diff := cmp.Diff(tc.want.err, errText(err)); diff != "" {
				t.Errorf("%s\nCreate(...): -want error, +got error:\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(managed.ExternalCreation{}, got); diff != "" {
				t.Errorf("%s\nCreate(...): -want, +got:\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(tc.want.mg, tc.args.mg, ignoreTimes); diff != "" {
				t.Errorf("%s\nCreate(...): -want managed resource, +got:\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(tc.want.router, f.routes); diff != "" {
				t.Errorf("%s\nCreate(...): -want routes on the router, +got:\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(tc.want.calls, f.calls); diff != "" {
				t.Errorf("%s\nCreate(...): -want Neutron requests, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestUpdate(t *testing.T) {
	type args struct {
		mg     *v1alpha1.RouterRoutes
		router []routers.Route
		fail   map[string]failure
	}
	type want struct {
		err    string
		mg     *v1alpha1.RouterRoutes
		router []routers.Route
		calls  []string
	}
	cases := map[string]struct {
		reason string
		args   args
		want   want
	}{
		"AddsMissing": {
			reason: "Update adds only the missing routes (a route deleted by hand comes back).",
			args:   args{mg: rr(withOwned(rA)), router: []routers.Route{foreign, rA}},
			want: want{
				mg:     rr(withStatus(1, rA, rB)),
				router: []routers.Route{foreign, rA, rB},
				calls:  []string{"add 10.31.0.0/24 via 10.20.0.50"},
			},
		},
		"RemovesDropped": {
			reason: "Update removes only the route dropped from the spec, not the foreign one.",
			args:   args{mg: rr(withOwned(rA, rB, rC)), router: []routers.Route{rA, foreign, rB, rC}},
			want: want{
				mg:     rr(withStatus(1, rA, rB)),
				router: []routers.Route{rA, foreign, rB},
				calls:  []string{"remove 10.32.0.0/24 via 10.20.0.51"},
			},
		},
		"NexthopChanged": {
			reason: "A route given a new nexthop is added under the new one before the old one is removed.",
			args: args{
				mg:     rr(withOwned(rA, rB), func(mg *v1alpha1.RouterRoutes) { mg.Spec.ForProvider.Nexthop = ptr.To("10.20.0.51") }),
				router: []routers.Route{rA, rB, foreignA},
			},
			want: want{
				mg: rr(func(mg *v1alpha1.RouterRoutes) { mg.Spec.ForProvider.Nexthop = ptr.To("10.20.0.51") },
					withStatus(2, routers.Route{DestinationCIDR: "10.30.0.0/24", NextHop: "10.20.0.51"}, routers.Route{DestinationCIDR: "10.31.0.0/24", NextHop: "10.20.0.51"})),
				router: []routers.Route{foreignA, {DestinationCIDR: "10.30.0.0/24", NextHop: "10.20.0.51"}, {DestinationCIDR: "10.31.0.0/24", NextHop: "10.20.0.51"}},
				calls: []string{
					"add 10.30.0.0/24 via 10.20.0.51, 10.31.0.0/24 via 10.20.0.51",
					"remove 10.30.0.0/24 via 10.20.0.50, 10.31.0.0/24 via 10.20.0.50",
				},
			},
		},
		"AddFails": {
			reason: "A failed add is an error with Neutron's type, and nothing is removed.",
			args: args{mg: rr(withOwned(rC)), router: []routers.Route{rC},
				fail: map[string]failure{"add": {http.StatusConflict, "RouterInUse", "Router is busy"}}},
			want: want{
				mg:     rr(withOwned(rC)),
				router: []routers.Route{rC},
				err:    "cannot add extra routes 10.30.0.0/24 via 10.20.0.50, 10.31.0.0/24 via 10.20.0.50 to Neutron router " + routerID + ": Neutron 409 RouterInUse: Router is busy",
				calls:  []string{"add 10.30.0.0/24 via 10.20.0.50, 10.31.0.0/24 via 10.20.0.50"},
			},
		},
		"RemoveFails": {
			reason: "A failed remove is an error naming the routes; the routes added stay recorded.",
			args: args{mg: rr(withOwned(rA, rC)), router: []routers.Route{rA, rC},
				fail: map[string]failure{"remove": {http.StatusInternalServerError, "HTTPInternalServerError", "Request Failed: internal server error"}}},
			want: want{
				mg:     rr(withStatus(1, rA, rB, rC)),
				router: []routers.Route{rA, rC, rB},
				err:    "cannot remove extra routes 10.32.0.0/24 via 10.20.0.51 from Neutron router " + routerID + ": Neutron 500 HTTPInternalServerError: Request Failed: internal server error",
				calls:  []string{"add 10.31.0.0/24 via 10.20.0.50", "remove 10.32.0.0/24 via 10.20.0.51"},
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			f := &fakeNeutron{routes: tc.args.router, fail: tc.args.fail}
			e := &external{neutron: f.start(t)}
			got, err := e.Update(context.Background(), tc.args.mg)
			if diff := cmp.Diff(tc.want.err, errText(err)); diff != "" {
				t.Errorf("%s\nUpdate(...): -want error, +got error:\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(managed.ExternalUpdate{}, got); diff != "" {
				t.Errorf("%s\nUpdate(...): -want, +got:\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(tc.want.mg, tc.args.mg, ignoreTimes); diff != "" {
				t.Errorf("%s\nUpdate(...): -want managed resource, +got:\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(tc.want.router, f.routes); diff != "" {
				t.Errorf("%s\nUpdate(...): -want routes on the router, +got:\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(tc.want.calls, f.calls); diff != "" {
				t.Errorf("%s\nUpdate(...): -want Neutron requests, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestDelete(t *testing.T) {
	type args struct {
		mg     *v1alpha1.RouterRoutes
		router []routers.Route
		gone   bool
		fail   map[string]failure
	}
	type want struct {
		err    string
		mg     *v1alpha1.RouterRoutes
		router []routers.Route
		calls  []string
	}
	cases := map[string]struct {
		reason string
		args   args
		want   want
	}{
		"RemovesOurs": {
			reason: "Delete removes exactly our routes; a foreign route, even to our destination, stays.",
			args:   args{mg: rr(deleting, withOwned(rA, rB)), router: []routers.Route{foreignA, rA, foreign, rB}},
			want: want{
				mg:     rr(deleting, withStatus(1)),
				router: []routers.Route{foreignA, foreign},
				calls:  []string{"remove 10.30.0.0/24 via 10.20.0.50, 10.31.0.0/24 via 10.20.0.50"},
			},
		},
		"NothingOwned": {
			reason: "With no routes of ours on the router, Delete asks Neutron nothing.",
			args:   args{mg: rr(deleting), router: []routers.Route{foreign}},
			want:   want{mg: rr(deleting), router: []routers.Route{foreign}},
		},
		"RouterGone": {
			reason: "A router deleted meanwhile has no routes left to remove: not an error.",
			args:   args{mg: rr(deleting, withOwned(rA)), gone: true},
			want:   want{mg: rr(deleting), calls: []string{"remove 10.30.0.0/24 via 10.20.0.50"}},
		},
		"RemoveFails": {
			reason: "A failed remove is an error with Neutron's type, naming routes and router.",
			args: args{mg: rr(deleting, withOwned(rA)), router: []routers.Route{rA},
				fail: map[string]failure{"remove": {http.StatusForbidden, "PolicyNotAuthorized", "rule:remove_extraroutes is disallowed by policy"}}},
			want: want{
				mg:     rr(deleting, withOwned(rA)),
				router: []routers.Route{rA},
				err:    "cannot remove extra routes 10.30.0.0/24 via 10.20.0.50 from Neutron router " + routerID + ": Neutron 403 PolicyNotAuthorized: rule:remove_extraroutes is disallowed by policy",
				calls:  []string{"remove 10.30.0.0/24 via 10.20.0.50"},
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			f := &fakeNeutron{routes: tc.args.router, gone: tc.args.gone, fail: tc.args.fail}
			e := &external{neutron: f.start(t)}
			got, err := e.Delete(context.Background(), tc.args.mg)
			if diff := cmp.Diff(tc.want.err, errText(err)); diff != "" {
				t.Errorf("%s\nDelete(...): -want error, +got error:\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(managed.ExternalDelete{}, got); diff != "" {
				t.Errorf("%s\nDelete(...): -want, +got:\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(tc.want.mg, tc.args.mg, ignoreTimes); diff != "" {
				t.Errorf("%s\nDelete(...): -want managed resource, +got:\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(tc.want.router, f.routes, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("%s\nDelete(...): -want routes on the router, +got:\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(tc.want.calls, f.calls); diff != "" {
				t.Errorf("%s\nDelete(...): -want Neutron requests, +got:\n%s", tc.reason, diff)
			}
		})
	}
}
