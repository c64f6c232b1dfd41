package render

import (
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

// Advisories returns what is accepted in spec but advised against, one
// sentence per finding, each naming the field and what to do: weak DH
// groups, CHILD_SA lifetimes under 5 minutes, IKEv1. They are not errors:
// the gateway renders and runs; the provider reports them as warnings in
// the Gateway's status and as a Warning event. Empty when there is none.
func Advisories(spec v1alpha1.GatewayParameters) []string {
	var out []string
	for _, t := range spec.Tunnels {
		path := fmt.Sprintf("tunnels[%s]", t.Name)
		if t.IKEVersion == 1 {
			out = append(out, path+".ikeVersion: IKEv1 is deprecated (RFC 9395) and lacks IKEv2's DoS protection and rekeying of CHILD_SAs without a new key exchange; move the peer to ikeVersion 2 when it allows")
		}
		for _, f := range []struct {
			field     string
			proposals []string
		}{{"ikeProposals", t.IKEProposals}, {"espProposals", t.ESPProposals}} {
			for i, p := range f.proposals {
				for tok := range strings.SplitSeq(p, "-") {
					if weakDH[tok] {
						out = append(out, fmt.Sprintf("%s.%s[%d]: %s is a weak DH group (RFC 8247): offer ecp256, curve25519 or modp3072 once the peer supports one", path, f.field, i, tok))
					}
				}
			}
		}
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
