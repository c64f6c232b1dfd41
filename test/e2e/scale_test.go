//go:build e2e

package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/ipsecgw/provider-ipsec/apis/cluster/v1alpha1"
	"github.com/ipsecgw/provider-ipsec/test/neutronproxy"
)

// TestScale is the scale benchmark (hack/scale.sh prints its table;
// docs/scale.md has the figures). On a local stack without a node
// (NODE=0: no gateway pod runs) and with its own Keystone + Neutron, the
// provider process runs as in production (--poll, no --debug) and reaches
// Neutron through a counting proxy, registered in Keystone as the network
// endpoint of a region of its own that the ProviderConfig names. The test
// applies N claims with allocated floating IPs (examples/claim/allocated-fip.yaml)
// at once and measures the time from each claim's creation until the
// claim shows its security group, port and floating IP Ready and Synced,
// the floating IP attached and the Gateway's configuration rendered; then,
// at rest over a window, the provider's RSS and CPU and the Neutron
// requests per managed resource per poll; then the same while the proxy
// answers every Neutron request 429 with Retry-After (a storm), and how
// long after the storm every claim is Ready and Synced again. Crossplane's
// XR circuit breaker opens and the machine's load average are counted in
// each phase.
//
// It fails when a claim is not Ready in time (readyBound), when a kind sends more than
// one request per MR per poll at rest (plus one per MR at the window's
// edge), or when the storm does not lower the request rate. With its
// defaults (3 claims, --poll=10s, a 30 s window, a 30 s storm) it is the
// smoke that make test-e2e runs; hack/scale.sh sets E2E_SCALE_N,
// E2E_SCALE_POLL, E2E_SCALE_WINDOW, E2E_SCALE_STORM and
// E2E_SCALE_RETRY_AFTER.
func TestScale(t *testing.T) {
	stackLanes.take(t)
	b := scaleSettingsFromEnv(t)
	s := startScaleStack(t, b)
	ctx := context.Background()
	t.Logf("scale: %d claims, provider --poll=%s, window at rest %s, 429 storm %s with Retry-After: %d",
		b.n, b.poll, b.window, b.storm, b.retryAfter)

	// Creation: all claims at once, as a GitOps sync of a tenant would.
	s.kubectl(t, "apply", "-f", filepath.Join(root, "examples", "claim", "psk.yaml"))
	created := map[string]time.Time{}
	cb0 := s.opens(t)
	load := loadWatch()
	t0 := time.Now()
	for i := range b.n {
		c := s.claim(t, fmt.Sprintf("scale-%03d", i))
		if err := s.kube.Create(ctx, c); err != nil {
			t.Fatalf("create claim %s: %v", c.GetName(), err)
		}
		created[c.GetName()] = time.Now()
	}
	readyIn := s.waitAll(t, "created", created, readyBound(b.n))
	allReady := time.Since(t0)
	creation := s.proxy.Tap.Since(t0)
	cbCreate := s.opens(t)
	loadCreate := load.stop()
	durations := make([]time.Duration, 0, len(readyIn))
	for _, d := range readyIn {
		durations = append(durations, d)
	}

	// At rest: after a poll interval for the creation's last reconciles.
	time.Sleep(b.poll + 10*time.Second)
	rest := s.measure(t, b.window)

	// The storm.
	if err := s.proxy.Tap.SetStorm(neutronproxy.Storm{Code: http.StatusTooManyRequests, RetryAfter: b.retryAfter}); err != nil {
		t.Fatal(err)
	}
	storm := s.measure(t, b.storm)
	if err := s.proxy.Tap.SetStorm(neutronproxy.Storm{}); err != nil {
		t.Fatal(err)
	}
	stormEnd := time.Now()
	since := map[string]time.Time{}
	for name := range created {
		since[name] = stormEnd
	}
	// A claim that stayed Ready and Synced through the storm counts at
	// its first look after it.
	again := s.waitAll(t, "after the storm", since, readyBound(b.n))
	var recovered time.Duration
	for _, d := range again {
		recovered = max(recovered, d)
	}
	cbAfter := s.opens(t)

	// The table.
	med, mx := medianMax(durations)
	mrs := map[string]int{"SecurityGroup": b.n, "Port": b.n, "FloatingIPBinding": b.n}
	intervals := b.window.Seconds() / b.poll.Seconds()
	var perPoll []string
	for _, kind := range []string{"SecurityGroup", "Port", "FloatingIPBinding"} {
		got := float64(rest.byKind[kind]) / (float64(mrs[kind]) * intervals)
		perPoll = append(perPoll, fmt.Sprintf("%s %.2f", kind, got))
		// One read per MR may fall on the window's edge.
		if bound := 1 + 1/intervals; got > bound {
			t.Errorf("at rest %d %s MRs sent %d Neutron requests in %.1f poll intervals: %.2f per MR per poll, want at most %.2f",
				mrs[kind], kind, rest.byKind[kind], intervals, got, bound)
		}
	}
	if others := rest.requests - rest.byKind["SecurityGroup"] - rest.byKind["Port"] - rest.byKind["FloatingIPBinding"]; others > 0 {
		t.Errorf("at rest %d Neutron requests of no claim's kind: %v", others, rest.byKind)
	}
	if storm.perMin() >= rest.perMin() {
		t.Errorf("under the 429 storm %.1f Neutron requests/min reached the proxy, at rest %.1f: want fewer", storm.perMin(), rest.perMin())
	}
	rows := [][2]string{
		{"claims (managed resources)", fmt.Sprintf("%d (%d: SecurityGroup, Port, FloatingIPBinding and Gateway each %d)", b.n, 4*b.n, b.n)},
		{"claim created → Ready: median, max", fmt.Sprintf("%.1f s, %.1f s", med.Seconds(), mx.Seconds())},
		{"first created → all Ready", fmt.Sprintf("%.1f s", allReady.Seconds())},
		{"Neutron requests until all Ready", fmt.Sprintf("%d (%.1f per claim)", len(creation), float64(len(creation))/float64(b.n))},
		{"load average (1 min) during creation", loadCreate},
		{"provider RSS at rest: median, max; peak since start", fmt.Sprintf("%.0f MiB, %.0f MiB; %.0f MiB", rest.rssMedian, rest.rssMax, rest.rssPeak)},
		{"provider CPU at rest", fmt.Sprintf("%.2f %% of a core", rest.cpu)},
		{"Neutron requests per MR per poll at rest", strings.Join(perPoll, ", ") + "; Gateway 0 (Kubernetes only)"},
		{"Neutron requests at rest", fmt.Sprintf("%d in %s: %.1f/min (the provider counted %d; Keystone %d)", rest.requests, b.window, rest.perMin(), rest.providerNeutron, rest.providerKeystone)},
		{"load average (1 min) at rest", rest.load},
		{fmt.Sprintf("429 storm, Retry-After: %d, for %s: Neutron requests reaching the proxy", b.retryAfter, b.storm),
			fmt.Sprintf("%d: %.1f/min (at rest %.1f/min); %d held back by the provider", storm.requests, storm.perMin(), rest.perMin(), storm.providerHeld)},
		{"provider RSS, CPU during the storm", fmt.Sprintf("%.0f MiB max, %.2f %% of a core", storm.rssMax, storm.cpu)},
		{"storm over → every claim Ready and Synced", fmt.Sprintf("%.1f s", recovered.Seconds())},
		{"load average (1 min) during the storm", storm.load},
		{"XR circuit breaker opens: creation, at rest, storm and after", fmt.Sprintf("%d, %d, %d", cbCreate-cb0, rest.opens, storm.opens+cbAfter-storm.opensAt)},
	}
	t.Logf("| scale benchmark, N=%d | |", b.n)
	t.Logf("|---|---|")
	for _, r := range rows {
		t.Logf("| %s | %s |", r[0], r[1])
	}
	breaker, _ := s.breaker(t)
	t.Logf("scale: %s", breaker)
}

