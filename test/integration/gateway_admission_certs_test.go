//go:build integration

package integration

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	gwv1alpha1 "github.com/ipsecgw/provider-ipsec/apis/cluster/gateway/v1alpha1"
)

// TestGatewayAdmissionCertificate checks a tunnel's authentication rules
// at the real API server (dry-run creates): exactly one of the PSK and the
// certificate, no peer.id beside a certificate, exactly one CA source and
// one kind of identity, each refusal naming the fields, and every rule safe
// with the optional fields (localId, the CA key) left out; the CA key
// defaults to ca.crt.
func TestGatewayAdmissionCertificate(t *testing.T) {
	cert := func(tn *gwv1alpha1.Tunnel) {
		tn.PreSharedKeySecretRef = nil
		tn.Certificate = &gwv1alpha1.CertificateAuth{
			SecretName: "gw-tls", PeerCA: gwv1alpha1.CARef{SecretName: ptr.To("peer-ca")},
			RemoteID: gwv1alpha1.Identity{DN: ptr.To("C=CH, O=Peer AG, CN=vpn.peer.example")},
		}
	}
	cases := map[string]struct {
		reason string
		mod    func(*gwv1alpha1.Tunnel)
		// wantErr is a substring of the refusal; "" means admitted.
		wantErr string
	}{
		"PSK": {
			reason: "A PSK tunnel as before.",
			mod:    func(*gwv1alpha1.Tunnel) {},
		},
		"Certificate": {
			reason: "A certificate tunnel without the optional localId and CA key.",
			mod:    cert,
		},
		"CertificateFull": {
			reason: "A certificate tunnel with every field: a ConfigMap CA with its key, an FQDN localId, an email remoteId.",
			mod: func(tn *gwv1alpha1.Tunnel) {
				cert(tn)
				tn.Certificate.PeerCA = gwv1alpha1.CARef{ConfigMapName: ptr.To("bundle"), Key: "bundle.pem"}
				tn.Certificate.LocalID = &gwv1alpha1.Identity{FQDN: ptr.To("gw.example.com")}
				tn.Certificate.RemoteID = gwv1alpha1.Identity{Email: ptr.To("vpn@peer.example")}
			},
		},
		"Both": {
			reason:  "A PSK and a certificate at once.",
			mod:     func(tn *gwv1alpha1.Tunnel) { psk := tn.PreSharedKeySecretRef; cert(tn); tn.PreSharedKeySecretRef = psk },
			wantErr: "give exactly one of preSharedKeySecretRef (a pre-shared key) and certificate (X.509 certificates)",
		},
		"Neither": {
			reason:  "No authentication at all.",
			mod:     func(tn *gwv1alpha1.Tunnel) { tn.PreSharedKeySecretRef = nil },
			wantErr: "give exactly one of preSharedKeySecretRef (a pre-shared key) and certificate (X.509 certificates)",
		},
		"PeerID": {
			reason:  "peer.id beside a certificate, whose remoteId is the peer's identity.",
			mod:     func(tn *gwv1alpha1.Tunnel) { cert(tn); tn.Peer.ID = "vpn.peer.example" },
			wantErr: "spec.forProvider.tunnels[0].peer.id: Invalid value: with certificate the peer's identity is certificate.remoteId",
		},
		"TwoCASources": {
			reason:  "A Secret and a ConfigMap as the CA.",
			mod:     func(tn *gwv1alpha1.Tunnel) { cert(tn); tn.Certificate.PeerCA.ConfigMapName = ptr.To("bundle") },
			wantErr: "spec.forProvider.tunnels[0].certificate.peerCA: Invalid value: give exactly one of secretName and configMapName",
		},
		"NoCASource": {
			reason:  "No CA.",
			mod:     func(tn *gwv1alpha1.Tunnel) { cert(tn); tn.Certificate.PeerCA = gwv1alpha1.CARef{} },
			wantErr: "give exactly one of secretName and configMapName",
		},
		"TwoIdentities": {
			reason:  "A DN and an FQDN in one identity.",
			mod:     func(tn *gwv1alpha1.Tunnel) { cert(tn); tn.Certificate.RemoteID.FQDN = ptr.To("vpn.peer.example") },
			wantErr: "spec.forProvider.tunnels[0].certificate.remoteId: Invalid value: give exactly one of dn, fqdn, email and ip",
		},
		"EmptyIdentity": {
			reason:  "An empty localId.",
			mod:     func(tn *gwv1alpha1.Tunnel) { cert(tn); tn.Certificate.LocalID = &gwv1alpha1.Identity{} },
			wantErr: "spec.forProvider.tunnels[0].certificate.localId: Invalid value: give exactly one of dn, fqdn, email and ip",
		},
		"DNWithoutAttributes": {
			reason:  "A DN that is no attribute=value list.",
			mod:     func(tn *gwv1alpha1.Tunnel) { cert(tn); tn.Certificate.RemoteID.DN = ptr.To("vpn.peer.example") },
			wantErr: "a DN is a list of attribute=value",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			spec := gatewaySpec("tenant-a")
			tc.mod(&spec.Tunnels[0])
			gw := &gwv1alpha1.Gateway{ObjectMeta: metav1.ObjectMeta{Name: "admission-" + strings.ToLower(name)}, Spec: gwv1alpha1.GatewaySpec{ForProvider: spec}}
			admission(t, gw, tc.reason, tc.wantErr)
			if c := gw.Spec.ForProvider.Tunnels[0].Certificate; tc.wantErr == "" && c != nil && c.PeerCA.Key == "" {
				t.Errorf("%s\npeerCA.key after admission is empty, want the default ca.crt", tc.reason)
			}
		})
	}
}
