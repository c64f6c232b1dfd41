package render

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"k8s.io/utils/ptr"

	"github.com/ipsecgw/provider-ipsec/apis/cluster/gateway/v1alpha1"
)

func TestAdvisories(t *testing.T) {
	cases := map[string]struct {
		reason string
		mod    func(*Input)
		want   []string
	}{
		"None": {
			reason: "The base gateway (IKEv2, modp2048, default lifetimes) has no advisory.",
			mod:    func(*Input) {},
		},
		"WeakDH": {
			reason: "modp1024 and modp1536 in IKE or ESP proposals are named by field; modp2048 is not.",
			mod: func(in *Input) {
				in.Spec.Tunnels[0].IKEProposals = []string{"aes256-sha256-modp2048", "aes128-sha1-modp1024"}
				in.Spec.Tunnels[1].ESPProposals = []string{"aes256gcm16-modp1536"}
			},
			want: []string{
				"tunnels[a].ikeProposals[1]: modp1024 is a weak DH group (RFC 8247): offer ecp256, curve25519 or modp3072 once the peer supports one",
				"tunnels[b].espProposals[0]: modp1536 is a weak DH group (RFC 8247): offer ecp256, curve25519 or modp3072 once the peer supports one",
			},
		},
		"ShortChildLifetime": {
			reason: "A CHILD_SA rekey or life time under 5m is advised against; 5m is not.",
			mod: func(in *Input) {
				in.Spec.Tunnels[0].ChildLifetime = v1alpha1.ChildLifetime{RekeyTime: ptr.To[v1alpha1.Duration]("2m"), LifeTime: ptr.To[v1alpha1.Duration]("4m59s")}
				in.Spec.Tunnels[1].ChildLifetime = v1alpha1.ChildLifetime{RekeyTime: ptr.To[v1alpha1.Duration]("5m")}
			},
			want: []string{
				"tunnels[a].childLifetime.rekeyTime: 2m is under 5m: CHILD_SAs renewed that often load both peers and make rekey collisions likely; 1h is usual",
				"tunnels[a].childLifetime.lifeTime: 4m59s is under 5m: CHILD_SAs renewed that often load both peers and make rekey collisions likely; 1h is usual",
			},
		},
		"ECDSAToIKEv1": {
			reason: "An ECDSA gateway certificate (the golden cert-tunnel's, as cert-manager's example issues) on an IKEv1 tunnel is advised against; on the IKEv2 tunnel beside it, not.",
			mod: func(in *Input) {
				for i := range in.Spec.Tunnels {
					in.Spec.Tunnels[i].PreSharedKeySecretRef = nil
					in.Spec.Tunnels[i].Certificate = &v1alpha1.CertificateAuth{SecretName: "gw-tls", PeerCA: v1alpha1.CARef{SecretName: ptr.To("peer-ca")}, RemoteID: v1alpha1.Identity{FQDN: ptr.To("peer.example")}}
					in.Certs = goldenCerts(t, "cert-tunnel", in.Certs, in.Spec.Tunnels[i].Name)
				}
				in.Spec.Tunnels[0].IKEVersion = 1
			},
			want: []string{
				"tunnels[a].ikeVersion: IKEv1 is deprecated (RFC 9395) and lacks IKEv2's DoS protection and rekeying of CHILD_SAs without a new key exchange; move the peer to ikeVersion 2 when it allows",
				"tunnels[a].certificate.secretName: the certificate in Secret gw-tls has an ECDSA key, and many IKEv1 peers authenticate with RSA signatures only (IKEv1 has no way to agree on the signature scheme), so IKE_AUTH fails at such a peer; unless the peer is known to take ECDSA, issue an RSA certificate (cert-manager: privateKey.algorithm RSA)",
			},
		},
		"AEADWithIntegrity": {
			reason: "GCM (ESP) or ChaCha20-Poly1305 (IKE, with a PRF) beside an integrity algorithm: charon drops the integrity algorithm, said per proposal; AEAD alone and non-AEAD with integrity are not.",
			mod: func(in *Input) {
				in.Spec.Tunnels[0].ESPProposals = []string{"aes256gcm16-sha256-sha2_256_96", "aes128gcm16", "aes256-sha256"}
				in.Spec.Tunnels[1].IKEProposals = []string{"chacha20poly1305-sha384-prfsha384-ecp256"}
			},
			want: []string{
				"tunnels[a].espProposals[0]: aes256gcm16 protects integrity itself, and charon drops sha256, sha2_256_96 from the proposal: the peer is offered aes256gcm16 without it; remove sha256, sha2_256_96, or write a non-AEAD proposal of its own if the peer expects one",
				"tunnels[b].ikeProposals[0]: chacha20poly1305 protects integrity itself, and charon drops sha384 from the proposal: the peer is offered chacha20poly1305 without it; remove sha384, or write a non-AEAD proposal of its own if the peer expects one",
			},
		},
		"SamePSK": {
			reason: "Two tunnels of three with the same PSK: the second is named with the first, the key in no advisory; a third tunnel with a key of its own is not named.",
			mod: func(in *Input) {
				c := in.Spec.Tunnels[1]
				c.Name, c.Peer.Address, c.TrafficSelectors = "c", "198.51.100.3", []v1alpha1.TrafficSelector{{Local: "100.64.2.0/24", Remote: "192.168.3.0/24"}}
				in.Spec.Tunnels = append(in.Spec.Tunnels, c)
				in.PSKs["b"], in.PSKs["c"] = in.PSKs["a"], []byte("psk-key-c")
			},
			want: []string{"tunnels[b].preSharedKeySecretRef: the same pre-shared key as tunnel a: whoever learns it at either peer can impersonate this gateway to the other; give each tunnel a key of its own"},
		},
		"IKEv1": {
			reason: "An IKEv1 tunnel is advised to move to IKEv2.",
			mod:    func(in *Input) { in.Spec.Tunnels[1].IKEVersion = 1 },
			want:   []string{"tunnels[b].ikeVersion: IKEv1 is deprecated (RFC 9395) and lacks IKEv2's DoS protection and rekeying of CHILD_SAs without a new key exchange; move the peer to ikeVersion 2 when it allows"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			in := valid()
			tc.mod(&in)
			f, err := Render(in)
			if err != nil {
				t.Fatalf("%s\nan advisory is not an error, but Render() says %v", tc.reason, err)
			}
			if diff := cmp.Diff(tc.want, f.Advisories, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("%s\nRender().Advisories: -want, +got:\n%s", tc.reason, diff)
			}
			for _, a := range f.Advisories {
				for name, psk := range in.PSKs {
					if strings.Contains(a, string(psk)) {
						t.Errorf("%s\nan advisory holds tunnel %s's PSK: %s", tc.reason, name, a)
					}
				}
			}
		})
	}
}