// readyBound is how long n claims may take to be Ready: 10 min and 6 s a
// claim, a bound for a stuck claim, not a speed. On two cores with the
// load at 30 a Neutron create took more than a minute.
func readyBound(n int) time.Duration { return 10*time.Minute + time.Duration(n)*6*time.Second }

// scaleSettings are the benchmark's knobs.
type scaleSettings struct {
	n                   int
	poll, window, storm time.Duration
	retryAfter          int
}

// scaleSettingsFromEnv reads E2E_SCALE_*, defaulting to make test's smoke.
func scaleSettingsFromEnv(t *testing.T) scaleSettings {
	t.Helper()
	b := scaleSettings{}
	var err error
	if b.n, err = strconv.Atoi(e2eSetting("SCALE_N", "3")); err != nil || b.n < 1 {
		t.Fatalf("E2E_SCALE_N: want a number of claims, at least 1: %v", err)
	}
	for _, d := range []struct {
		name, def string
		to        *time.Duration
	}{{"SCALE_POLL", "10s", &b.poll}, {"SCALE_WINDOW", "30s", &b.window}, {"SCALE_STORM", "30s", &b.storm}} {
		if *d.to, err = time.ParseDuration(e2eSetting(d.name, d.def)); err != nil || *d.to <= 0 {
			t.Fatalf("E2E_%s: want a positive duration such as 10m: %v", d.name, err)
		}
	}
	if b.retryAfter, err = strconv.Atoi(e2eSetting("SCALE_RETRY_AFTER", "10")); err != nil || b.retryAfter < 1 {
		t.Fatalf("E2E_SCALE_RETRY_AFTER: want seconds, at least 1: %v", err)
	}
	return b
}

