package render

import (
	"bytes"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// dnAttributes maps the attribute names a DN identity may use to their
// OIDs, as strongSwan names them (identification.c's x501rdns).
var dnAttributes = map[string]asn1.ObjectIdentifier{
	"C":            {2, 5, 4, 6},
	"ST":           {2, 5, 4, 8},
	"L":            {2, 5, 4, 7},
	"O":            {2, 5, 4, 10},
	"OU":           {2, 5, 4, 11},
	"CN":           {2, 5, 4, 3},
	"SN":           {2, 5, 4, 5},
	"serialNumber": {2, 5, 4, 5},
	"DC":           {0, 9, 2342, 19200300, 100, 1, 25},
	"UID":          {0, 9, 2342, 19200300, 100, 1, 1},
	"E":            {1, 2, 840, 113549, 1, 9, 1},
	"emailAddress": {1, 2, 840, 113549, 1, 9, 1},
}

// Errors of parseDN.
var (
	errDNEmpty     = errors.New("is empty")
	errDNNotDER    = errors.New("is not asn1dn:# and the hex of a DER name (a SEQUENCE of SETs of attribute type and value)")
	errDNTrailing  = errors.New("ends with a '\\' that escapes nothing")
	errDNBadEscape = errors.New("has a '\\' followed by neither a special character nor two hex digits")
	errDNNotUTF8   = errors.New("is not valid UTF-8 once unescaped")
)

// asn1dnPrefix marks a DN given as the hex of its DER, as strongSwan
// reads it.
const asn1dnPrefix = "asn1dn:#"

// parseDN parses a distinguished name written most significant RDN first,
// as strongSwan and openssl print a certificate's subject ("C=DE, O=Example
// AG, CN=gw"), with RFC 4514 escapes in values and the attributes of a
// multi-valued RDN joined by '+' ("OU=Net + CN=rtr1"), and returns its
// DER: an RDNSequence in the written order, each value a PrintableString
// or, when it holds other characters, a UTF8String, a multi-valued RDN's
// attributes in DER's order (sorted by their encoding, as openssl and Go
// encode a certificate's subject, whatever order they were written in).
// strongSwan matches DNs by attribute order and value bytes, not by
// string type (identification.c compare_dn), so this DER matches a
// certificate's subject whatever string types its CA chose. A DN given as
// asn1dn:#<hex> is that DER, checked to be a name.
func parseDN(s string) ([]byte, error) {
	if h, ok := strings.CutPrefix(s, asn1dnPrefix); ok {
		der, err := hex.DecodeString(h)
		if err != nil {
			return nil, errDNNotDER
		}
		if rs, err := rdns(der); err != nil || len(rs) == 0 {
			return nil, errDNNotDER
		}
		return der, nil
	}
	parts, err := splitUnescaped(s, ',')
	if err != nil {
		return nil, err
	}
	var seq pkix.RDNSequence
	for _, part := range parts {
		if strings.TrimSpace(part) == "" {
			continue
		}
		atvs, err := splitUnescaped(part, '+')
		if err != nil {
			return nil, err
		}
		var set pkix.RelativeDistinguishedNameSET
		for _, atv := range atvs {
			a, err := parseATV(strings.TrimSpace(atv))
			if err != nil {
				return nil, err
			}
			set = append(set, a)
		}
		seq = append(seq, set)
	}
	if len(seq) == 0 {
		return nil, errDNEmpty
	}
	return asn1.Marshal(seq)
}

// parseATV parses one attribute=value of a DN.
func parseATV(part string) (pkix.AttributeTypeAndValue, error) {
	k, v, ok := strings.Cut(part, "=")
	if !ok {
		return pkix.AttributeTypeAndValue{}, fmt.Errorf("has %q, not attribute=value", part)
	}
	oid, known := dnAttributes[strings.TrimSpace(k)]
	if !known {
		return pkix.AttributeTypeAndValue{}, fmt.Errorf("has attribute %q: use C, ST, L, O, OU, CN, SN, DC, UID or E", strings.TrimSpace(k))
	}
	val, err := unescapeDN(strings.TrimSpace(v))
	if err != nil {
		return pkix.AttributeTypeAndValue{}, err
	}
	if val == "" {
		return pkix.AttributeTypeAndValue{}, fmt.Errorf("has an empty value for %s", strings.TrimSpace(k))
	}
	return pkix.AttributeTypeAndValue{Type: oid, Value: val}, nil
}

// splitUnescaped splits s at every sep not escaped by a backslash.
func splitUnescaped(s string, sep byte) ([]string, error) {
	var out []string
	start := 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\\':
			if i+1 >= len(s) {
				return nil, errDNTrailing
			}
			i++
		case sep:
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	return append(out, s[start:]), nil
}

// unescapeDN resolves RFC 4514 escapes in a value: '\' before a special
// character, or two hex digits for a byte.
func unescapeDN(v string) (string, error) {
	var b bytes.Buffer
	for i := 0; i < len(v); i++ {
		if v[i] != '\\' {
			b.WriteByte(v[i])
			continue
		}
		if i+1 >= len(v) {
			return "", errDNTrailing
		}
		if strings.IndexByte(`,+"\<>;= #`, v[i+1]) >= 0 {
			b.WriteByte(v[i+1])
			i++
			continue
		}
		if i+2 < len(v) {
			if x, err := hex.DecodeString(v[i+1 : i+3]); err == nil {
				b.Write(x)
				i += 2
				continue
			}
		}
		return "", errDNBadEscape
	}
	if !utf8.Valid(b.Bytes()) {
		return "", errDNNotUTF8
	}
	return b.String(), nil
}

// rdn is one attribute of a DER name, its value's tag and bytes kept.
type rdn struct {
	oid   asn1.ObjectIdentifier
	tag   int
	value []byte
}

// rdns parses a DER name into its attributes in order.
func rdns(der []byte) ([]rdn, error) {
	var seq []asn1.RawValue
	if rest, err := asn1.Unmarshal(der, &seq); err != nil || len(rest) > 0 {
		return nil, errors.New("not a DER name")
	}
	var out []rdn
	for _, set := range seq {
		var atvs []struct {
			Type  asn1.ObjectIdentifier
			Value asn1.RawValue
		}
		if _, err := asn1.UnmarshalWithParams(set.FullBytes, &atvs, "set"); err != nil {
			return nil, errors.New("not a DER name")
		}
		for _, a := range atvs {
			out = append(out, rdn{oid: a.Type, tag: a.Value.Tag, value: a.Value.Bytes})
		}
	}
	return out, nil
}

// sameDN says whether strongSwan takes the DER names a and b for the same
// identity (identification.c compare_dn): the same attributes in the same
// order with the same value bytes, compared without case when both are
// PrintableStrings, whatever the string types otherwise.
func sameDN(a, b []byte) bool {
	ra, errA := rdns(a)
	rb, errB := rdns(b)
	if errA != nil || errB != nil || len(ra) != len(rb) {
		return false
	}
	for i := range ra {
		x, y := ra[i], rb[i]
		switch {
		case !x.oid.Equal(y.oid):
			return false
		case x.tag == asn1.TagPrintableString && y.tag == asn1.TagPrintableString:
			if !bytes.EqualFold(x.value, y.value) {
				return false
			}
		case !bytes.Equal(x.value, y.value):
			return false
		}
	}
	return true
}

// reversedDN says whether b is a with its attributes in the other order.
func reversedDN(a, b []byte) bool {
	ra, errA := rdns(a)
	rb, errB := rdns(b)
	if errA != nil || errB != nil || len(ra) != len(rb) || len(ra) < 2 {
		return false
	}
	for i := range ra {
		x, y := ra[i], rb[len(rb)-1-i]
		if !x.oid.Equal(y.oid) || !bytes.Equal(x.value, y.value) {
			return false
		}
	}
	return true
}

// dnString writes a DER name as strongSwan prints it ("C=DE, O=Example AG,
// CN=gw"), for messages.
func dnString(der []byte) string {
	rs, err := rdns(der)
	if err != nil {
		return "(unparsable name)"
	}
	names := map[string]string{}
	for k, oid := range dnAttributes {
		if len(k) <= 3 {
			names[oid.String()] = k
		}
	}
	parts := make([]string, 0, len(rs))
	for _, r := range rs {
		k := names[r.oid.String()]
		if k == "" {
			k = r.oid.String()
		}
		parts = append(parts, k+"="+string(r.value))
	}
	return strings.Join(parts, ", ")
}
