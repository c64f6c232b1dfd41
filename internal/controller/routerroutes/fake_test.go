package routerroutes

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/routers"
	th "github.com/gophercloud/gophercloud/v2/testhelper"
	fakeclient "github.com/gophercloud/gophercloud/v2/testhelper/client"
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