// scaleStack is the benchmark's stack: the e2e's stack, the provider's
// metrics port and pid file, the counting proxy, Neutron's fixtures.
type scaleStack struct {
	*stack
	providerMetricsPort string
	proxy               *neutronproxy.Proxy
	fixtures            struct {
		NeutronURL string `json:"neutron_url"`
		Project    struct {
			ID string `json:"id"`
		} `json:"project"`
		ExtNet struct {
			ID string `json:"id"`
		} `json:"ext_net"`
		TenantNet struct {
			ID string `json:"id"`
		} `json:"tenant_net"`
		TenantSubnet struct {
			ID string `json:"id"`
		} `json:"tenant_subnet"`
	}
	// example is examples/claim/allocated-fip.yaml.
	example map[string]any
}

// startScaleStack brings up the local stack without a node
// (cluster/local/up.sh, NODE=0) and Keystone + Neutron
// (cluster/openstack/up.sh) in state directories of the test's own
// (E2E_SCALE_STATE), on free ports they find (or E2E_OS_KEYSTONE_PORT,
// E2E_OS_NEUTRON_PORT), the counting proxy in front
// of Neutron as region scale-<port>, the ProviderConfig default of
// tenant-a in that region, and the provider (cluster/local/provider.sh,
// --poll of b); it stops all of it when the test ends, also on failure.
func startScaleStack(t *testing.T, b scaleSettings) *scaleStack {
	t.Helper()
	if os.Getuid() != 0 {
		t.Skip("the local Keystone + Neutron need root (cluster/openstack/up.sh)")
	}
	state := e2eSetting("SCALE_STATE", filepath.Join(root, ".work", "e2e-scale"))
	// The benchmark applies examples/claim/allocated-fip.yaml: legacy claims.
	s := &scaleStack{stack: &stack{state: state, xr: legacyClaim}}
	s.env = append(os.Environ(), "STATE="+state, "OS_STATE="+state+"-openstack", "NODE=0",
		"PROVIDER_ARGS=--poll="+b.poll.String())
	s.env = append(s.env, e2ePorts("OS_KEYSTONE_PORT", "OS_NEUTRON_PORT")...)
	t.Cleanup(func() {
		if t.Failed() {
			if b, err := os.ReadFile(filepath.Join(state, "provider.log")); err == nil {
				lines := strings.Split(string(b), "\n")
				t.Logf("provider log (last 40 lines):\n%s", strings.Join(lines[max(0, len(lines)-40):], "\n"))
			}
		}
		tryScript(t, s.env, "cluster/local/down.sh")
		tryScript(t, s.env, "cluster/openstack/down.sh")
	})
	start := time.Now()
	mustRun(t, s.env, "cluster/local/up.sh")
	mustRun(t, s.env, "cluster/openstack/up.sh")
	t.Logf("scale: stack up (NODE=0) and Keystone + Neutron in %s", time.Since(start).Round(100*time.Millisecond))
	ports := stackPorts(t, state)
	s.xpMetricsPort, s.providerMetricsPort = ports["XP_METRICS_PORT"], ports["PROVIDER_METRICS_PORT"]

	osState := state + "-openstack"
	fx, err := os.ReadFile(filepath.Join(osState, "fixtures.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(fx, &s.fixtures); err != nil {
		t.Fatal(err)
	}
	clouds, err := os.ReadFile(filepath.Join(osState, "clouds.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	// Each claim has a security group with its rules, a port and a
	// floating IP; the fixtures have the rest of the defaults.
	n := b.n
	restore, err := neutronproxy.RaiseQuotas(context.Background(), clouds, "admin", s.fixtures.Project.ID,
		neutronproxy.Quotas{SecurityGroups: n, SecurityGroupRules: 10 * n, Ports: n, FloatingIPs: n})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := restore(context.Background()); err != nil {
			t.Error(err)
		}
	})
	if s.proxy, err = neutronproxy.Start(s.fixtures.NeutronURL, nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.proxy.Close() })
	region := "scale-" + s.proxy.URL[strings.LastIndex(s.proxy.URL, ":")+1:]
	remove, err := neutronproxy.Register(context.Background(), clouds, "admin", region, s.proxy.URL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = remove(context.Background()) })

	s.kube = stackClient(t, state)
	ctx := context.Background()
	sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "crossplane-system", Name: "openstack-clouds"}, Data: map[string][]byte{"clouds.yaml": clouds}}
	pc := &v1alpha1.ProviderConfig{ObjectMeta: metav1.ObjectMeta{Name: "default"}, Spec: v1alpha1.ProviderConfigSpec{
		Credentials: v1alpha1.OpenStackCredentials{Source: xpv2.CredentialsSourceSecret, Cloud: "tenant-a", Region: region,
			SecretRef: &xpv2.SecretKeySelector{SecretReference: xpv2.SecretReference{Namespace: "crossplane-system", Name: "openstack-clouds"}, Key: "clouds.yaml"}},
		Cluster: v1alpha1.ClusterCredentials{Source: xpv2.CredentialsSourceInjectedIdentity}}}
	for _, o := range []client.Object{sec, pc} {
		if err := s.kube.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	mustRun(t, s.env, "cluster/local/provider.sh")

	ex, err := os.ReadFile(filepath.Join(root, "examples", "claim", "allocated-fip.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(ex, &s.example); err != nil {
		t.Fatal(err)
	}
	return s
}

// claim is examples/claim/allocated-fip.yaml named name, with the local
// Neutron's IDs and nodePorts Unmanaged (no node has a Neutron port).
func (s *scaleStack) claim(t *testing.T, name string) *unstructured.Unstructured {
	t.Helper()
	c := &unstructured.Unstructured{Object: map[string]any{}}
	b, _ := json.Marshal(s.example)
	if err := json.Unmarshal(b, &c.Object); err != nil {
		t.Fatal(err)
	}
	c.SetName(name)
	for _, f := range []struct {
		v    string
		path []string
	}{
		{s.fixtures.ExtNet.ID, []string{"spec", "endpoint", "floatingNetworkId"}},
		{s.fixtures.TenantNet.ID, []string{"spec", "network", "networkId"}},
		{s.fixtures.TenantSubnet.ID, []string{"spec", "network", "subnetId"}},
		{"Unmanaged", []string{"spec", "nodePorts"}},
	} {
		if err := unstructured.SetNestedField(c.Object, f.v, f.path...); err != nil {
			t.Fatal(err)
		}
	}
	return c
}

// claimReady says whether claim c shows its security group, port and
// floating IP Ready and Synced, the floating IP attached, and its Gateway
// Synced with the configuration rendered (its pod cannot run: no node),
// and if not, why.
func claimReady(c *unstructured.Unstructured) (bool, string) {
	for _, step := range []string{"securityGroup", "port", "floatingIP", "gateway"} {
		want := []string{"Synced", "Ready"}
		if step == "gateway" {
			want = []string{"Synced", "ConfigRendered"}
		}
		for _, typ := range want {
			if st, msg := condition(c, typ, "status", step, "conditions"); st != "True" {
				return false, fmt.Sprintf("%s: status.%s %s=%q %s", c.GetName(), step, typ, st, msg)
			}
		}
	}
	if str(c, "status", "floatingIP", "attached") != "true" {
		return false, c.GetName() + ": floating IP not attached"
	}
	return true, ""
}

// waitAll lists the claims every second until each claim named in since
// is Ready (claimReady) and returns, per claim, the time from since to
// the list that first showed it so. It fails t after timeout.
func (s *scaleStack) waitAll(t *testing.T, what string, since map[string]time.Time, timeout time.Duration) map[string]time.Duration {
	t.Helper()
	took := map[string]time.Duration{}
	deadline := time.Now().Add(timeout)
	var last string
	for len(took) < len(since) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: %d of %d claims Ready after %s; one that is not: %s", what, len(took), len(since), timeout, last)
		}
		l := &unstructured.UnstructuredList{}
		l.SetGroupVersionKind(s.xr.gvk.GroupVersion().WithKind(s.xr.gvk.Kind + "List"))
		if err := s.kube.List(context.Background(), l, client.InNamespace(tenant)); err != nil {
			last = err.Error()
		}
		now := time.Now()
		for i := range l.Items {
			c := &l.Items[i]
			from, ok := since[c.GetName()]
			if _, done := took[c.GetName()]; !ok || done {
				continue
			}
			if ready, why := claimReady(c); ready {
				took[c.GetName()] = now.Sub(from)
			} else {
				last = why
			}
		}
		time.Sleep(time.Second)
	}
	return took
}

