package network

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/crossplane/crossplane-runtime/v2/pkg/event"
	"github.com/crossplane/crossplane-runtime/v2/pkg/logging"
	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"
	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"
	"github.com/crossplane/crossplane-runtime/v2/pkg/resource/fake"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
	"github.com/go-logr/logr/funcr"
	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	fakeclient "sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/ipsecgw/provider-ipsec/apis"
	"github.com/ipsecgw/provider-ipsec/apis/cluster/networking/v1alpha1"
	pcv1alpha1 "github.com/ipsecgw/provider-ipsec/apis/cluster/v1alpha1"
	"github.com/ipsecgw/provider-ipsec/internal/clients/openstack"
	"github.com/ipsecgw/provider-ipsec/internal/clients/openstack/neutrontest"
	"github.com/ipsecgw/provider-ipsec/internal/controller/mrsetup"
)

// Credentials of the fake cloud; no error, condition, event or log line may
// contain them.
const (
	password = "pw-s3cr3t-hunter2"
	token    = "gAAAAA-t0ken-of-the-fake-keystone"
)

// openStack is a fake Keystone and Neutron on one loopback server: Keystone
// issues token for any password login with a catalog whose network
// endpoint is the server itself; Neutron announces v2.0 and answers GET
// /v2.0/networks/{netID} with get.
func openStack(t *testing.T, get neutrontest.Reply) *httptest.Server {
	t.Helper()
	var srv *httptest.Server
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.Method == http.MethodPost && r.URL.Path == "/v3/auth/tokens":
			w.Header().Set("X-Subject-Token", token)
			w.WriteHeader(http.StatusCreated)
			_, _ = w.Write([]byte(`{"token": {"expires_at": "2099-01-01T00:00:00.000000Z", "methods": ["password"],
				"catalog": [{"type": "network", "name": "neutron", "endpoints": [
					{"interface": "public", "region": "RegionOne", "region_id": "RegionOne", "url": "` + srv.URL + `"}]}]}}`))
		case r.Method == http.MethodGet && r.URL.Path == "/":
			_, _ = w.Write([]byte(`{"versions": [{"id": "v2.0", "status": "CURRENT", "links": [{"href": "` + srv.URL + `/v2.0/", "rel": "self"}]}]}`))
		case r.Method == http.MethodGet && r.URL.Path == "/v2.0/networks/"+netID:
			if r.Header.Get("X-Auth-Token") != token {
				t.Errorf("GET %s without the token", r.URL.Path)
			}
			w.WriteHeader(get.Code)
			_, _ = w.Write([]byte(get.Body))
		default:
			t.Errorf("unexpected request %s %s", r.Method, r.URL)
			w.WriteHeader(http.StatusNotImplemented)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// recorder keeps the events the reconciler records.
type recorder struct{ events []event.Event }

func (r *recorder) Event(_ runtime.Object, e event.Event)    { r.events = append(r.events, e) }
func (r *recorder) WithAnnotations(...string) event.Recorder { return r }

// TestReconcileNeutronRefuses runs the managed reconciler, the Network's
// connector and the ProviderConfig's client cache against a fake Keystone
// that logs in and a Neutron that refuses the GET of the network
// (overloaded, rate-limited). The reconcile asks to be requeued through the
// rate limiter, so that it backs off, and Synced=False carries Neutron's
// status and message and the MR's name. No error, condition, event or log
// line holds the password or the token.
func TestReconcileNeutronRefuses(t *testing.T) {
	cases := map[string]struct {
		reason string
		get    neutrontest.Reply
		want   string
	}{
		"Unavailable": {
			reason: "An overloaded Neutron's 503 names its type and message.",
			get:    neutrontest.Reply{Code: http.StatusServiceUnavailable, Body: neutrontest.Error("ServiceUnavailable", "Neutron is too busy, try again")},
			want:   "observe failed: cannot get Neutron network " + netID + ": Neutron 503 ServiceUnavailable: Neutron is too busy, try again",
		},
		"RateLimited": {
			reason: "A rate limiter's 429 in front of Neutron, whose body is no Neutron error, gives the HTTP status text.",
			get:    neutrontest.Reply{Code: http.StatusTooManyRequests, Body: "<html><body>429 Too Many Requests</body></html>"},
			want:   "observe failed: cannot get Neutron network " + netID + ": OpenStack API returned 429: Too Many Requests",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			srv := openStack(t, tc.get)
			s := runtime.NewScheme()
			if err := clientgoscheme.AddToScheme(s); err != nil {
				t.Fatal(err)
			}
			if err := apis.AddToScheme(s); err != nil {
				t.Fatal(err)
			}
			clouds := "clouds:\n  lab:\n    auth:\n      auth_url: " + srv.URL + "/v3\n      username: tenant-a-user\n      password: " + password +
				"\n      project_name: tenant-a\n      user_domain_name: Default\n      project_domain_name: Default\n    region_name: RegionOne\n"
			secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "crossplane-system", Name: "openstack"}, Data: map[string][]byte{"clouds.yaml": []byte(clouds)}}
			pc := &pcv1alpha1.ProviderConfig{ObjectMeta: metav1.ObjectMeta{Name: "default"}, Spec: pcv1alpha1.ProviderConfigSpec{
				Credentials: pcv1alpha1.OpenStackCredentials{
					Source:    xpv2.CredentialsSourceSecret,
					SecretRef: &xpv2.SecretKeySelector{SecretReference: xpv2.SecretReference{Namespace: "crossplane-system", Name: "openstack"}, Key: "clouds.yaml"},
					Cloud:     "lab",
				},
			}}
			mg := mr()
			mg.Spec.ProviderConfigReference = &xpv2.Reference{Name: "default"}
			kube := fakeclient.NewClientBuilder().WithScheme(s).WithObjects(secret, pc, mg).WithStatusSubresource(mg).Build()

			var logs bytes.Buffer
			log := funcr.New(func(prefix, args string) { logs.WriteString(prefix + " " + args + "\n") }, funcr.Options{Verbosity: 1})
			events := &recorder{}
			c := openstack.Connector{Kube: kube, Usage: resource.NewLegacyProviderConfigUsageTracker(kube, &pcv1alpha1.ProviderConfigUsage{}), Clients: openstack.NewClients()}
			r := managed.NewReconciler(&fake.Manager{Client: kube, Scheme: s}, resource.ManagedKind(v1alpha1.NetworkGroupVersionKind),
				append(mrsetup.OpenStackOptions(&openstack.CreateRecovery{Kube: kube, Network: c.Network, Find: openstack.ScanFinder(openstack.Networks)}),
					managed.WithTypedExternalConnector(mrsetup.NeutronConnector(c, NewExternal)),
					managed.WithLogger(logging.NewLogrLogger(log)),
					managed.WithRecorder(events))...)

			res, err := r.Reconcile(context.Background(), reconcile.Request{NamespacedName: client.ObjectKeyFromObject(mg)})
			if err != nil {
				t.Fatalf("%s\nReconcile(...): %v", tc.reason, err)
			}
			if !res.Requeue || res.RequeueAfter != 0 { //nolint:staticcheck // SA1019: crossplane-runtime's reconciler still sets Requeue
				t.Errorf("%s\nReconcile(...) = %+v, want a requeue through the rate limiter (backoff)", tc.reason, res)
			}
			got := &v1alpha1.Network{}
			if err := kube.Get(context.Background(), client.ObjectKeyFromObject(mg), got); err != nil {
				t.Fatal(err)
			}
			synced := got.GetCondition(xpv2.TypeSynced)
			if synced.Status != corev1.ConditionFalse {
				t.Errorf("%s\nSynced=%s, want False", tc.reason, synced.Status)
			}
			if diff := cmp.Diff(tc.want, synced.Message); diff != "" {
				t.Errorf("%s\nSynced message: -want, +got:\n%s", tc.reason, diff)
			}
			if meta.GetExternalName(got) != netID {
				t.Errorf("%s\nexternal name %q, want it kept as %s", tc.reason, meta.GetExternalName(got), netID)
			}
			if len(events.events) != 1 || events.events[0].Type != event.TypeWarning || "observe failed: "+events.events[0].Message != tc.want {
				t.Errorf("%s\nevents %+v, want one warning with Neutron's answer", tc.reason, events.events)
			}
			seen := []string{synced.Message, logs.String()}
			for _, e := range events.events {
				seen = append(seen, e.Message)
			}
			for _, text := range seen {
				for _, secret := range []string{password, token} {
					if strings.Contains(text, secret) {
						t.Errorf("%s\na credential reached the user: %q", tc.reason, text)
					}
				}
			}
		})
	}
}
