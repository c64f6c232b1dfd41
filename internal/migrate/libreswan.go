package migrate

import (
	"strings"
)

// Libreswan is libreswan's (and openswan's) ipsec.conf: the same file
// syntax as strongSwan's, other keywords and defaults (pluto).
const Libreswan Dialect = "libreswan-ipsec.conf"

// libreswanOnly are keywords (and config setup keywords) only libreswan
// and openswan know: one of them makes a file libreswan's.
var libreswanOnly = map[string]bool{
	"ikev2": true, "phase2alg": true, "phase2": true, "leftsubnets": true, "rightsubnets": true, "salifetime": true,
	"pfs": true, "encapsulation": true, "protostack": true, "virtual_private": true, "nat_traversal": true,
	"narrowing": true, "ike_frag": true, "sha2-truncbug": true, "sha2_truncbug": true,
}

// detectDialect says whose ipsec.conf conf is: libreswan's when it uses a
// keyword only libreswan knows or libreswan's "enc-integ;dh" proposals.
func detectDialect(conf *IPsecConf) Dialect {
	for k := range conf.Setup {
		if libreswanOnly[k] {
			return Libreswan
		}
	}
	for _, c := range conf.Conns {
		for k, s := range c.Settings {
			if libreswanOnly[k] || ((k == "ike" || k == "esp") && strings.Contains(s.Value, ";")) {
				return Libreswan
			}
		}
	}
	return StrongSwan
}

// Libreswan 4's defaults that differ from strongSwan's (ipsec.conf(5) of
// libreswan).
const (
	lsIKELifetime = "8h"
	lsSALifetime  = "8h"
)

// libreswan 4's default proposals (IKEv2), as strongSwan proposals.
const (
	lsDefaultIKE = "aes256gcm16-aes128gcm16-prfsha512-prfsha256-ecp256-ecp384-ecp521-modp2048-modp3072-modp4096-modp8192," +
		"aes256-aes128-sha512-sha256-ecp256-ecp384-ecp521-modp2048-modp3072-modp4096-modp8192!"
	lsDefaultESP = "aes256gcm16-aes128gcm16,aes256-aes128-sha512-sha256!"
)

// Keywords that recur in lsAlgorithms.
const (
	kwAES128    = "aes128"
	kwAES128GCM = "aes128gcm16"
)

// lsAlgorithms maps libreswan's algorithm names to strongSwan's keywords.
var lsAlgorithms = map[string]string{
	"aes": kwAES128, kwAES128: kwAES128, "aes192": "aes192", "aes256": "aes256", "aes_128": kwAES128, "aes_256": "aes256",
	"aes_cbc": kwAES128, "aes_ctr": "aes128ctr", "3des": "3des",
	"aes_gcm": kwAES128GCM, "aes_gcm16": kwAES128GCM, "aes_gcm_c": kwAES128GCM, "aes_gcm256": "aes256gcm16", "aes_gcm128": kwAES128GCM,
	"aes_gcm_256": "aes256gcm16", "aes_gcm_128": kwAES128GCM, "aes_gcm16_256": "aes256gcm16", "aes_gcm16_128": kwAES128GCM,
	"chacha20_poly1305": "chacha20poly1305", "camellia": "camellia128",
	"sha": "sha1", "sha1": "sha1", "md5": "md5", "sha2": "sha256", "sha256": "sha256", "sha2_256": "sha256", "sha384": "sha384",
	"sha2_384": "sha384", "sha512": "sha512", "sha2_512": "sha512", "aes_xcbc": "aesxcbc",
	"modp1024": "modp1024", "modp1536": "modp1536", "modp2048": "modp2048", "modp3072": "modp3072", "modp4096": "modp4096",
	"modp6144": "modp6144", "modp8192": "modp8192", "dh2": "modp1024", "dh5": "modp1536", "dh14": "modp2048", "dh15": "modp3072",
	"dh16": "modp4096", "dh17": "modp6144", "dh18": "modp8192", "dh19": "ecp256", "dh20": "ecp384", "dh21": "ecp521", "dh31": "curve25519",
	"ecp_256": "ecp256", "ecp_384": "ecp384", "ecp_521": "ecp521", "curve25519": "curve25519",
}

// lsProposalList turns libreswan's proposals ("aes256-sha2;modp2048,aes128-sha1")
// into strongSwan's ("aes256-sha256-modp2048,aes128-sha1!"): strict, since
// pluto appends no defaults to an ike=/esp= it is given. pfsGroup is
// appended to ESP proposals without a DH group (libreswan's pfs=yes, the
// default, uses the IKE SA's group); "" for none. ok is false when an
// algorithm has no strongSwan name.
func lsProposalList(v, pfsGroup string) (string, string, bool) {
	var out []string
	for p := range strings.SplitSeq(v, ",") {
		p = strings.ToLower(strings.TrimSpace(p))
		if p == "" {
			continue
		}
		algs, dh, hasDH := strings.Cut(p, ";")
		var toks []string
		for a := range strings.FieldsFuncSeq(algs, func(r rune) bool { return r == '-' || r == '+' }) {
			s, ok := lsAlgorithms[a]
			if !ok {
				return "", a, false
			}
			toks = append(toks, s)
		}
		switch {
		case hasDH:
			for d := range strings.FieldsFuncSeq(dh, func(r rune) bool { return r == '-' || r == '+' }) {
				s, ok := lsAlgorithms[d]
				if !ok {
					return "", d, false
				}
				toks = append(toks, s)
			}
		case pfsGroup != "":
			toks = append(toks, pfsGroup)
		}
		out = append(out, strings.Join(toks, "-"))
	}
	return strings.Join(out, ",") + "!", "", true
}