// phase is what a window measured.
type phase struct {
	length time.Duration
	// requests reached the proxy, byKind by the kind that sent them.
	requests int
	byKind   map[string]int
	// providerNeutron, providerKeystone and providerHeld are the
	// provider's own counts of Neutron and Keystone requests sent and of
	// requests it held back (a Retry-After or its rate cap).
	providerNeutron, providerKeystone, providerHeld int
	// The provider's resident memory in MiB (sampled every 5 s; peak: the
	// kernel's high-water mark since it started) and CPU in per cent of a
	// core.
	rssMedian, rssMax, rssPeak, cpu float64
	// load is the load average over the window.
	load string
	// opens is how often the XR circuit breaker opened in the window,
	// opensAt its count at the end.
	opens, opensAt int
}

func (p phase) perMin() float64 { return float64(p.requests) / p.length.Minutes() }

// measure watches the provider for d.
func (s *scaleStack) measure(t *testing.T, d time.Duration) phase {
	t.Helper()
	pid := s.providerPID(t)
	m0 := s.providerMetrics(t)
	cb0 := s.opens(t)
	cpu0 := cpuTicks(t, pid)
	load := loadWatch()
	start := time.Now()
	var rss []float64
	for time.Since(start) < d {
		rss = append(rss, procStatusMiB(t, pid, "VmRSS"))
		time.Sleep(min(5*time.Second, d-time.Since(start)))
	}
	end := time.Now()
	p := phase{length: end.Sub(start), byKind: map[string]int{}, load: load.stop()}
	p.cpu = float64(cpuTicks(t, pid)-cpu0) / userHZ / p.length.Seconds() * 100
	rss = append(rss, procStatusMiB(t, pid, "VmRSS"))
	p.rssPeak = procStatusMiB(t, pid, "VmHWM")
	slices.Sort(rss)
	p.rssMedian, p.rssMax = rss[len(rss)/2], rss[len(rss)-1]
	for _, r := range s.proxy.Tap.Between(start, end) {
		p.requests++
		p.byKind[r.Kind]++
	}
	m1 := s.providerMetrics(t)
	p.providerNeutron = m1["provider_ipsec_openstack_requests_total|Neutron"] - m0["provider_ipsec_openstack_requests_total|Neutron"]
	p.providerKeystone = m1["provider_ipsec_openstack_requests_total|Keystone"] - m0["provider_ipsec_openstack_requests_total|Keystone"]
	p.providerHeld = m1["provider_ipsec_openstack_requests_held_total|Neutron"] - m0["provider_ipsec_openstack_requests_held_total|Neutron"]
	p.opensAt = s.opens(t)
	p.opens = p.opensAt - cb0
	return p
}

