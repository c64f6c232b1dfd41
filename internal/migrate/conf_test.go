package migrate

import (
	"testing"
	"testing/fstest"

	"github.com/google/go-cmp/cmp"
)

// TestReadIPsecConf resolves %default and also= as starter does.
func TestReadIPsecConf(t *testing.T) {
	cases := map[string]struct {
		reason string
		conf   string
		want   map[string]string // conn a's effective settings
		err    string
	}{
		"Precedence": {
			reason: "the conn's own settings beat its also= conns, which beat %default, wherever also= is written",
			conf:   "conn %default\n\tike=d\n\tesp=d\n\tdpddelay=d\nconn t\n\tesp=t\n\tdpddelay=t\nconn a\n\tdpddelay=a\n\talso=t\n",
			want:   map[string]string{"ike": "d", "esp": "t", "dpddelay": "a"},
		},
		"QuotesAndComments": {
			reason: "a quoted value keeps its '#' and spaces; a comment after a value is cut",
			conf:   "conn a\n\trightid=\"C=DE, CN=#1\" # the peer\n\tauto=add # comment\n",
			want:   map[string]string{"rightid": "C=DE, CN=#1", "auto": "add"},
		},
		"Include": {
			reason: "include reads the glob's files in order, relative to the including file",
			conf:   "include conf.d/*.conf\n",
			want:   map[string]string{"right": "2"},
		},
		"AlsoMissing": {
			reason: "an also= naming no conn is an error naming both",
			conf:   "conn a\n\talso=nope\n",
			err:    "conn a: also=nope names no conn of the file",
		},
		"AlsoLoop": {
			reason: "an also= loop is an error, not a hang",
			conf:   "conn a\n\talso=b\nconn b\n\talso=a\n",
			err:    "conn a: also= loops through conn a",
		},
		"UnindentedSetting": {
			reason: "a setting in column 0 is an error naming the line",
			conf:   "conn a\nauto=add\n",
			err:    "ipsec.conf:2: want 'conn NAME', 'config setup', 'ca NAME', 'include GLOB' or an indented 'key=value'",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			fsys := fstest.MapFS{
				"ipsec.conf":          {Data: []byte(tc.conf)},
				"conf.d/1-first.conf": {Data: []byte("conn a\n\tright=1\n")},
				"conf.d/2-later.conf": {Data: []byte("conn a\n\tright=2\n")},
			}
			got, err := ReadIPsecConf(fsys, "ipsec.conf")
			errText := ""
			if err != nil {
				errText = err.Error()
			}
			if diff := cmp.Diff(tc.err, errText); diff != "" {
				t.Fatalf("%s\nerror: -want +got:\n%s", tc.reason, diff)
			}
			if tc.err != "" {
				return
			}
			var a map[string]string
			for _, c := range got.Conns {
				if c.Name == "a" {
					a = map[string]string{}
					for k, s := range c.Settings {
						a[k] = s.Value
					}
				}
			}
			if diff := cmp.Diff(tc.want, a); diff != "" {
				t.Errorf("%s\n-want +got:\n%s", tc.reason, diff)
			}
		})
	}
}
