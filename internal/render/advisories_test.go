package render

import (
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
			if _, err := Render(in); err != nil {
				t.Fatalf("%s\nan advisory is not an error, but Render() says %v", tc.reason, err)
			}
			if diff := cmp.Diff(tc.want, Advisories(in.Spec), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("%s\nAdvisories(): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}
