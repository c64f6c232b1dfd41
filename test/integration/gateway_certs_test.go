//go:build integration

package integration

import (
	"context"
	"crypto/x509/pkix"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
	corev1 "k8s.io/api/core/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gwv1alpha1 "github.com/ipsecgw/provider-ipsec/apis/cluster/gateway/v1alpha1"
	"github.com/ipsecgw/provider-ipsec/internal/contract"
	"github.com/ipsecgw/provider-ipsec/internal/workload"
	"github.com/ipsecgw/provider-ipsec/test/topology"
)

// TestGatewayCertificate runs the provider's controllers on a Gateway with
// a certificate tunnel while its Secrets go through the states a user
// gets wrong, in turn: each is reported in ConfigRendered (reason
// InvalidCertificate) and Synced with a message naming the Secret or
// ConfigMap, the key and the fix, and nothing is deployed. Once all is
// right the Gateway renders: the ConfigMap names the certificates and
// carries the asn1dn identities but neither the key nor a certificate;
// the gateway's Secret carries both; and the key, in PEM or as rendered,
// is in no ConfigMap, status field, event or provider log.
func TestGatewayCertificate(t *testing.T) {
	ctx := context.Background()
	logs := startProvider(t, gatewayControllers())
	// Names of their own for each run (-count): envtest never finishes
	// deleting a namespace.
	run := nsSeq.Add(1)
	ns, gwName, pcName := fmt.Sprintf("tenant-certs-%d", run), fmt.Sprintf("gw-certs-%d", run), fmt.Sprintf("certs-%d", run)
	create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	// A ProviderConfig of its own: TestGatewayLifecycle makes default.
	create(t, unusedProviderConfig(pcName))
	subject := pkix.Name{Country: []string{"DE"}, Organization: []string{"Example AG"}, CommonName: "gw.example.com"}
	ca := topology.NewCA(t, pkix.Name{CommonName: "Gateway CA"})
	peerCA := topology.NewCA(t, pkix.Name{CommonName: "Peer CA"})
	good := ca.Issue(t, subject, []string{"gw.example.com"}, time.Now().Add(-time.Hour), time.Now().Add(time.Hour), topology.SEC1)
	other := ca.Issue(t, subject, []string{"gw.example.com"}, time.Now().Add(-time.Hour), time.Now().Add(time.Hour), topology.SEC1)
	expired := ca.Issue(t, subject, nil, time.Now().Add(-2*time.Hour), time.Now().Add(-time.Hour), topology.SEC1)

	spec := gatewaySpec(ns)
	spec.Tunnels[0].PreSharedKeySecretRef = nil
	spec.Tunnels[0].Certificate = &gwv1alpha1.CertificateAuth{
		SecretName: "gw-tls", PeerCA: gwv1alpha1.CARef{ConfigMapName: ptr.To("peer-ca")},
		LocalID:  &gwv1alpha1.Identity{DN: ptr.To("C=DE, O=Example AG, CN=gw.example.com")},
		RemoteID: gwv1alpha1.Identity{DN: ptr.To("C=CH, O=Zürich Peer AG, CN=vpn.peer.example")},
	}
	gw := &gwv1alpha1.Gateway{ObjectMeta: metav1.ObjectMeta{Name: gwName}, Spec: gwv1alpha1.GatewaySpec{ForProvider: spec}}
	gw.Spec.ProviderConfigReference = &xpv2.Reference{Name: pcName}
	create(t, gw)
	t.Cleanup(func() { _ = kube.Delete(context.Background(), gw) })

	tlsSecret := func(crt, key []byte) *corev1.Secret {
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "gw-tls"}, Type: corev1.SecretTypeTLS,
			Data: map[string][]byte{"tls.crt": crt, "tls.key": key}}
	}
	put := func(o client.Object) {
		t.Helper()
		_ = kube.Delete(ctx, o.DeepCopyObject().(client.Object))
		eventually(t, 30*time.Second, "the old object is gone", func() error {
			err := kube.Get(ctx, client.ObjectKeyFromObject(o), o.DeepCopyObject().(client.Object))
			if kerrors.IsNotFound(err) {
				return nil
			}
			return fmt.Errorf("still there: %w", err)
		})
		if err := kube.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	steps := []struct {
		reason string
		setup  func()
		want   string
	}{{
		reason: "No Secret: create it, with cert-manager named.",
		setup:  func() {},
		want:   "tunnels[branch-a].certificate.secretName: Secret " + ns + "/gw-tls does not exist: create it (a cert-manager Certificate with this secretName does) or fix secretName",
	}, {
		reason: "An Opaque Secret is not a TLS Secret.",
		setup: func() {
			put(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "gw-tls"}, Type: corev1.SecretTypeOpaque,
				Data: map[string][]byte{"tls.crt": good.Cert, "tls.key": good.Key}})
		},
		want: "tunnels[branch-a].certificate.secretName: Secret " + ns + `/gw-tls is of type "Opaque", not kubernetes.io/tls`,
	}, {
		reason: "The CA ConfigMap is missing.",
		setup:  func() { put(tlsSecret(good.Cert, good.Key)) },
		want:   "tunnels[branch-a].certificate.peerCA: ConfigMap " + ns + "/peer-ca does not exist: create it with the peer's CA certificates or fix the name",
	}, {
		reason: "The ConfigMap lacks ca.crt.",
		setup: func() {
			put(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "peer-ca"}, Data: map[string]string{"bundle.pem": string(peerCA.Cert)}})
		},
		want: "ConfigMap " + ns + `/peer-ca has no key "ca.crt" with the CA certificates that sign the peer's certificate: add it (PEM) or fix peerCA.key`,
	}, {
		reason: "A key that is not the certificate's.",
		setup: func() {
			put(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "peer-ca"}, Data: map[string]string{"ca.crt": string(peerCA.Cert)}})
			put(tlsSecret(good.Cert, other.Key))
		},
		want: "Secret " + ns + "/gw-tls key tls.key: the private key does not match the certificate in tls.crt",
	}, {
		reason: "An expired certificate, with its date.",
		setup:  func() { put(tlsSecret(expired.Cert, expired.Key)) },
		want:   "Secret " + ns + "/gw-tls key tls.crt: certificate 1 (C=DE, O=Example AG, CN=gw.example.com): expired at " + expired.Leaf.NotAfter.UTC().Format(time.RFC3339),
	}}
	// An edit of the Gateway retries at once: a Gateway that fails to
	// render backs off (up to a minute), and its Secrets are not watched.
	nudge := func(step int) {
		t.Helper()
		if err := getFresh(ctx, gw); err != nil {
			t.Fatal(err)
		}
		meta := gw.DeepCopy()
		meta.SetAnnotations(map[string]string{"test.ipsecgw.io/step": fmt.Sprint(step)})
		if err := kube.Patch(ctx, meta, client.MergeFrom(gw)); err != nil {
			t.Fatal(err)
		}
	}
	for i, s := range steps {
		s.setup()
		nudge(i)
		eventually(t, time.Minute, fmt.Sprintf("step %d: %s", i, s.reason), func() error {
			if err := getFresh(ctx, gw); err != nil {
				return err
			}
			c := condition(gw, gwv1alpha1.TypeConfigRendered)
			if c.Status != corev1.ConditionFalse || c.Reason != gwv1alpha1.ReasonInvalidCertificate || !strings.Contains(c.Message, s.want) {
				return fmt.Errorf("ConfigRendered = %s/%s %q, want %q", c.Status, c.Reason, c.Message, s.want)
			}
			if sy := condition(gw, xpv2.TypeSynced); sy.Status != corev1.ConditionFalse || !strings.Contains(sy.Message, s.want) {
				return fmt.Errorf("Synced = %s %q", sy.Status, sy.Message)
			}
			return nil
		})
		t.Logf("step %d: %s", i, condition(gw, gwv1alpha1.TypeConfigRendered).Message)
		if err := kube.Get(ctx, client.ObjectKey{Namespace: ns, Name: workload.NamesOf(gwName).Config}, &corev1.ConfigMap{}); !kerrors.IsNotFound(err) {
			t.Errorf("step %d: a ConfigMap exists for a Gateway that never rendered (err %v)", i, err)
		}
	}

	put(tlsSecret(good.Cert, good.Key))
	nudge(len(steps))
	names := workload.NamesOf(gwName)
	cm, sec := &corev1.ConfigMap{}, &corev1.Secret{}
	// Two minutes: after the failures above the Gateway's backoff is at its
	// one-minute ceiling, and a reconcile whose status update loses a
	// conflict (the provider's own writes of the Create) is requeued through
	// that backoff without a log line (crossplane-runtime).
	eventually(t, backoffBound, "the Gateway renders once its Secrets are right", func() error {
		if err := getFresh(ctx, gw); err != nil {
			return err
		}
		if c := condition(gw, gwv1alpha1.TypeConfigRendered); c.Status != corev1.ConditionTrue {
			return fmt.Errorf("ConfigRendered %s: %s", c.Status, c.Message)
		}
		if err := kube.Get(ctx, client.ObjectKey{Namespace: ns, Name: names.Config}, cm); err != nil {
			return err
		}
		return kube.Get(ctx, client.ObjectKey{Namespace: ns, Name: names.Secrets}, sec)
	})
	conf := cm.Data[contract.KeySwanctlConf]
	for _, want := range []string{"auth = pubkey", "cacerts = cacert-branch-a-0", fmt.Sprintf(`id = "asn1dn:#%x"`, good.Leaf.RawSubject)} {
		if !strings.Contains(conf, want) {
			t.Errorf("the ConfigMap's swanctl.conf lacks %q:\n%s", want, conf)
		}
	}
	secrets := string(sec.Data[contract.KeySecrets])
	if !strings.Contains(secrets, fmt.Sprintf("%x", good.Leaf.Raw)) || !strings.Contains(secrets, "private-branch-a") {
		t.Errorf("the gateway's Secret lacks the certificate or the key")
	}

	keys := map[string][]byte{"PEM": good.Key, "PEM line": []byte(strings.Split(string(good.Key), "\n")[1])}
	if tc := mustTunnelCert(t, good, peerCA.Cert); tc != nil {
		keys["rendered"] = []byte(fmt.Sprintf("%x", tc.Key))
	}
	cms := &corev1.ConfigMapList{}
	if err := kube.List(ctx, cms, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	for _, c := range cms.Items {
		b, _ := json.Marshal(c)
		noSecret(t, "ConfigMap "+c.Name, string(b), keys)
		if strings.Contains(string(b), fmt.Sprintf("%x", good.Leaf.Raw)) && c.Name != "peer-ca" {
			t.Errorf("ConfigMap %s holds the gateway's certificate", c.Name)
		}
	}
	b, _ := json.Marshal(gw.Status)
	noSecret(t, "the Gateway's status", string(b), keys)
	events := &corev1.EventList{}
	if err := kube.List(ctx, events); err != nil {
		t.Fatal(err)
	}
	for _, e := range events.Items {
		noSecret(t, "event "+e.Name, e.Message, keys)
	}
	noSecret(t, "the provider's logs", logs.String(), keys)
	if len(logs.String()) == 0 {
		t.Errorf("the provider logged nothing: the log check proves nothing")
	}
}

// getFresh reads gw from the API server into a new object and copies it
// over gw: decoding into the old one would keep fields the new answer
// leaves out (a condition's empty message).
func getFresh(ctx context.Context, gw *gwv1alpha1.Gateway) error {
	got := &gwv1alpha1.Gateway{}
	if err := kube.Get(ctx, client.ObjectKeyFromObject(gw), got); err != nil {
		return err
	}
	*gw = *got
	return nil
}
