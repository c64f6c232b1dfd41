package render

import (
	"crypto/sha256"
	"fmt"
	"strings"
	"time"

	"github.com/ipsecgw/provider-ipsec/apis/cluster/gateway/v1alpha1"
)

// weakDH are the DH groups RFC 8247 says not to use any more (768 and
// 1024 bit MODP, the 1024 bit group with a 160 bit subgroup) or that fall
// short of its 2048 bit minimum for MODP (1536): accepted, for peers that
// offer nothing better, with an advisory.
var weakDH = map[string]bool{"modp768": true, "modp1024": true, "modp1024s160": true, "modp1536": true}

// shortChildLife is the CHILD_SA rekey or life time under which an advisory
// is given: rekeying every few minutes loads both peers and makes rekey
// collisions likely, and is seldom meant.
const shortChildLife = 5 * time.Minute

// advisories returns what is accepted in in but advised against, one
// sentence per finding, each naming the field and what to do: weak DH
// groups, CHILD_SA lifetimes under 5 minutes, IKEv1, an ECDSA certificate
// towards an IKEv1 peer, AEAD proposals with an integrity algorithm, a PSK
// shared by tunnels. They are not errors: the gateway renders and runs;
// the provider reports them (Files.Advisories) as warnings in the
// Gateway's status and as a Warning event. Empty when there is none. No
// advisory holds a PSK or a part of one.
func advisories(in Input) []string {
	var out []string
	psks := map[[sha256.Size]byte]string{}
	for _, t := range in.Spec.Tunnels {
		path := fmt.Sprintf("tunnels[%s]", t.Name)
		if t.IKEVersion == 1 {
			out = append(out, path+".ikeVersion: IKEv1 is deprecated (RFC 9395) and lacks IKEv2's DoS protection and rekeying of CHILD_SAs without a new key exchange; move the peer to ikeVersion 2 when it allows")
			if tc := in.Certs[t.Name]; t.Certificate != nil && tc != nil && tc.KeyType == KeyTypeECDSA {
				out = append(out, fmt.Sprintf("%s.certificate.secretName: the certificate in Secret %s has an ECDSA key, and many IKEv1 peers authenticate with RSA signatures only (IKEv1 has no way to agree on the signature scheme), so IKE_AUTH fails at such a peer; unless the peer is known to take ECDSA, issue an RSA certificate (cert-manager: privateKey.algorithm RSA)", path, t.Certificate.SecretName))
			}
		}
		if psk, ok := in.PSKs[t.Name]; ok && t.Certificate == nil && len(psk) > 0 {
			// Compared by digest: the key itself is kept in no map
			// and goes into no message.
			sum := sha256.Sum256(psk)
			if other, dup := psks[sum]; dup {
				out = append(out, fmt.Sprintf("%s.preSharedKeySecretRef: the same pre-shared key as tunnel %s: whoever learns it at either peer can impersonate this gateway to the other; give each tunnel a key of its own", path, other))
			} else {
				psks[sum] = t.Name
			}
		}
		out = append(out, proposalAdvisories(path+".ikeProposals", t.IKEProposals)...)
		out = append(out, proposalAdvisories(path+".espProposals", t.ESPProposals)...)
		for _, d := range []struct {
			field string
			d     *v1alpha1.Duration
		}{{"childLifetime.rekeyTime", t.ChildLifetime.RekeyTime}, {"childLifetime.lifeTime", t.ChildLifetime.LifeTime}} {
			if d.d == nil {
				continue
			}
			if v, err := d.d.Duration(); err == nil && v > 0 && v < shortChildLife {
				out = append(out, fmt.Sprintf("%s.%s: %s is under 5m: CHILD_SAs renewed that often load both peers and make rekey collisions likely; 1h is usual", path, d.field, string(*d.d)))
			}
		}
	}
	return out
}

// proposalAdvisories returns the advisories of the proposals of the field
// at path: weak DH groups, and AEAD beside an integrity algorithm, which
// charon drops from the proposal.
func proposalAdvisories(path string, proposals []string) []string {
	var out []string
	for i, p := range proposals {
		var aeadAlg string
		var integ []string
		for tok := range strings.SplitSeq(p, "-") {
			if weakDH[tok] {
				out = append(out, fmt.Sprintf("%s[%d]: %s is a weak DH group (RFC 8247): offer ecp256, curve25519 or modp3072 once the peer supports one", path, i, tok))
			}
			if k := keywords[tok]; k == aead {
				aeadAlg = tok
			} else if k == integrity || k == integrityESP {
				integ = append(integ, tok)
			}
		}
		if aeadAlg != "" && len(integ) > 0 {
			out = append(out, fmt.Sprintf("%s[%d]: %s protects integrity itself, and charon drops %s from the proposal: the peer is offered %s without it; remove %s, or write a non-AEAD proposal of its own if the peer expects one", path, i, aeadAlg, strings.Join(integ, ", "), aeadAlg, strings.Join(integ, ", ")))
		}
	}
	return out
}
