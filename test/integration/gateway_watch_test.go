//go:build integration

package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gwv1alpha1 "github.com/ipsecgw/provider-ipsec/apis/cluster/gateway/v1alpha1"
	"github.com/ipsecgw/provider-ipsec/apis/cluster/v1alpha1"
	"github.com/ipsecgw/provider-ipsec/internal/contract"
	"github.com/ipsecgw/provider-ipsec/internal/workload"
)

// requestLog records the provider's API-server requests, watches left
// out, as "METHOD path".
type requestLog struct {
	mu   sync.Mutex
	reqs []string
}

// wrap is a rest.Config's WrapTransport.
func (l *requestLog) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripFunc(func(r *http.Request) (*http.Response, error) {
		if r.URL.Query().Get("watch") != "true" {
			l.mu.Lock()
			l.reqs = append(l.reqs, r.Method+" "+r.URL.Path)
			l.mu.Unlock()
		}
		return rt.RoundTrip(r)
	})
}

// mark returns the position of the next request.
func (l *requestLog) mark() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.reqs)
}

// since returns the requests from mark on that contain every part.
func (l *requestLog) since(mark int, parts ...string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, r := range l.reqs[mark:] {
		if !slices.ContainsFunc(parts, func(p string) bool { return !strings.Contains(r, p) }) {
			out = append(out, r)
		}
	}
	return out
}

