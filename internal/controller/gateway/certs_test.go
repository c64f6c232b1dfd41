package gateway

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/ipsecgw/provider-ipsec/apis/cluster/gateway/v1alpha1"
)

// TestTunnelCert proves that what a certificate tunnel names is checked
// before anything renders, with an error that names the field, the object
// and the fix, and never a key's contents (render's tests cover the
// certificates themselves).
func TestTunnelCert(t *testing.T) {
	const key = "-----BEGIN PRIVATE KEY-----\nnot-a-key-but-secret\n-----END PRIVATE KEY-----\n"
	tlsSecret := func(typ corev1.SecretType) *corev1.Secret {
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: testNS, Name: "vpn-tls"}, Type: typ,
			Data: map[string][]byte{corev1.TLSCertKey: []byte("not a certificate"), corev1.TLSPrivateKeyKey: []byte(key)}}
	}
	caCM := func(data map[string]string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: testNS, Name: "peer-ca"}, Data: data}
	}
	caSecret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: testNS, Name: "peer-ca"}, Data: map[string][]byte{"ca.crt": []byte("x")}}
	inCM := v1alpha1.CARef{ConfigMapName: ptr.To("peer-ca")}
	cases := map[string]struct {
		reason string
		objs   []client.Object
		ca     v1alpha1.CARef
		want   string
	}{
		"NoSecret": {
			reason: "A missing certificate Secret says how to make it.",
			ca:     inCM,
			want:   "tunnels[branch-a].certificate.secretName: Secret tenant-a/vpn-tls does not exist",
		},
		"NotTLS": {
			reason: "A certificate Secret of another type is refused.",
			objs:   []client.Object{tlsSecret(corev1.SecretTypeOpaque)},
			ca:     inCM,
			want:   `is of type "Opaque", not kubernetes.io/tls`,
		},
		"NoCARef": {
			reason: "A peer CA reference naming nothing says what to give.",
			objs:   []client.Object{tlsSecret(corev1.SecretTypeTLS)},
			want:   "tunnels[branch-a].certificate.peerCA: give secretName or configMapName",
		},
		"NoCAConfigMap": {
			reason: "A missing CA ConfigMap is named.",
			objs:   []client.Object{tlsSecret(corev1.SecretTypeTLS)},
			ca:     inCM,
			want:   "ConfigMap tenant-a/peer-ca does not exist",
		},
		"NoCASecret": {
			reason: "A missing CA Secret is named.",
			objs:   []client.Object{tlsSecret(corev1.SecretTypeTLS)},
			ca:     v1alpha1.CARef{SecretName: ptr.To("other-ca")},
			want:   "Secret tenant-a/other-ca does not exist",
		},
		"NoCAKey": {
			reason: "A CA ConfigMap without the key names the key.",
			objs:   []client.Object{tlsSecret(corev1.SecretTypeTLS), caCM(map[string]string{"other": "x"})},
			ca:     inCM,
			want:   `ConfigMap tenant-a/peer-ca has no key "ca.crt"`,
		},
		"EmptyCAKey": {
			reason: "A CA ConfigMap whose key is there but empty says so, not that the key is missing.",
			objs:   []client.Object{tlsSecret(corev1.SecretTypeTLS), caCM(map[string]string{"ca.crt": ""})},
			ca:     inCM,
			want:   `ConfigMap tenant-a/peer-ca has the key "ca.crt" for the CA certificates that sign the peer's certificate, but its value is empty`,
		},
		"BadCertificate": {
			reason: "A certificate that does not parse names the Secret.",
			objs:   []client.Object{tlsSecret(corev1.SecretTypeTLS), caSecret},
			ca:     v1alpha1.CARef{SecretName: ptr.To("peer-ca")},
			want:   "tunnels[branch-a].certificate.secretName: Secret tenant-a/vpn-tls",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c := fake.NewClientBuilder().WithObjects(tc.objs...).Build()
			tunnel := v1alpha1.Tunnel{Name: "branch-a", Certificate: &v1alpha1.CertificateAuth{SecretName: "vpn-tls", PeerCA: tc.ca}}
			_, err := tunnelCert(context.Background(), c, testNS, tunnel, time.Now())
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("%s\ntunnelCert(): error %v, want one containing %q", tc.reason, err, tc.want)
			}
			if strings.Contains(err.Error(), "not-a-key-but-secret") {
				t.Errorf("%s\ntunnelCert(): the error carries the private key: %v", tc.reason, err)
			}
		})
	}
}