// userHZ is the unit of the CPU times in /proc/<pid>/stat: USER_HZ,
// 100 on Linux.
const userHZ = 100

// providerPID is the provider process's pid, from its pid file.
func (s *scaleStack) providerPID(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(s.state, "provider.pid"))
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

// cpuTicks is the user and system CPU time of process pid, in USER_HZ.
func cpuTicks(t *testing.T, pid string) int {
	t.Helper()
	b, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		t.Fatalf("the provider: %v", err)
	}
	// The fields after the command's ")": state is the first, utime the
	// 12th, stime the 13th.
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	u, _ := strconv.Atoi(f[11])
	st, _ := strconv.Atoi(f[12])
	return u + st
}

// procStatusMiB is the field (VmRSS, VmHWM) of /proc/<pid>/status, in MiB.
func procStatusMiB(t *testing.T, pid, field string) float64 {
	t.Helper()
	b, err := os.ReadFile("/proc/" + pid + "/status")
	if err != nil {
		t.Fatalf("the provider: %v", err)
	}
	for l := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(l, field+":"); ok {
			kb, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
			return float64(kb) / 1024
		}
	}
	t.Fatalf("no %s in /proc/%s/status", field, pid)
	return 0
}

// providerMetrics returns the provider's OpenStack request counters by
// "name|service", summed over their other labels.
func (s *scaleStack) providerMetrics(t *testing.T) map[string]int {
	t.Helper()
	out := map[string]int{}
	scrape(t, s.providerMetricsPort, "provider_ipsec_openstack_requests", func(name, labels string, v float64) {
		_, svc, _ := strings.Cut(labels, `service="`)
		svc, _, _ = strings.Cut(svc, `"`)
		out[name+"|"+svc] += int(v)
	})
	return out
}