// kubeconfigOf returns a kubeconfig document for c (client certificate
// authentication, as envtest's admin user has).
func kubeconfigOf(t *testing.T, c *rest.Config) []byte {
	t.Helper()
	kc := clientcmdapi.NewConfig()
	kc.Clusters["envtest"] = &clientcmdapi.Cluster{Server: c.Host, CertificateAuthorityData: c.CAData}
	kc.AuthInfos["envtest"] = &clientcmdapi.AuthInfo{ClientCertificateData: c.CertData, ClientKeyData: c.KeyData, Token: c.BearerToken}
	kc.Contexts["envtest"] = &clientcmdapi.Context{Cluster: "envtest", AuthInfo: "envtest"}
	kc.CurrentContext = "envtest"
	b, err := clientcmd.Write(*kc)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestGatewayStatusWatch proves that a Gateway of the provider's own
// cluster picks up its agent's status by watch: a report written into the
// status ConfigMap (as the agent writes it) and a gateway pod no longer
// ready reach status.atProvider within 2 s with the provider polling every
// minute, and at rest the Gateway is not read more often than that safety
// poll; a Gateway whose ProviderConfig names a kubeconfig keeps polling
// every 15 s. Each observation of either makes at most perObservation
// API-server requests, watch-triggered or polled. It logs the latencies
// and the API-server requests per Gateway.
func TestGatewayStatusWatch(t *testing.T) { //nolint:gocyclo // one scenario, step by step
	ctx := context.Background()
	reqs := &requestLog{}
	counted := rest.CopyConfig(cfg)
	counted.WrapTransport = reqs.wrap
	const poll = time.Minute
	startProviderWith(t, gatewayControllers(), poll, counted)

	local, remote := "tenant-gwwatch", "tenant-gwwatch-remote"
	unused := v1alpha1.OpenStackCredentials{SecretRef: secretRef("unused", "clouds.yaml"), Cloud: "none"}
	create(t,
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: local}},
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: remote}},
		pskSecret(local),
		pskSecret(remote),
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: remote, Name: "target"}, Data: map[string][]byte{"kubeconfig": kubeconfigOf(t, cfg)}},
		&v1alpha1.ProviderConfig{ObjectMeta: metav1.ObjectMeta{Name: "gwwatch-local"}, Spec: v1alpha1.ProviderConfigSpec{Credentials: unused}},
		&v1alpha1.ProviderConfig{ObjectMeta: metav1.ObjectMeta{Name: "gwwatch-remote"}, Spec: v1alpha1.ProviderConfigSpec{Credentials: unused,
			Cluster: v1alpha1.ClusterCredentials{Source: xpv2.CredentialsSourceSecret,
				SecretRef: &xpv2.SecretKeySelector{SecretReference: xpv2.SecretReference{Namespace: remote, Name: "target"}, Key: "kubeconfig"}}}},
	)
	gateway := func(name, ns, pc string) *gwv1alpha1.Gateway {
		gw := &gwv1alpha1.Gateway{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: gwv1alpha1.GatewaySpec{ForProvider: gatewaySpec(ns)}}
		gw.Spec.ProviderConfigReference = &xpv2.Reference{Name: pc}
		return gw
	}
	gw, gwRemote := gateway("gw-watch", local, "gwwatch-local"), gateway("gw-watch-remote", remote, "gwwatch-remote")
	create(t, gw, gwRemote)
	t.Cleanup(func() {
		for _, g := range []*gwv1alpha1.Gateway{gw, gwRemote} {
			if err := kube.Delete(ctx, g); client.IgnoreNotFound(err) != nil {
				t.Errorf("delete Gateway %s: %v", g.Name, err)
			}
		}
		eventually(t, 30*time.Second, "the Gateways are deleted", func() error {
			for _, g := range []*gwv1alpha1.Gateway{gw, gwRemote} {
				err := kube.Get(ctx, client.ObjectKeyFromObject(g), &gwv1alpha1.Gateway{})
				if err == nil {
					return fmt.Errorf("Gateway %s still exists", g.Name)
				}
				if !kerrors.IsNotFound(err) {
					return fmt.Errorf("Gateway %s: %w", g.Name, err)
				}
			}
			return nil
		})
		for _, pc := range []string{"gwwatch-local", "gwwatch-remote"} {
			if err := kube.Delete(ctx, &v1alpha1.ProviderConfig{ObjectMeta: metav1.ObjectMeta{Name: pc}}); client.IgnoreNotFound(err) != nil {
				t.Errorf("delete ProviderConfig %s: %v", pc, err)
			}
		}
	})

	// Each Gateway's objects exist and a gateway pod is ready (envtest
	// runs no pods: the test sets the Deployment's status as the
	// Deployment controller would).
	readyPods := func(g *gwv1alpha1.Gateway, n int32) {
		t.Helper()
		eventually(t, 30*time.Second, fmt.Sprintf("the Deployment of %s says %d ready", g.Name, n), func() error {
			dep := &appsv1.Deployment{}
			if err := kube.Get(ctx, client.ObjectKey{Namespace: g.Spec.ForProvider.Namespace, Name: workload.NamesOf(g.Name).Gateway}, dep); err != nil {
				return err
			}
			dep.Status.Replicas, dep.Status.ReadyReplicas, dep.Status.AvailableReplicas = n, n, n
			return kube.Status().Update(ctx, dep)
		})
	}
	readyPods(gw, 1)
	readyPods(gwRemote, 1)
	statusKey := client.ObjectKey{Namespace: local, Name: workload.NamesOf(gw.Name).Status}
	eventually(t, 30*time.Second, "the Gateway is available and its status ConfigMap labelled for the watch", func() error {
		st := &corev1.ConfigMap{}
		if err := kube.Get(ctx, statusKey, st); err != nil {
			return err
		}
		if st.Labels[workload.LabelComponent] != workload.ComponentStatus {
			return fmt.Errorf("status ConfigMap labels %v", st.Labels)
		}
		if err := kube.Get(ctx, client.ObjectKeyFromObject(gw), gw); err != nil {
			return err
		}
		if c := condition(gw, xpv2.TypeReady); c.Status != corev1.ConditionTrue {
			return fmt.Errorf("Ready %s: %s", c.Status, c.Message)
		}
		return nil
	})

	// report writes a tunnel report into the status ConfigMap as the
	// agent does (read, replace data, update) and returns when the write
	// was accepted.
	report := func(up bool, bytesIn int64) time.Time {
		t.Helper()
		state := gwv1alpha1.IKEStateDown
		if up {
			state = gwv1alpha1.IKEStateEstablished
		}
		b, _ := json.Marshal([]gwv1alpha1.TunnelStatus{{Name: "branch-a", IKEState: state, Up: up,
			ChildSAs: []gwv1alpha1.ChildSAStatus{{Name: "branch-a-1", State: "INSTALLED", BytesIn: bytesIn, BytesOut: bytesIn}}}})
		var at time.Time
		eventually(t, 10*time.Second, "the agent writes its status", func() error {
			st := &corev1.ConfigMap{}
			if err := kube.Get(ctx, statusKey, st); err != nil {
				return err
			}
			st.Data = map[string]string{contract.KeyTunnels: string(b)}
			at = time.Now()
			return kube.Update(ctx, st)
		})
		return at
	}
	// shows waits up to 2 s for the Gateway's status to satisfy ok and
	// returns how long after since it did.
	shows := func(what string, since time.Time, ok func(gwv1alpha1.GatewayObservation) bool) time.Duration {
		t.Helper()
		for deadline := since.Add(2 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			g := &gwv1alpha1.Gateway{}
			if err := kube.Get(ctx, client.ObjectKeyFromObject(gw), g); err != nil {
				t.Fatal(err)
			}
			if ok(g.Status.AtProvider) {
				return time.Since(since)
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: not within 2 s; status.atProvider tunnelsUp %q tunnels %+v", what, g.Status.AtProvider.TunnelsUp, g.Status.AtProvider.Tunnels)
			}
		}
	}

	// Ten tunnel changes, up and down in turn, each with other counters.
	begin := reqs.mark()
	var latencies []time.Duration
	for i := range 10 {
		up, bytesIn := i%2 == 0, int64(1000+i)
		at := report(up, bytesIn)
		latencies = append(latencies, shows(fmt.Sprintf("change %d (up %t)", i, up), at, func(o gwv1alpha1.GatewayObservation) bool {
			return len(o.Tunnels) == 1 && o.Tunnels[0].Up == up && len(o.Tunnels[0].ChildSAs) == 1 && o.Tunnels[0].ChildSAs[0].BytesIn == bytesIn
		}))
	}
	perChange := reqs.since(begin)
	watchedMade, watchedObserves := gatewayRequests(perChange, gw)
	// A gateway pod no longer ready: its agent's last report (up) no
	// longer counts.
	report(true, 2000)
	shows("the last report", time.Now(), func(o gwv1alpha1.GatewayObservation) bool { return o.TunnelsUp == "1/1" })
	lost := time.Now()
	readyPods(gw, 0)
	podLost := shows("a lost gateway pod", lost, func(o gwv1alpha1.GatewayObservation) bool {
		return o.TunnelsUp == "0/1" && len(o.Tunnels) == 1 && o.Tunnels[0].IKEState == gwv1alpha1.IKEStateDown
	})
	sorted := slices.Sorted(slices.Values(latencies))
	t.Logf("status ConfigMap write -> Gateway status over %d changes: median %s, max %s (all %v); pod no longer ready -> status %s",
		len(sorted), sorted[len(sorted)/2], sorted[len(sorted)-1], latencies, podLost)
	t.Logf("API-server requests per watch-triggered reconcile: %.1f (%s); the watched Gateway's per observation: %.1f over %d observations",
		float64(len(perChange))/10, histogram(perChange), float64(len(watchedMade))/float64(max(watchedObserves, 1)), watchedObserves)
	if watchedObserves < 10 || len(watchedMade) > perObservation*watchedObserves {
		t.Errorf("the watched Gateway made %d requests in %d observations of its 10 changes: want at least 10 observations, at most %d requests each (%s)",
			len(watchedMade), watchedObserves, perObservation, histogram(watchedMade))
	}

	// At rest: no reads between safety polls for the watched Gateway; the
	// Gateway of another cluster polls every 15 s. Each observation reads
	// the PSK Secret once (through the provider's own cluster, counted).
	time.Sleep(time.Second)
	quiet := reqs.mark()
	const window = 31 * time.Second
	time.Sleep(window)
	atRest := reqs.since(quiet)
	localReads := reqs.since(quiet, "GET /api/v1/namespaces/"+local+"/")
	localMade, localObserves := gatewayRequests(atRest, gw)
	remoteMade, remoteObserves := gatewayRequests(atRest, gwRemote)
	t.Logf("at rest over %s (--poll %s): %d requests in all (%s); watched Gateway %d observations, %d reads in its namespace; kubeconfig-target Gateway %d observations, %.1f requests each",
		window, poll, len(atRest), histogram(atRest), localObserves, len(localReads), remoteObserves, float64(len(remoteMade))/float64(max(remoteObserves, 1)))
	for _, g := range []struct {
		name         string
		made         []string
		observations int
	}{{gw.Name, localMade, localObserves}, {gwRemote.Name, remoteMade, remoteObserves}} {
		if len(g.made) > perObservation*g.observations {
			t.Errorf("Gateway %s made %d requests at rest in %d observations: want at most %d each (%s)", g.name, len(g.made), g.observations, perObservation, histogram(g.made))
		}
	}
	if localObserves > 1 {
		t.Errorf("the watched Gateway was observed %d times in %s at rest with --poll %s: want at most one safety poll", localObserves, window, poll)
	}
	if remoteObserves < 2 {
		t.Errorf("the Gateway of a kubeconfig target was observed %d times in %s: want its 15 s poll (2)", remoteObserves, window)
	}
}

