package migrate

import (
	"testing"
	"testing/fstest"

	"github.com/google/go-cmp/cmp"
)

// TestReadIPsecSecrets reads ipsec.secrets lines as charon's stroke plugin
// does.
func TestReadIPsecSecrets(t *testing.T) {
	cases := map[string]struct {
		reason string
		line   string
		want   Secret
		err    bool
	}{
		"DoubleQuotesNoEscapes": {
			reason: "a quoted PSK runs to the next quote of its kind: a backslash is no escape",
			line:   `a b : PSK "x\"y"`,
			want:   Secret{IDs: []string{"a", "b"}, Type: "PSK", Value: []byte(`x\`)},
		},
		"SingleQuotes": {
			reason: "single quotes keep double quotes and spaces",
			line:   `: PSK 'say "hi" now'`,
			want:   Secret{Type: "PSK", Value: []byte(`say "hi" now`)},
		},
		"Hex": {
			reason: "an unquoted 0x value is hex",
			line:   `%any : PSK 0x6b6579`,
			want:   Secret{IDs: []string{"%any"}, Type: "PSK", Value: []byte("key")},
		},
		"Base64": {
			reason: "an unquoted 0s value is base64",
			line:   `@fw.example.net : PSK 0sa2V5`,
			want:   Secret{IDs: []string{"@fw.example.net"}, Type: "PSK", Value: []byte("key")},
		},
		"QuotedHexIsText": {
			reason: "a quoted 0x value is taken as written",
			line:   `: PSK "0x6b6579"`,
			want:   Secret{Type: "PSK", Value: []byte("0x6b6579")},
		},
		"QuotedDNIdentity": {
			reason: "an identity in quotes may hold spaces (a DN)",
			line:   `"C=DE, O=Peer, CN=fw" : PSK key`,
			want:   Secret{IDs: []string{"C=DE, O=Peer, CN=fw"}, Type: "PSK", Value: []byte("key")},
		},
		"OpenQuote": {
			reason: "an unclosed quote is an error",
			line:   `: PSK "key`,
			err:    true,
		},
		"BadHex": {
			reason: "0x that is not hex is an error",
			line:   `: PSK 0xzz`,
			err:    true,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := ReadIPsecSecrets(fstest.MapFS{"ipsec.secrets": {Data: []byte(tc.line + "\n")}}, "ipsec.secrets")
			if diff := cmp.Diff(tc.err, err != nil); diff != "" {
				t.Fatalf("%s\nerror: -want +got:\n%s (%v)", tc.reason, diff, err)
			}
			if tc.err {
				return
			}
			tc.want.From = "ipsec.secrets:1"
			if diff := cmp.Diff([]Secret{tc.want}, got); diff != "" {
				t.Errorf("%s\n-want +got:\n%s", tc.reason, diff)
			}
		})
	}
}

// TestSelectPSK picks the PSK charon's credential manager picks.
func TestSelectPSK(t *testing.T) {
	secrets := []Secret{
		{Type: "PSK"}, // 0: no identities: any
		{IDs: []string{"203.0.113.10"}, Type: "PSK"},                    // 1: the local identity only
		{IDs: []string{"198.51.100.7"}, Type: "PSK"},                    // 2: the remote identity only
		{IDs: []string{"%any", "198.51.100.7"}, Type: "PSK"},            // 3: remote perfect, local any
		{IDs: []string{"203.0.113.10", "@fw.example.net"}, Type: "PSK"}, // 4: both
		{IDs: []string{"*.example.org"}, Type: "PSK"},                   // 5: a wildcard
		{IDs: []string{"198.51.100.9"}, Type: "RSA"},                    // 6: not a PSK
		{IDs: []string{"198.51.100.8"}, Type: "PSK"},                    // 7: ties with 8
		{IDs: []string{"198.51.100.8"}, Type: "PSK"},                    // 8: the later of the two
	}
	cases := map[string]struct {
		reason        string
		local, remote string
		want          int
	}{
		"BothPerfect": {
			reason: "an entry matching both identities wins; @ and case do not matter for an FQDN",
			local:  "203.0.113.10", remote: "FW.example.net", want: 4,
		},
		"RemoteBeforeLocal": {
			reason: "the best match of the remote identity wins before the local one: the remote-only entry 2 and entry 3 tie on the remote, entry 3 matches the local as any",
			local:  "203.0.113.10", remote: "198.51.100.7", want: 3,
		},
		"AnyBeatsLocalOnly": {
			reason: "no entry names the remote: the entries matching it as any (0, and 3 by its %any) beat the one naming only the local identity, and of those the later wins",
			local:  "203.0.113.10", remote: "198.51.100.99", want: 3,
		},
		"LastOfEqualWins": {
			reason: "of two entries that match equally, charon picks the later in the file",
			local:  "10.20.0.5", remote: "198.51.100.8", want: 8,
		},
		"AnyOnly": {
			reason: "nothing named: an owner %any matches like no owner at all, so entries 0 and 3 tie and the later wins",
			local:  "10.20.0.5", remote: "198.51.100.99", want: 3,
		},
		"Wildcard": {
			reason: "a wildcard match beats an entry without identities",
			local:  "10.20.0.5", remote: "fw.example.org", want: 5,
		},
		"NotAPSK": {
			reason: "an RSA entry is never a PSK, though it names the remote identity",
			local:  "10.20.0.5", remote: "198.51.100.9", want: 3,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, SelectPSK(secrets, tc.local, tc.remote)); diff != "" {
				t.Errorf("%s\n-want +got:\n%s", tc.reason, diff)
			}
		})
	}
}