// opens is how often Crossplane's XR circuit breaker has opened.
func (s *scaleStack) opens(t *testing.T) int {
	t.Helper()
	_, n := s.breaker(t)
	return n
}

// scrape reads the Prometheus metrics on 127.0.0.1:port and calls f for
// each sample whose name starts with prefix.
func scrape(t *testing.T, port, prefix string, f func(name, labels string, v float64)) {
	t.Helper()
	req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, "http://127.0.0.1:"+port+"/metrics", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("metrics on port %s: %v", port, err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, prefix) {
			continue
		}
		sample, value, _ := strings.Cut(line, " ")
		name, labels, _ := strings.Cut(sample, "{")
		v, err := strconv.ParseFloat(value, 64)
		if err != nil {
			continue
		}
		f(name, labels, v)
	}
}

// A loadSampler samples the machine's 1-minute load average every 5 s
// until stop.
type loadSampler struct {
	done    chan struct{}
	samples chan []float64
}

func loadWatch() *loadSampler {
	l := &loadSampler{done: make(chan struct{}), samples: make(chan []float64, 1)}
	go func() {
		var s []float64
		tick := time.NewTicker(5 * time.Second)
		defer tick.Stop()
		for {
			if b, err := os.ReadFile("/proc/loadavg"); err == nil {
				if v, err := strconv.ParseFloat(strings.Fields(string(b))[0], 64); err == nil {
					s = append(s, v)
				}
			}
			select {
			case <-l.done:
				l.samples <- s
				return
			case <-tick.C:
			}
		}
	}()
	return l
}

// stop ends the sampling and says the load average's mean and range.
func (l *loadSampler) stop() string {
	close(l.done)
	s := <-l.samples
	if len(s) == 0 {
		return "not read"
	}
	var sum float64
	for _, v := range s {
		sum += v
	}
	return fmt.Sprintf("%.1f (%.1f-%.1f)", sum/float64(len(s)), slices.Min(s), slices.Max(s))
}

// medianMax returns the median and the largest of ds.
func medianMax(ds []time.Duration) (median, largest time.Duration) {
	if len(ds) == 0 {
		return 0, 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2], s[len(s)-1]
}
