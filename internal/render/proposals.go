package render

import (
	"fmt"
	"strings"
)

// kind of a proposal keyword, as strongSwan's proposal parser classifies it
// (https://docs.strongswan.org/docs/5.9/config/IKEv2CipherSuites.html).
type kind int

const (
	encryption kind = iota
	aead            // an encryption algorithm that also protects integrity
	integrity
	integrityESP // truncated HMACs for ESP only (Linux' pre-RFC 4868 SHA-256)
	prf
	dhGroup
	esn
)

// keywords are the proposal keywords of strongSwan 5.9 that the provider
// accepts. The integration test loads every one of them into a real charon.
var keywords = func() map[string]kind {
	m := map[string]kind{
		"3des": encryption, "cast128": encryption, "blowfish128": encryption, "blowfish192": encryption,
		"blowfish256": encryption, "aes": encryption, "aes128": encryption, "aes192": encryption,
		"aes256": encryption, "aes128ctr": encryption, "aes192ctr": encryption, "aes256ctr": encryption,
		"camellia": encryption, "camellia128": encryption, "camellia192": encryption, "camellia256": encryption,
		"null":             encryption,
		"chacha20poly1305": aead,
		// AES-GMAC: authentication only, no confidentiality (ESP).
		"aes128gmac": aead, "aes192gmac": aead, "aes256gmac": aead,

		"md5": integrity, "md5_128": integrity, "sha1": integrity, "sha": integrity, "sha1_160": integrity,
		"sha256": integrity, "sha2_256": integrity, "sha256_96": integrityESP, "sha2_256_96": integrityESP,
		"sha384": integrity, "sha2_384": integrity, "sha512": integrity, "sha2_512": integrity,
		"aesxcbc": integrity, "aescmac": integrity,

		"prfmd5": prf, "prfsha1": prf, "prfsha256": prf, "prfsha384": prf, "prfsha512": prf,
		"prfaesxcbc": prf, "prfaescmac": prf,

		"modp768": dhGroup, "modp1024": dhGroup, "modp1536": dhGroup, "modp2048": dhGroup,
		"modp3072": dhGroup, "modp4096": dhGroup, "modp6144": dhGroup, "modp8192": dhGroup,
		"modp1024s160": dhGroup, "modp2048s224": dhGroup, "modp2048s256": dhGroup,
		"ecp192": dhGroup, "ecp224": dhGroup, "ecp256": dhGroup, "ecp384": dhGroup, "ecp521": dhGroup,
		"ecp224bp": dhGroup, "ecp256bp": dhGroup, "ecp384bp": dhGroup, "ecp512bp": dhGroup,
		"curve25519": dhGroup, "x25519": dhGroup, "curve448": dhGroup, "x448": dhGroup,

		"esn": esn, "noesn": esn,
	}
	// AES-CCM and AES-GCM with 8, 12 and 16 byte ICVs, also named by bits.
	for _, mode := range []string{"ccm", "gcm"} {
		for _, size := range []string{"128", "192", "256"} {
			for _, icv := range []string{"8", "12", "16", "64", "96", "128"} {
				m["aes"+size+mode+icv] = aead
			}
		}
	}
	return m
}()

// checkProposal checks one proposal string such as
// "aes256-sha256-modp2048". ike says whether it is an IKE proposal, which
// needs a DH group; an ESP proposal may omit it (no PFS). Non-AEAD
// encryption needs an integrity algorithm, and AEAD and non-AEAD
// encryption algorithms cannot share a proposal (charon refuses to load
// it: write them as two proposals). The error names the keyword.
func checkProposal(p string, ike bool) error {
	var has [esn + 1]bool
	for tok := range strings.SplitSeq(p, "-") {
		k, ok := keywords[tok]
		if !ok {
			return fmt.Errorf("%q is not a strongSwan proposal keyword", tok)
		}
		if ike && (k == esn || k == integrityESP) {
			return fmt.Errorf("%q applies to ESP only", tok)
		}
		if !ike && k == prf {
			return fmt.Errorf("%q applies to IKE only", tok)
		}
		if k == integrityESP {
			k = integrity
		}
		has[k] = true
	}
	return incomplete(has, ike, p)
}

