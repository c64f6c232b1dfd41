//go:build integration

package integration

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/controller"
	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/extraroutes"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/floatingips"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/routers"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	netv1alpha1 "github.com/ipsecgw/provider-ipsec/apis/cluster/networking/v1alpha1"
	"github.com/ipsecgw/provider-ipsec/internal/clients/openstack"
	"github.com/ipsecgw/provider-ipsec/internal/controller/floatingipbinding"
	"github.com/ipsecgw/provider-ipsec/internal/controller/mrsetup"
	"github.com/ipsecgw/provider-ipsec/internal/controller/network"
	"github.com/ipsecgw/provider-ipsec/internal/controller/port"
	"github.com/ipsecgw/provider-ipsec/internal/controller/routerroutes"
	"github.com/ipsecgw/provider-ipsec/internal/controller/securitygroup"
	"github.com/ipsecgw/provider-ipsec/test/neutronproxy"
)

// politeClients returns an OpenStack client cache whose Neutron requests
// pass tap after the Gate (the Gate sees what tap answers).
func politeClients() (*openstack.Clients, *neutronproxy.Tap) {
	tap := &neutronproxy.Tap{}
	c := openstack.NewClients()
	c.Transport = tap.Wrap
	return c, tap
}

// politeStack is a provider with the controllers of every OpenStack kind
// under a poll interval, whose Neutron requests pass a Tap after the Gate,
// and two managed resources of each kind but one RouterRoutes, Ready.
type politeStack struct {
	poll    time.Duration
	tap     *neutronproxy.Tap
	mrs     []client.Object
	perKind map[string]int
	// reqs records the provider's API-server requests.
	reqs *requestLog
	logs *syncBuffer
}