// firstDH is the first DH group keyword of a strongSwan proposal list.
func firstDH(props string) string {
	for tok := range strings.FieldsFuncSeq(props, func(r rune) bool { return r == '-' || r == ',' || r == '!' }) {
		if strings.HasPrefix(tok, "modp") || strings.HasPrefix(tok, "ecp") || tok == "curve25519" {
			return tok
		}
	}
	return ""
}

// fromLibreswan rewrites a libreswan conn into the strongSwan keywords
// with libreswan's defaults written out, so that strokeTunnel converts it;
// each rewrite is reported.
func (im *importer) fromLibreswan(c Conn) Conn {
	s := map[string]Setting{}
	for k, v := range c.Settings {
		s[k] = v
	}
	add := func(f Finding) { f.Tunnel = c.Name; im.report.add(f) }
	set := func(k, v string) { s[k] = Setting{Value: v, From: s[k].From} }
	move := func(from, to string) {
		if v, ok := s[from]; ok {
			s[to] = v
			delete(s, from)
		}
	}
	// IKE version: libreswan 4 speaks IKEv2 unless ikev2=no.
	switch v := c.Get("ikev2", "yes"); v {
	case "no", "never":
		s["keyexchange"] = Setting{Value: "ikev1", From: s["ikev2"].From}
	default:
		s["keyexchange"] = Setting{Value: "ikev2", From: s["ikev2"].From}
	}
	delete(s, "ikev2")
	move("phase2alg", "esp")
	move("salifetime", "lifetime")
	move("leftsubnets", "leftsubnet")
	move("rightsubnets", "rightsubnet")
	if a := c.Get("auto", ""); a == "ondemand" {
		set("auto", "route")
	}
	if c.Get("encapsulation", "") == yes {
		s["forceencaps"] = Setting{Value: yes, From: s["encapsulation"].From}
	}
	delete(s, "encapsulation")
	lsDefaults(c, s)
	im.lsProposals(c, s, add)
	return Conn{Name: c.Name, Settings: s}
}

// lsDefaults writes out pluto's defaults that differ from charon's.
func lsDefaults(c Conn, s map[string]Setting) {
	for _, k := range []string{"ikelifetime", "lifetime"} {
		if _, ok := s[k]; !ok {
			s[k] = Setting{Value: map[string]string{"ikelifetime": lsIKELifetime, "lifetime": lsSALifetime}[k]}
		}
	}
	if _, ok := s["mobike"]; !ok {
		s["mobike"] = Setting{Value: "no"}
	}
	if _, ok := s["authby"]; !ok {
		s["authby"] = Setting{Value: "rsasig"}
	}
	s["reauth"] = Setting{Value: "no"}
	if _, ok := s["keyingtries"]; !ok {
		s["keyingtries"] = Setting{Value: "%forever"} // pluto's default: 0, for ever
	}
	if _, ok := s["dpdaction"]; !ok && c.Has("dpddelay") {
		s["dpdaction"] = Setting{Value: "hold"} // pluto's default once dpddelay is set
	}
}

// lsProposals converts ike=, esp= (phase2alg=) and pfs=, or writes out
// libreswan's default proposals.
func (im *importer) lsProposals(c Conn, s map[string]Setting, add func(Finding)) {
	set := func(k, v string) { s[k] = Setting{Value: v, From: s[k].From} }
	if !c.Has("ike") {
		s["ike"] = Setting{Value: lsDefaultIKE}
		add(Finding{Setting: "ike (daemon defaults)", Outcome: Approximated,
			Detail: "no ike=: libreswan 4's defaults (AES-GCM and AES-CBC 256/128 with SHA2-512/256, DH 19, 20, 21, 14, 15, 16, 18), carried as " + lsDefaultIKE})
	} else {
		p, bad, ok := lsProposalList(c.Get("ike", ""), "")
		if !ok {
			add(Finding{Setting: "ike", Value: c.Get("ike", ""), Outcome: Refused, From: s["ike"].From, Detail: "libreswan algorithm " + bad + " has no strongSwan name: the daemon defaults apply"})
			delete(s, "ike")
		} else {
			set("ike", p)
		}
	}
	pfs := ""
	if c.Get("pfs", yes) == yes {
		pfs = firstDH(s["ike"].Value)
	}
	delete(s, "pfs")
	if _, ok := s["esp"]; !ok {
		s["esp"] = Setting{Value: lsDefaultESP}
		add(Finding{Setting: "esp (daemon defaults)", Outcome: Approximated,
			Detail: "no esp=/phase2alg=: libreswan 4's defaults (AES-GCM and AES-CBC 256/128 with SHA2-512/256), carried as " + lsDefaultESP})
	}
	if v, ok := s["esp"]; ok && v.Value != lsDefaultESP {
		p, bad, ok := lsProposalList(v.Value, pfs)
		if !ok {
			add(Finding{Setting: "esp", Value: v.Value, Outcome: Refused, From: v.From, Detail: "libreswan algorithm " + bad + " has no strongSwan name: the daemon defaults apply"})
			delete(s, "esp")
		} else {
			set("esp", p)
		}
	}
	if pfs != "" {
		add(Finding{Setting: "pfs", Value: yes, Outcome: Converted, From: c.Settings["pfs"].From,
			Detail: "libreswan's PFS (the default) uses the IKE SA's group: " + pfs + " added to ESP proposals without one"})
	}
}