// incomplete says what proposal p, whose keywords are of the kinds has
// marks, lacks, or nil when it lacks nothing.
func incomplete(has [esn + 1]bool, ike bool, p string) error {
	switch {
	case !has[encryption] && !has[aead]:
		return fmt.Errorf("no encryption algorithm")
	case has[encryption] && has[aead]:
		// charon's proposal check refuses a proposal holding both,
		// and with it the whole connection (load-conn fails, the
		// agent keeps the configuration it had).
		return fmt.Errorf("mixes AEAD encryption (%s) with non-AEAD encryption: charon refuses to load such a proposal; write them as two proposals, such as %s", aeadOf(p), splitAEAD(p, ike))
	case has[encryption] && !has[integrity]:
		return fmt.Errorf("no integrity algorithm for non-AEAD encryption")
	case ike && !has[dhGroup]:
		return fmt.Errorf("no DH group")
	case ike && has[aead] && !has[prf] && !has[integrity]:
		// charon takes an IKE proposal's PRF from its integrity
		// algorithm when none is given; an AEAD proposal has none.
		return fmt.Errorf("an AEAD IKE proposal needs a PRF, such as %s-prfsha256-...: charon refuses it (a PRF algorithm is mandatory in IKE proposals)", aeadOf(p))
	}
	return nil
}

// aeadOf returns the AEAD keyword of proposal p (for a message).
func aeadOf(p string) string {
	for tok := range strings.SplitSeq(p, "-") {
		if keywords[tok] == aead {
			return tok
		}
	}
	return ""
}

// splitAEAD writes mixed proposal p as the two proposals charon loads,
// for a message: the non-AEAD one, and the AEAD one without integrity
// algorithms (AEAD does not use them) but, in IKE (ike), with a PRF, the
// one charon would have derived from the first integrity algorithm when p
// names none.
func splitAEAD(p string, ike bool) string {
	var aeads, rest, without []string
	hasPRF, derived := false, ""
	for tok := range strings.SplitSeq(p, "-") {
		switch k := keywords[tok]; k {
		case aead:
			aeads = append(aeads, tok)
		case encryption, integrity, integrityESP:
			without = append(without, tok)
			if k == integrity && derived == "" {
				derived = prfOf[tok]
			}
		default:
			hasPRF = hasPRF || k == prf
			rest, without = append(rest, tok), append(without, tok)
		}
	}
	if ike && !hasPRF && derived != "" {
		aeads = append(aeads, derived)
	}
	return strings.Join(without, "-") + "," + strings.Join(append(aeads, rest...), "-")
}

// prfOf is the PRF charon derives from an IKE proposal's integrity
// algorithm when the proposal names none.
var prfOf = map[string]string{
	"md5": "prfmd5", "md5_128": "prfmd5", "sha1": "prfsha1", "sha": "prfsha1", "sha1_160": "prfsha1",
	"sha256": "prfsha256", "sha2_256": "prfsha256", "sha384": "prfsha384", "sha2_384": "prfsha384",
	"sha512": "prfsha512", "sha2_512": "prfsha512", "aesxcbc": "prfaesxcbc", "aescmac": "prfaescmac",
}

// kindNames name the kinds for Keywords.
var kindNames = map[kind]string{
	encryption: "encryption", aead: "aead", integrity: "integrity", integrityESP: "integrity-esp",
	prf: "prf", dhGroup: "dh", esn: "esn",
}

// Keywords returns the proposal keywords the provider accepts with their
// kind (encryption, aead, integrity, integrity-esp, prf, dh or esn), for
// tests that confirm
// them against a real charon.
func Keywords() map[string]string {
	out := make(map[string]string, len(keywords))
	for k, v := range keywords {
		out[k] = kindNames[v]
	}
	return out
}