// startPolite starts the provider with clients (politeClients, whose tap
// it takes) and poll, creates the managed resources, named prefix-..., and
// waits until they are Ready. Everything is deleted when t ends.
func startPolite(t *testing.T, prefix string, clients *openstack.Clients, tap *neutronproxy.Tap, poll time.Duration) *politeStack {
	t.Helper()
	e := startOpenStack(t)
	sc := neutron(t, e)
	s := &politeStack{poll: poll, tap: tap, perKind: map[string]int{}, reqs: &requestLog{}}
	f := &fipTest{e: e, sc: sc}
	router, cidr := e.Fixtures.Router.ID, e.Fixtures.TenantSub.CIDR
	nexthop := rrHostIn(t, cidr, 70)
	t.Cleanup(func() {
		forgetMRs(s.mrs...)
		deletePorts(t, sc, s.mrs)
		deleteNetworks(t, sc, s.mrs)
		routes := []routers.Route{{DestinationCIDR: "10.50.0.0/24", NextHop: nexthop}}
		if _, err := extraroutes.Remove(context.Background(), sc, router, extraroutes.Opts{Routes: &routes}).Extract(); err != nil {
			t.Errorf("cleanup: remove_extraroutes: %v", err)
		}
	})
	counted := rest.CopyConfig(cfg)
	counted.WrapTransport = s.reqs.wrap
	s.logs = startProviderWith(t, func(mgr ctrl.Manager, o controller.Options) error {
		creds, err := mrsetup.WatchCredentials(mgr)
		if err != nil {
			return err
		}
		clients.Credentials = creds
		for _, k := range []mrsetup.Kind{securitygroup.Kind, network.Kind, port.Kind, floatingipbinding.Kind, routerroutes.Kind} {
			if err := k.Setup(mgr, o, mrsetup.Dependencies{OpenStack: clients}); err != nil {
				return err
			}
		}
		return nil
	}, poll, counted)
	t.Cleanup(func() {
		if t.Failed() {
			l := s.logs.String()
			t.Logf("provider log (last 8 KiB):\n%s", l[max(0, len(l)-8192):])
		}
	})

	add := func(kind string, mg client.Object) {
		s.mrs = append(s.mrs, mg)
		s.perKind[kind]++
	}
	for i := range 2 {
		add("SecurityGroup", gatewaySecurityGroup(fmt.Sprintf("%s-sg-%d", prefix, i), "openstack"))
		n := &netv1alpha1.Network{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-net-%d", prefix, i)}}
		n.Spec.ForProvider = netv1alpha1.NetworkParameters{Name: ptr.To(n.Name)}
		n.Spec.ProviderConfigReference = &xpv2.Reference{Name: "openstack"}
		add("Network", n)
		add("Port", portMR(fmt.Sprintf("%s-port-%d", prefix, i), netv1alpha1.PortParameters{NetworkID: ptr.To(e.Fixtures.TenantNet.ID)}))
		b := fipBinding(fmt.Sprintf("%s-fip-%d", prefix, i), f.port(t, fmt.Sprintf("%s-fip-port-%d", prefix, i)).ID,
			netv1alpha1.FloatingIPBindingParameters{FloatingNetworkID: ptr.To(netv1alpha1.UUID(e.Fixtures.ExtNet.ID))})
		add("FloatingIPBinding", b)
		f.releaseAfter(t, b, "")
	}
	rr := &netv1alpha1.RouterRoutes{ObjectMeta: metav1.ObjectMeta{Name: prefix + "-routes"}}
	rr.Spec.ProviderConfigReference = &xpv2.Reference{Name: "openstack"}
	rr.Spec.ForProvider = netv1alpha1.RouterRoutesParameters{RouterID: netv1alpha1.UUID(router),
		Routes: []netv1alpha1.Route{{Destination: "10.50.0.0/24"}}, Nexthop: ptr.To(nexthop)}
	add("RouterRoutes", rr)
	create(t, s.mrs...)
	t.Cleanup(func() {
		deleteMRs(t, 90*time.Second, s.mrs...)
	})
	s.allReady(t, "every managed resource is Ready", 120*time.Second)
	return s
}

// allReady waits until every managed resource is Ready and Synced.
func (s *politeStack) allReady(t *testing.T, what string, timeout time.Duration) {
	t.Helper()
	eventually(t, timeout, what, func() error {
		for _, mg := range s.mrs {
			if err := kube.Get(context.Background(), client.ObjectKeyFromObject(mg), mg); err != nil {
				return err
			}
			c := mg.(resource.Conditioned)
			r, sy := c.GetCondition(xpv2.TypeReady), c.GetCondition(xpv2.TypeSynced)
			if r.Status != corev1.ConditionTrue || sy.Status != corev1.ConditionTrue {
				return fmt.Errorf("%s: Ready %s, Synced %s %q", mg.GetName(), r.Status, sy.Status, sy.Message)
			}
		}
		return nil
	})
}

// notSynced returns the messages of the managed resources that are not
// Synced.
func (s *politeStack) notSynced(t *testing.T) []string {
	t.Helper()
	var msgs []string
	for _, mg := range s.mrs {
		if err := kube.Get(context.Background(), client.ObjectKeyFromObject(mg), mg); err != nil {
			t.Fatal(err)
		}
		if c := mg.(resource.Conditioned).GetCondition(xpv2.TypeSynced); c.Status == corev1.ConditionFalse {
			msgs = append(msgs, c.Message)
		}
	}
	return msgs
}

// settle waits a poll interval and 2 s, for the reconciles of what came
// before (a creation, a storm) to settle before a count at rest.
func (s *politeStack) settle() { time.Sleep(s.poll + 2*time.Second) }

// storm makes the tap answer every Neutron request as st says for d,
// calls last (when not nil) just before the storm ends, and returns the
// requests that reached the tap meanwhile, their rate a minute and when
// the storm ended.
func (s *politeStack) storm(t *testing.T, st neutronproxy.Storm, d time.Duration, last func()) ([]neutronproxy.Request, float64, time.Time) {
	t.Helper()
	if err := s.tap.SetStorm(st); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	time.Sleep(d)
	if last != nil {
		last()
	}
	if err := s.tap.SetStorm(neutronproxy.Storm{}); err != nil {
		t.Fatal(err)
	}
	end := time.Now()
	reqs := s.tap.Between(start, end)
	return reqs, float64(len(reqs)) / end.Sub(start).Minutes(), end
}

// TestOpenStackPolite: with a few managed resources of every OpenStack
// kind at rest under a 10 s poll, each sends at most one Neutron request
// per poll interval; while Neutron answers 429 with Retry-After the
// provider sends fewer requests than at rest and none before the time
// Neutron named, each MR saying until when; afterwards everything is Ready
// again.
func TestOpenStackPolite(t *testing.T) {
	const poll = 10 * time.Second
	clients, tap := politeClients()
	s := startPolite(t, "polite", clients, tap, poll)
	mrs, perKind, reqs := s.mrs, s.perKind, s.reqs

	// (a) At rest: after a poll interval for the creation's reconciles to
	// settle, count over 6 intervals.
	const intervals = 6
	s.settle()
	start, apiStart := time.Now(), reqs.mark()
	time.Sleep(intervals * poll)
	atRest := tap.Since(start)
	restRate := float64(len(atRest)) / (intervals * poll).Minutes()
	// The credentials come from informers: at rest neither the
	// ProviderConfig nor its Secret is read from the API server.
	if got := append(reqs.since(apiStart, "GET", "/secrets"), reqs.since(apiStart, "GET", "/providerconfigs")...); len(got) > 0 {
		t.Errorf("at rest the provider read credentials from the API server %d times: %v", len(got), got)
	}
	apiReqs := reqs.since(apiStart)
	byResource := map[string]int{}
	for _, r := range apiReqs {
		byResource[apiResource(r)]++
	}
	t.Logf("at rest: %d API-server requests (watches left out) from %d MRs in %d poll intervals: %.2f per MR per poll; by request: %v",
		len(apiReqs), len(mrs), intervals, float64(len(apiReqs))/float64(len(mrs)*intervals), byResource)
	got := map[string]int{}
	for _, r := range atRest {
		got[r.Kind]++
	}
	var figures []string
	for kind, n := range perKind {
		perPoll := float64(got[kind]) / float64(n*intervals)
		figures = append(figures, fmt.Sprintf("%s %.2f (%d requests, %d MRs)", kind, perPoll, got[kind], n))
		if perPoll > 1.0 {
			t.Errorf("at rest %d %s MRs sent %d Neutron requests in %d poll intervals: %.2f per MR per poll, want at most 1.0", n, kind, got[kind], intervals, perPoll)
		}
		delete(got, kind)
	}
	if len(got) > 0 {
		t.Errorf("requests of no kind at rest: %v", got)
	}
	slices.Sort(figures)
	t.Logf("at rest, --poll %s, over %d intervals: requests per MR per poll: %s; %.1f requests/min in all", poll, intervals, strings.Join(figures, ", "), restRate)

	// (b) A storm: every Neutron request is answered 429 with Retry-After:
	// 20 for 60 s.
	const retryAfter = 20
	storm, stormRate, stormEnd := s.storm(t, neutronproxy.Storm{Code: http.StatusTooManyRequests, RetryAfter: retryAfter}, 60*time.Second, nil)
	t.Logf("429 storm with Retry-After: %d for 60 s: %d requests reached Neutron, %.1f/min (at rest %.1f/min)",
		retryAfter, len(storm), stormRate, restRate)
	if stormRate >= restRate {
		t.Errorf("under the 429 storm the provider sent %.1f requests/min, at rest %.1f: want fewer", stormRate, restRate)
	}
	// Nothing reaches Neutron between the first answer of a hold and the
	// time it named, but the requests already past the Gate when the
	// answer came (200 ms).
	holdEnd := time.Time{}
	var early []string
	for _, r := range storm {
		switch {
		case !r.Stormed:
		case r.At.Before(holdEnd) && r.At.After(holdEnd.Add(-retryAfter*time.Second+200*time.Millisecond)):
			early = append(early, fmt.Sprintf("%s at +%s", r.Kind, r.At.Sub(holdEnd.Add(-retryAfter*time.Second)).Round(time.Millisecond)))
		case !r.At.Before(holdEnd):
			holdEnd = r.At.Add(retryAfter * time.Second)
		}
	}
	if len(early) > 0 {
		t.Errorf("requests reached Neutron before its Retry-After had passed: %v", early)
	}
	// During the storm the MRs say why and until when.
	var msg string
	if msgs := s.notSynced(t); len(msgs) > 0 {
		msg = msgs[0]
	}
	if !strings.Contains(msg, "Neutron answered 429 Too Many Requests with Retry-After: 20") || !strings.Contains(msg, "wait until") {
		t.Errorf("no MR says that Neutron asked to wait and until when; one says %q", msg)
	} else {
		t.Logf("during the storm: %s", msg)
	}
	s.allReady(t, "every managed resource is Ready again after the storm", 120*time.Second)
	t.Logf("after the storm every MR was Ready and Synced again in %s", time.Since(stormEnd).Round(time.Second))
}

// TestOpenStackFailing: while Neutron fails, answering 503 without
// Retry-After or refusing connections, the provider sends fewer requests
// than at rest, each MR saying Neutron's answer and that the provider
// backs off; once Neutron is back every MR is Ready within a poll.
func TestOpenStackFailing(t *testing.T) {
	// --poll 20 s: at rest each MR reads once a poll (3 a minute), while a
	// failing MR's own backoff (1 s doubling to 1 min) retries it about 6
	// times in a 60 s storm.
	const poll, stormFor = 20 * time.Second, 60 * time.Second
	clients, tap := politeClients()
	// What the provider sets from its --poll.
	clients.MaxBackoff = poll / 2
	s := startPolite(t, "failing", clients, tap, poll)
	s.settle()
	const intervals = 3
	start := time.Now()
	time.Sleep(intervals * poll)
	atRest := tap.Since(start)
	restRate := float64(len(atRest)) / (intervals * poll).Minutes()
	t.Logf("at rest, --poll %s: %d Neutron requests from %d MRs in %s, %.1f/min", poll, len(atRest), len(s.mrs), intervals*poll, restRate)

	for _, c := range []struct {
		name  string
		storm neutronproxy.Storm
		// says is what every MR's Synced message names.
		says []string
	}{
		{"503 without Retry-After", neutronproxy.Storm{Code: http.StatusServiceUnavailable}, []string{"Neutron answered 503 Service Unavailable", "backing off"}},
		{"connections refused", neutronproxy.Storm{Refused: true}, []string{"Neutron did not answer (", "connection refused", "backing off"}},
	} {
		var msgs []string
		storm, stormRate, end := s.storm(t, c.storm, stormFor, func() { msgs = s.notSynced(t) })
		byKind := map[string]int{}
		for _, r := range storm {
			byKind[r.Kind]++
		}
		t.Logf("%s for %s: %d requests reached Neutron, %.1f/min (at rest %.1f/min); by kind: %v", c.name, stormFor, len(storm), stormRate, restRate, byKind)
		if stormRate >= restRate {
			t.Errorf("%s: the provider sent %.1f requests/min to the failing Neutron, at rest %.1f: want fewer", c.name, stormRate, restRate)
		}
		// Each MR polled at least once in the storm and failed.
		if len(msgs) != len(s.mrs) {
			t.Errorf("%s: %d of %d MRs are not Synced at the storm's end, want all: %q", c.name, len(msgs), len(s.mrs), msgs)
		}
		for _, m := range msgs {
			for _, w := range c.says {
				if !strings.Contains(m, w) {
					t.Errorf("%s: an MR's Synced message does not say %q: %q", c.name, w, m)
					break
				}
			}
		}
		if len(msgs) > 0 {
			t.Logf("%s, at the storm's end: %s", c.name, msgs[0])
		}
		// The Gate probes Neutron at least every poll/2; the answer of
		// the first probe after the storm lets every request through,
		// and each MR retries at the Gate's time (spread by at most
		// 2.5 s), so all are Ready within poll/2 and a few seconds of
		// reconciles: within a poll. Their own backoff would take up to
		// 1 min.
		s.allReady(t, c.name+": every MR is Ready again after the storm", 2*time.Minute)
		took := time.Since(end)
		t.Logf("%s: every MR Ready and Synced %s after the storm's end", c.name, took.Round(100*time.Millisecond))
		if took > poll {
			t.Errorf("%s: every MR was Ready again %s after Neutron's return, want within a poll (%s)", c.name, took.Round(100*time.Millisecond), poll)
		}
	}
}

// TestFloatingIPBindingCutoverUnnudged: with the production --poll of
// 1 min, a pre-staged pinned binding notices the cutover by itself within
// 10 s, and the rollback (the floating IP moved back to the VM's port)
// within 10 s too while the binding's change is recent; in the pre-stage
// it reads its floating IP once per retry. The 10 s are the product's
// promise (docs/scale.md): a retry every 6 s and the reconcile after it.
// They are counted from the moment Neutron answered the move to the
// binding's own attaching request (the cutover) or its status (the
// rollback): how long Neutron takes to answer a PUT on a loaded machine
// (seen: 8 s) is Neutron's, and logged.
func TestFloatingIPBindingCutoverUnnudged(t *testing.T) {
	f := newFIPTest(t)
	ctx := context.Background()
	clients, tap := politeClients()
	startProviderPolling(t, func(mgr ctrl.Manager, o controller.Options) error {
		return floatingipbinding.Kind.Setup(mgr, o, mrsetup.Dependencies{OpenStack: clients})
	}, time.Minute)
	vm := f.port(t, "polite-vm-port")
	gw := f.port(t, "polite-gateway-port")
	fip, err := floatingips.Create(ctx, f.sc, floatingips.CreateOpts{FloatingNetworkID: f.e.Fixtures.ExtNet.ID, PortID: vm.ID}).Extract()
	if err != nil {
		t.Fatal(err)
	}
	f.releaseAfter(t, nil, fip.ID)
	mg := fipBinding("polite-pinned", gw.ID, netv1alpha1.FloatingIPBindingParameters{FloatingIPAddress: ptr.To(netv1alpha1.IPAddress(fip.FloatingIP))})
	create(t, mg)
	t.Cleanup(func() { fipDeleteAndWait(t, mg) })
	// preStaged waits until the binding is pre-staged and returns how long
	// after from it showed.
	preStaged := func(what string, from time.Time) time.Duration {
		t.Helper()
		eventually(t, 30*time.Second, what, func() error {
			c, err := fipCond(t, mg, xpv2.TypeSynced)
			if err != nil {
				return err
			}
			// Pre-staged: the floating IP on another port (the VM's),
			// which the message does not name.
			if c.Status != corev1.ConditionFalse || !strings.Contains(c.Message, "is associated with another port") || strings.Contains(c.Message, vm.ID) {
				return fmt.Errorf("Synced=%s: %s", c.Status, c.Message)
			}
			return nil
		})
		return time.Since(from)
	}
	preStaged("the pinned binding is pre-staged", time.Now())
	// The backoff reaches its bound after 1+2+4 s; then one GET per
	// retry.
	time.Sleep(12 * time.Second)
	from := time.Now()
	time.Sleep(30 * time.Second)
	n := len(tap.Since(from))
	t.Logf("pre-stage: %d Neutron requests in 30 s (one per %.1f s)", n, 30/float64(max(n, 1)))
	if n > 6 {
		t.Errorf("pre-stage: %d Neutron requests in 30 s, want at most 6 (one GET per 6 s retry)", n)
	}
	// Neutron commits a move before it answers: the binding may see it
	// before the answer came, so a time can be negative.
	var cutovers, rollbacks, puts []string
	for round := range 3 {
		// A random phase of the retry.
		time.Sleep(time.Duration(rand.Int64N(int64(6 * time.Second))))
		unset := time.Now()
		f.setPort(t, fip.ID, "")
		answered := time.Now()
		puts = append(puts, answered.Sub(unset).Round(10*time.Millisecond).String())
		eventually(t, 30*time.Second, "the binding attaches after the cutover", func() error {
			c, err := fipCond(t, mg, xpv2.TypeReady)
			if err != nil {
				return err
			}
			if c.Status != corev1.ConditionTrue || !mg.Status.AtProvider.Attached {
				return fmt.Errorf("Ready=%s attached=%v", c.Status, mg.Status.AtProvider.Attached)
			}
			return nil
		})
		i := slices.IndexFunc(tap.Since(unset), func(r neutronproxy.Request) bool { return r.Method == http.MethodPut })
		if i < 0 {
			t.Fatalf("round %d: the binding attached without a PUT to Neutron", round+1)
		}
		took := tap.Since(unset)[i].At.Sub(answered)
		cutovers = append(cutovers, took.Round(100*time.Millisecond).String())
		if took > 10*time.Second {
			t.Errorf("round %d: the binding sent its attaching PUT %s after Neutron answered the unset, want within 10 s", round+1, took)
		}
		time.Sleep(time.Duration(rand.Int64N(int64(6 * time.Second))))
		moved := time.Now()
		f.setPort(t, fip.ID, vm.ID)
		answered = time.Now()
		puts = append(puts, answered.Sub(moved).Round(10*time.Millisecond).String())
		took = preStaged("the rollback shows on the binding", answered)
		rollbacks = append(rollbacks, took.Round(100*time.Millisecond).String())
		if took > 10*time.Second {
			t.Errorf("round %d: the rollback showed on the binding %s after Neutron answered the move, want within 10 s", round+1, took)
		}
	}
	t.Logf("cutover without a nudge, --poll 1m: the attaching PUT %s after Neutron answered the unset; rollback seen %s after it answered the move (the PUTs took %s)",
		strings.Join(cutovers, ", "), strings.Join(rollbacks, ", "), strings.Join(puts, ", "))
}

// apiResource reduces a requestLog entry ("METHOD path") to its method and
// resource, such as "PUT securitygroups/status".
func apiResource(r string) string {
	method, path, _ := strings.Cut(r, " ")
	parts := strings.Split(strings.Trim(path, "/"), "/")
	// /api/v1/... or /apis/group/version/...
	i := 2
	if parts[0] == "apis" {
		i = 3
	}
	if len(parts) > i+1 && parts[i] == "namespaces" {
		i += 2
	}
	if i >= len(parts) {
		return method + " " + path
	}
	res := parts[i]
	if len(parts) > i+2 {
		res += "/" + parts[i+2]
	}
	return method + " " + res
}
