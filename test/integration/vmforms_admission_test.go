//go:build integration

package integration

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	gwv1alpha1 "github.com/ipsecgw/provider-ipsec/apis/cluster/gateway/v1alpha1"
)

// TestGatewayAdmissionVMForms checks, at the real API server (dry-run
// creates), the settings VM gateways' files hold (issue 32): a proposal
// mixing AEAD and non-AEAD encryption, which charon refuses to load, is
// refused naming the field; strongSwan's keywords with '_', peer
// identities with '@' or '_', DNs (a multi-valued RDN, the DER form) and a
// certificate's IP identity are admitted.
func TestGatewayAdmissionVMForms(t *testing.T) {
	const mixed = "a proposal mixes AEAD encryption (such as aes256gcm16 or aes128gmac) with non-AEAD encryption (such as aes256): charon refuses to load it"
	cert := func(local gwv1alpha1.Identity, remote gwv1alpha1.Identity) func(*gwv1alpha1.Tunnel) {
		return func(tn *gwv1alpha1.Tunnel) {
			tn.PreSharedKeySecretRef = nil
			tn.Certificate = &gwv1alpha1.CertificateAuth{SecretName: "gw-tls", PeerCA: gwv1alpha1.CARef{SecretName: ptr.To("peer-ca")}, LocalID: &local, RemoteID: remote}
		}
	}
	cases := map[string]struct {
		reason string
		mod    func(*gwv1alpha1.Tunnel)
		// wantErr is a substring of the refusal; "" means admitted.
		wantErr string
	}{
		"MixedESP": {
			reason:  "GCM after a non-AEAD cipher and its integrity algorithm, in an ESP proposal, is refused at espProposals.",
			mod:     func(tn *gwv1alpha1.Tunnel) { tn.ESPProposals = []string{"aes256gcm16", "aes256-sha256-aes256gcm16"} },
			wantErr: "spec.forProvider.tunnels[0].espProposals: Invalid value: " + mixed,
		},
		"MixedESPGMAC": {
			reason:  "GMAC (AEAD, authentication only) beside a non-AEAD cipher and a DH group is refused.",
			mod:     func(tn *gwv1alpha1.Tunnel) { tn.ESPProposals = []string{"aes128-md5-modp2048s256-aes128gmac"} },
			wantErr: mixed,
		},
		"MixedESPGMACFirst": {
			reason:  "The AEAD algorithm first changes nothing.",
			mod:     func(tn *gwv1alpha1.Tunnel) { tn.ESPProposals = []string{"aes128gmac-aes256-sha256"} },
			wantErr: mixed,
		},
		"MixedIKE": {
			reason:  "An IKE proposal with both, PRF and DH group given, is refused at ikeProposals.",
			mod:     func(tn *gwv1alpha1.Tunnel) { tn.IKEProposals = []string{"aes256-sha256-aes256gcm16-prfsha256-ecp256"} },
			wantErr: "spec.forProvider.tunnels[0].ikeProposals: Invalid value: " + mixed,
		},
		"AEADAndCTRNotMixedByName": {
			reason: "Two AEAD algorithms, or two non-AEAD ones, share a proposal: aes128ccm12 is AEAD, aes256ctr is not but stands beside camellia alone.",
			mod: func(tn *gwv1alpha1.Tunnel) {
				tn.ESPProposals = []string{"aes256gcm16-aes128ccm12-chacha20poly1305", "aes256ctr-camellia256-sha256"}
			},
		},
		"Underscores": {
			reason: "strongSwan's keywords with '_' (sha2_256, sha256_96, sha2_256_96) are admitted.",
			mod: func(tn *gwv1alpha1.Tunnel) {
				tn.IKEProposals = []string{"aes256-sha2_256-modp2048"}
				tn.ESPProposals = []string{"aes256-sha256_96", "aes128-sha2_256_96-modp2048"}
			},
		},
		"PeerIDAt": {
			reason: "A peer identity with strongSwan's '@' is admitted.",
			mod:    func(tn *gwv1alpha1.Tunnel) { tn.Peer.ID = "@fw.example.net" },
		},
		"PeerIDUnderscore": {
			reason: "A peer identity with '_' is admitted.",
			mod:    func(tn *gwv1alpha1.Tunnel) { tn.Peer.ID = "fw_1.example.net" },
		},
		"PeerIDDN": {
			reason: "A DN peer identity with a multi-valued RDN and escapes is admitted.",
			mod:    func(tn *gwv1alpha1.Tunnel) { tn.Peer.ID = `C=DE, O=Example\, Inc, OU=Net + CN=rtr1.example.net` },
		},
		"PeerIDDER": {
			reason: "A DN peer identity as asn1dn:# and DER hex is admitted.",
			mod:    func(tn *gwv1alpha1.Tunnel) { tn.Peer.ID = "asn1dn:#300f310d300b06035504030c0472747231" },
		},
		"PeerIDSpace": {
			reason:  "A peer identity of none of the forms is refused.",
			mod:     func(tn *gwv1alpha1.Tunnel) { tn.Peer.ID = "fw example" },
			wantErr: "spec.forProvider.tunnels[0].peer.id: Invalid value",
		},
		"CertificateLocalIP": {
			reason: "certificate.localId may be an IP address (the floating IP); the remote identity a DN in the DER form.",
			mod:    cert(gwv1alpha1.Identity{IP: ptr.To[gwv1alpha1.IPv4]("203.0.113.10")}, gwv1alpha1.Identity{DN: ptr.To("asn1dn:#300f310d300b06035504030c0472747231")}),
		},
		"CertificateRemoteMultiRDN": {
			reason: "A multi-valued RDN in certificate.remoteId is admitted.",
			mod:    cert(gwv1alpha1.Identity{FQDN: ptr.To("gw.example.com")}, gwv1alpha1.Identity{DN: ptr.To("O=Example AG, OU=Net + CN=rtr1")}),
		},
		"CertificateIPAndFQDN": {
			reason:  "ip counts as one of the identity's kinds: with fqdn beside it, refused.",
			mod:     cert(gwv1alpha1.Identity{IP: ptr.To[gwv1alpha1.IPv4]("203.0.113.10"), FQDN: ptr.To("gw.example.com")}, gwv1alpha1.Identity{FQDN: ptr.To("peer.example")}),
			wantErr: "give exactly one of dn, fqdn, email and ip",
		},
		"CertificateIPv6": {
			reason:  "ip is an IPv4 address.",
			mod:     cert(gwv1alpha1.Identity{IP: ptr.To[gwv1alpha1.IPv4]("2001:db8::1")}, gwv1alpha1.Identity{FQDN: ptr.To("peer.example")}),
			wantErr: "spec.forProvider.tunnels[0].certificate.localId.ip: Invalid value",
		},
		"CertificateDERNotHex": {
			reason:  "A DN neither attribute=value nor asn1dn:#<hex> is refused.",
			mod:     cert(gwv1alpha1.Identity{FQDN: ptr.To("gw.example.com")}, gwv1alpha1.Identity{DN: ptr.To("asn1dn:#zz")}),
			wantErr: "or asn1dn:# and the hex of its DER",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			spec := gatewaySpec("tenant-a")
			tc.mod(&spec.Tunnels[0])
			gw := &gwv1alpha1.Gateway{ObjectMeta: metav1.ObjectMeta{Name: "vmforms-" + strings.ToLower(name)}, Spec: gwv1alpha1.GatewaySpec{ForProvider: spec}}
			admission(t, gw, tc.reason, tc.wantErr)
		})
	}
}
