package migrate

import (
	"fmt"
	"strings"

	"github.com/ipsecgw/provider-ipsec/internal/render"
)

// strongSwan 5.9's default proposals, measured from Debian 12's charon
// 5.9.8 with its stock plugins (swanctl proposals = default, logged at cfg
// level 2): what a charon proposes and accepts for an ipsec.conf ike=/esp=
// without '!' besides the configured ones, and for none at all.
const (
	// defaultIKE is charon's first default IKE proposal; 38 transforms,
	// longer than the 128 characters the API allows a proposal.
	defaultIKE = "aes128-aes192-aes256-aes128ctr-aes192ctr-aes256ctr-camellia128-camellia192-camellia256-" +
		"camellia128ctr-camellia192ctr-camellia256ctr-3des-sha256-sha384-sha512-aesxcbc-aescmac-sha1-" +
		"prfsha256-prfsha384-prfsha512-prfaesxcbc-prfaescmac-prfsha1-curve25519-curve448-ecp256-ecp384-" +
		"ecp521-ecp256bp-ecp384bp-ecp512bp-modp3072-modp4096-modp6144-modp8192-modp2048"
	// defaultIKEAEAD is charon's second default IKE proposal.
	defaultIKEAEAD = "aes128ccm16-aes192ccm16-aes256ccm16-aes128gcm16-aes192gcm16-aes256gcm16-chacha20poly1305-" +
		"aes128ccm8-aes192ccm8-aes256ccm8-aes128ccm12-aes192ccm12-aes256ccm12-aes128gcm8-aes192gcm8-" +
		"aes256gcm8-aes128gcm12-aes192gcm12-aes256gcm12-prfsha256-prfsha384-prfsha512-prfaesxcbc-" +
		"prfaescmac-prfsha1-curve25519-curve448-ecp256-ecp384-ecp521-ecp256bp-ecp384bp-ecp512bp-" +
		"modp3072-modp4096-modp6144-modp8192-modp2048"
	// carriedIKE and carriedIKEAEAD are the parts of the two that the API
	// can carry (128 characters each): the algorithms of at least 128 bits'
	// strength that peers negotiate in practice.
	carriedIKE     = "aes128-aes192-aes256-sha256-sha384-sha512-prfsha256-prfsha384-prfsha512-curve25519-ecp256-ecp384-ecp521-modp3072-modp2048"
	carriedIKEAEAD = "aes128gcm16-aes192gcm16-aes256gcm16-chacha20poly1305-prfsha256-prfsha384-prfsha512-curve25519-ecp256-ecp384-modp3072-modp2048"
)

// defaultESP are charon's default ESP proposals, which the API carries as
// they are.
var defaultESP = []string{"aes128-aes192-aes256-sha256-sha384-sha512-sha1-aesxcbc", "aes128gcm16-aes192gcm16-aes256gcm16"}

// maxProposal is the API's limit on a proposal's length (characters).
const maxProposal = 128

// proposalList splits an ipsec.conf proposal list ("a-b-c,d-e!") into its
// proposals and whether it is strict ('!': the daemon's defaults are not
// appended).
func proposalList(v string) ([]string, bool) {
	v = strings.TrimSpace(v)
	strict := strings.HasSuffix(v, "!")
	v = strings.TrimSuffix(v, "!")
	var out []string
	for p := range strings.SplitSeq(v, ",") {
		if p = strings.ToLower(strings.TrimSpace(p)); p != "" {
			out = append(out, p)
		}
	}
	return out, strict
}

// unknownKeyword returns the first keyword of proposal p the API's keyword
// list (internal/render) does not hold, or "".
func unknownKeyword(p string) string {
	kw := render.Keywords()
	for tok := range strings.SplitSeq(p, "-") {
		if _, ok := kw[tok]; !ok {
			return tok
		}
	}
	return ""
}

// convertProposals turns a conn's ike= or esp= value into the API's list
// and reports it. setting names the keyword (ike, esp), from where it was
// written ("" for none: the daemon's defaults). A proposal the API cannot
// carry is left out and reported as refused; the daemon's defaults, appended
// without '!', are carried for ESP and approximated for IKE.
func convertProposals(r *Report, tunnel, setting, value, from string, ike bool) []string {
	var props []string
	strict := false
	if value != "" {
		props, strict = proposalList(value)
	}
	var out []string
	for _, p := range props {
		if tok := unknownKeyword(p); tok != "" || len(p) > maxProposal {
			r.add(Finding{Tunnel: tunnel, Setting: setting, Value: p, Outcome: Refused, From: from,
				Detail: fmt.Sprintf("the API refuses the proposal (keyword %q or longer than %d characters): left out; a peer that negotiated it fails to connect", tok, maxProposal)})
			continue
		}
		out = append(out, p)
	}
	if len(props) > 0 {
		r.add(Finding{Tunnel: tunnel, Setting: setting, Value: value, Outcome: Converted, From: from,
			Detail: fmt.Sprintf("proposals in the VM's order: %s", strings.Join(out, ", "))})
	}
	if strict {
		return out
	}
	what := "appended to the configured ones (no '!')"
	if len(props) == 0 {
		what = "the only ones (no " + setting + "=)"
	}
	if !ike {
		out = append(out, defaultESP...)
		r.add(Finding{Tunnel: tunnel, Setting: setting + " (daemon defaults)", Outcome: Converted,
			Detail: "strongSwan 5.9's default ESP proposals, " + what + ": " + strings.Join(defaultESP, ", ")})
		return out
	}
	out = append(out, carriedIKE, carriedIKEAEAD)
	r.add(Finding{Tunnel: tunnel, Setting: setting + " (daemon defaults)", Outcome: Approximated,
		Detail: "strongSwan 5.9's default IKE proposals, " + what + ", are " + defaultIKE + " and " + defaultIKEAEAD +
			"; the API allows 128 characters a proposal, so the gateway offers their common part " + carriedIKE + " and " + carriedIKEAEAD +
			": a peer that negotiated CTR, Camellia, 3DES, CCM, AES-GCM with 8 or 12 byte ICVs, SHA-1 or XCBC/CMAC integrity, curve448, Brainpool or MODP 4096-8192 with the VM fails to connect (the VM's `ipsec statusall` shows the negotiated one)"})
	return out
}