// perObservation bounds the API-server requests of one observation of a
// Gateway at rest (the review's bound): its PSK Secret read and its status
// written. Its ProviderConfig, the kubeconfig Secret that names its
// cluster and, in the provider's own cluster, its objects are read from
// memory.
const perObservation = 2

// gatewayRequests returns the requests of reqs that concern gw (in the
// namespace of its objects and Secrets, on gw itself, or on its
// ProviderConfig) and the observations of gw among them: each reads its
// PSK Secret (pskSecret) once. The events gw emits when a tunnel changes
// are left out: they are the observation's news, not its cost.
func gatewayRequests(reqs []string, gw *gwv1alpha1.Gateway) (made []string, observations int) {
	ns := gw.Spec.ForProvider.Namespace
	for _, r := range reqs {
		if strings.Contains(r, "/namespaces/"+ns+"/") || strings.Contains(r, "/gateways/"+gw.Name+"/") ||
			strings.HasSuffix(r, "/providerconfigs/"+gw.Spec.ProviderConfigReference.Name) {
			made = append(made, r)
		}
		if r == "GET /api/v1/namespaces/"+ns+"/secrets/vpn-psk" {
			observations++
		}
	}
	return made, observations
}

// histogram counts reqs by request, most frequent first.
func histogram(reqs []string) string {
	n := map[string]int{}
	for _, r := range reqs {
		n[r]++
	}
	keys := make([]string, 0, len(n))
	for k := range n {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return n[keys[i]] > n[keys[j]] || n[keys[i]] == n[keys[j]] && keys[i] < keys[j] })
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%d× %s", n[k], k))
	}
	return strings.Join(parts, ", ")
}
