package render

import (
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/hex"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// der marshals a name of one attribute per RDN, each value with tag.
func der(t *testing.T, tag int, kv ...string) []byte {
	t.Helper()
	var seq []asn1.RawValue
	for i := 0; i < len(kv); i += 2 {
		val, err := asn1.Marshal(asn1.RawValue{Tag: tag, Bytes: []byte(kv[i+1])})
		if err != nil {
			t.Fatal(err)
		}
		atv, err := asn1.Marshal(struct {
			Type  asn1.ObjectIdentifier
			Value asn1.RawValue
		}{dnAttributes[kv[i]], asn1.RawValue{FullBytes: val}})
		if err != nil {
			t.Fatal(err)
		}
		set, err := asn1.Marshal(asn1.RawValue{Class: asn1.ClassUniversal, Tag: asn1.TagSet, IsCompound: true, Bytes: atv})
		if err != nil {
			t.Fatal(err)
		}
		seq = append(seq, asn1.RawValue{FullBytes: set})
	}
	b, err := asn1.Marshal(seq)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// opensslMultiRDN is the subject DER of a certificate openssl 3 made with
// req -multivalue-rdn -subj "/C=DE/O=Example AG/OU=Net+CN=rtr1.example.net":
// its multi-valued RDN holds OU before CN (DER's order of a SET OF).
var opensslMultiRDN, _ = hex.DecodeString("3049310b300906035504061302444531133011060355040a0c0a4578616d706c652041473125300a060355040b0c034e6574301706035504030c10727472312e6578616d706c652e6e6574")

func TestParseDN(t *testing.T) {
	utf8, printable := asn1.TagUTF8String, asn1.TagPrintableString
	cases := map[string]struct {
		reason string
		dn     string
		// match is a certificate subject the DN must match, as
		// strongSwan compares them (sameDN).
		match   []byte
		wantErr error
	}{
		"SeveralRDNs": {
			reason: "RDNs keep the written order; a UTF8String subject (openssl's) matches whatever type the DN was encoded with.",
			dn:     "C=DE, O=Example AG, OU=VPN, CN=gw.example.com",
			match:  der(t, utf8, "C", "DE", "O", "Example AG", "OU", "VPN", "CN", "gw.example.com"),
		},
		"PrintableSubject": {
			reason: "A PrintableString subject (Go's, cert-manager's) matches too, without regard to case as strongSwan compares PrintableStrings.",
			dn:     "C=de, O=example ag, CN=GW.example.com",
			match:  der(t, printable, "C", "DE", "O", "Example AG", "CN", "gw.example.com"),
		},
		"NonASCII": {
			reason: "UTF-8 values are kept byte for byte (strongSwan 5.9.8's own string parser refuses them).",
			dn:     "C=CH, O=Zürich Peer AG, CN=vpn",
			match:  der(t, utf8, "C", "CH", "O", "Zürich Peer AG", "CN", "vpn"),
		},
		"Escapes": {
			reason: "RFC 4514 escapes: ',' and '+' by a backslash, a byte as two hex digits.",
			dn:     `O=Peer\, Inc, OU=Net\+Ops, CN=caf\c3\a9`,
			match:  der(t, utf8, "O", "Peer, Inc", "OU", "Net+Ops", "CN", "café"),
		},
		"Aliases": {
			reason: "strongSwan's attribute names: E for emailAddress, SN for serialNumber, DC, UID.",
			dn:     "DC=com, DC=example, UID=gw, SN=42, E=vpn@example.com",
			match:  der(t, 22, "DC", "com", "DC", "example", "UID", "gw", "SN", "42", "E", "vpn@example.com"),
		},
		"MultiValued": {
			reason: "A multi-valued RDN ('+') matches the subject openssl req -multivalue-rdn wrote for /C=DE/O=Example AG/OU=Net+CN=rtr1.example.net, its attributes in DER's order whichever order they are written in.",
			dn:     "C=DE, O=Example AG, CN=rtr1.example.net + OU=Net",
			match:  opensslMultiRDN,
		},
		"MultiValuedEscapedPlus": {
			reason: "An escaped '+' stays in the value: one attribute, not two.",
			dn:     `O=Example, OU=A\+CN=b`,
			match:  der(t, utf8, "O", "Example", "OU", "A+CN=b"),
		},
		"DER": {
			reason: "asn1dn:# with the hex of a DER name is that name, byte for byte.",
			dn:     "asn1dn:#" + hex.EncodeToString(opensslMultiRDN),
			match:  opensslMultiRDN,
		},
		"DERNotAName": {
			reason:  "asn1dn:# with hex that is no DER name is refused.",
			dn:      "asn1dn:#300a",
			wantErr: errDNNotDER,
		},
		"DERNotHex": {
			reason:  "asn1dn:# with what is not hex is refused.",
			dn:      "asn1dn:#zz",
			wantErr: errDNNotDER,
		},
		"BadEscape": {
			reason:  "A backslash before an ordinary character is refused.",
			dn:      `CN=a\qb`,
			wantErr: errDNBadEscape,
		},
		"Trailing": {
			reason:  "A trailing backslash escapes nothing.",
			dn:      `CN=a\`,
			wantErr: errDNTrailing,
		},
		"NotUTF8": {
			reason:  "An escaped byte sequence that is not UTF-8 is refused.",
			dn:      `CN=\ff`,
			wantErr: errDNNotUTF8,
		},
		"Empty": {
			reason:  "Commas alone are no DN.",
			dn:      " , ",
			wantErr: errDNEmpty,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := parseDN(tc.dn)
			if diff := cmp.Diff(tc.wantErr, err, cmpopts.EquateErrors()); diff != "" {
				t.Fatalf("%s\nparseDN(%q): -want error, +got:\n%s", tc.reason, tc.dn, diff)
			}
			if tc.match != nil && !sameDN(got, tc.match) {
				t.Errorf("%s\nparseDN(%q) = %x does not match %x", tc.reason, tc.dn, got, tc.match)
			}
		})
	}
}

func TestParseDNUnknownAttribute(t *testing.T) {
	if _, err := parseDN("X=1, CN=a"); err == nil || errors.Is(err, errDNEmpty) {
		t.Errorf("parseDN with attribute X: %v, want an error naming it", err)
	}
}

func TestSameDN(t *testing.T) {
	a := der(t, asn1.TagUTF8String, "C", "DE", "CN", "gw")
	cases := map[string]struct {
		reason   string
		b        []byte
		same     bool
		reversed bool
	}{
		"Equal":     {reason: "The same name.", b: a, same: true},
		"Reversed":  {reason: "The other order is another identity, but recognised as reversed for the message.", b: der(t, asn1.TagUTF8String, "CN", "gw", "C", "DE"), reversed: true},
		"Shorter":   {reason: "A prefix is not the name.", b: der(t, asn1.TagUTF8String, "C", "DE")},
		"CaseUTF8":  {reason: "UTF8Strings compare with case.", b: der(t, asn1.TagUTF8String, "C", "DE", "CN", "GW")},
		"OtherType": {reason: "String types do not matter.", b: der(t, asn1.TagPrintableString, "C", "DE", "CN", "gw"), same: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := sameDN(a, tc.b); got != tc.same {
				t.Errorf("%s\nsameDN = %v", tc.reason, got)
			}
			if got := reversedDN(a, tc.b); got != tc.reversed {
				t.Errorf("%s\nreversedDN = %v", tc.reason, got)
			}
		})
	}
	name, _ := asn1.Marshal(pkix.Name{Country: []string{"DE"}, CommonName: "gw"}.ToRDNSequence())
	if got := dnString(name); got != "C=DE, CN=gw" {
		t.Errorf("dnString = %q, want C=DE, CN=gw", got)
	}
}
