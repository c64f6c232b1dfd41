package swanctl

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func sample() *Section {
	root := &Section{}
	c := root.Section("connections").Section("branch-a")
	c.Set("version", "2").Set("proposals", "aes256-sha256-modp2048,aes128-sha256-modp2048")
	c.Section("local").Set("auth", "psk").Set("id", "203.0.113.10")
	c.Section("children").Section("branch-a-1").Set("local_ts", "100.64.0.0/24")
	return root
}

const sampleText = `connections {
  branch-a {
    version = 2
    proposals = aes256-sha256-modp2048,aes128-sha256-modp2048
    local {
      auth = psk
      id = 203.0.113.10
    }
    children {
      branch-a-1 {
        local_ts = 100.64.0.0/24
      }
    }
  }
}
`

func TestFormat(t *testing.T) {
	cases := map[string]struct {
		reason  string
		in      *Section
		want    string
		wantErr string
	}{
		"Document": {
			reason: "Sections nest with two spaces of indentation and keep their order.",
			in:     sample(),
			want:   sampleText,
		},
		"ValueOpensSection": {
			reason:  "A value with a brace could open a section and is refused.",
			in:      (&Section{}).Section("connections").Set("remote_addrs", "x }\nsecrets {"),
			wantErr: "value of connections.remote_addrs: characters outside [A-Za-z0-9._:/,@%+*-] or surrounding space",
		},
		"ValueComment": {
			reason:  "A '#' would start a comment and cut the value short.",
			in:      (&Section{}).Section("secrets").Set("secret", "abc#def"),
			wantErr: "value of secrets.secret: characters outside [A-Za-z0-9._:/,@%+*-] or surrounding space",
		},
		"BinaryID": {
			reason: "An identity by its encoding (asn1dn:#<hex>) is quoted, so that its '#' starts no comment.",
			in:     (&Section{}).Section("remote").Set("id", "asn1dn:#300d310b3009060355040613024445"),
			want:   "remote {\n  id = \"asn1dn:#300d310b3009060355040613024445\"\n}\n",
		},
		"BinaryIDComment": {
			reason:  "Only hex follows the '#': anything else is refused.",
			in:      (&Section{}).Section("remote").Set("id", "asn1dn:#30 } x"),
			wantErr: "value of remote.id: characters outside [A-Za-z0-9._:/,@%+*-] or surrounding space",
		},
		"EmptyValue": {
			reason:  "An empty value is refused rather than written as a dangling key.",
			in:      (&Section{}).Section("connections").Set("local_addrs", ""),
			wantErr: "value of connections.local_addrs: characters outside [A-Za-z0-9._:/,@%+*-] or surrounding space",
		},
		"SectionName": {
			reason:  "A section name with a dot would address another section.",
			in:      func() *Section { r := &Section{}; r.Section("connections").Section("a.b"); return r }(),
			wantErr: `section name "a.b" at "connections": only letters, digits, '_' and '-' are allowed`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := tc.in.Format()
			if diff := cmp.Diff(tc.wantErr, errText(err)); diff != "" {
				t.Fatalf("%s\nFormat(): -want error, +got error:\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(tc.want, string(got)); diff != "" {
				t.Errorf("%s\nFormat(): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestParse(t *testing.T) {
	cases := map[string]struct {
		reason  string
		in      string
		want    *Section
		wantErr string
	}{
		"RoundTrip": {
			reason: "Parse reads back exactly what Format wrote.",
			in:     sampleText,
			want:   sample(),
		},
		"HandWritten": {
			reason: "Comments, blank lines, odd spacing and quoted values are read as strongSwan reads them.",
			in:     "# header\nsecrets {\n\n   ike-a {   # the peer\n      secret = \"x # not a comment\"\n      id=1.2.3.4\n   }\n}\n",
			want: func() *Section {
				r := &Section{}
				r.Section("secrets").Section("ike-a").Set("secret", "x # not a comment").Set("id", "1.2.3.4")
				return r
			}(),
		},
		"Unclosed": {
			reason:  "A section left open is an error naming it.",
			in:      "connections {\n  a {\n  }\n",
			wantErr: `section "connections" is not closed`,
		},
		"StrayBrace": {
			reason:  "A closing brace without a section is an error naming the line.",
			in:      "}\n",
			wantErr: "line 1: '}' closes no section",
		},
		"Garbage": {
			reason:  "A line that is no statement is an error naming the line.",
			in:      "connections {\n  just words\n}\n",
			wantErr: "line 2: want 'key = value', 'name {' or '}'",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := Parse([]byte(tc.in))
			if diff := cmp.Diff(tc.wantErr, errText(err)); diff != "" {
				t.Fatalf("%s\nParse(): -want error, +got error:\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\nParse(): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestLookup(t *testing.T) {
	s := sample()
	if got := s.Lookup("connections.branch-a.children.branch-a-1"); got == nil || got.Name != "branch-a-1" {
		t.Fatalf("Lookup of an existing path = %v, want the branch-a-1 section", got)
	}
	if got := s.Lookup("connections.branch-b"); got != nil {
		t.Errorf("Lookup of a missing path = %v, want nil", got)
	}
	if v, ok := s.Lookup("connections.branch-a.local").Get("id"); !ok || v != "203.0.113.10" {
		t.Errorf("Get(id) = %q, %v; want 203.0.113.10, true", v, ok)
	}
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
