package migrate

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestStrokeSubnets splits leftsubnet/rightsubnet as charon's stroke plugin
// does (measured with Debian's starter and charon 5.9.8).
func TestStrokeSubnets(t *testing.T) {
	cases := map[string]struct {
		reason         string
		v              string
		valid, skipped []string
	}{
		"Commas": {
			reason: "a comma list with spaces around the commas",
			v:      "10.1.0.0/24, 10.2.0.0/24",
			valid:  []string{"10.1.0.0/24", "10.2.0.0/24"},
		},
		"BracesWithComma": {
			reason: "libreswan's braces: charon skips the first subnet ({ in its address) and reads the last's prefix up to the brace",
			v:      "{10.1.0.0/24,10.2.0.0/24}",
			valid:  []string{"10.2.0.0/24"}, skipped: []string{"{10.1.0.0/24"},
		},
		"BracesWithSpace": {
			reason:  "braces with a space: one token that is no subnet, so nothing valid (charon falls back to the dynamic selector)",
			v:       "{10.1.0.0/24 10.2.0.0/24}",
			skipped: []string{"{10.1.0.0/24 10.2.0.0/24}"},
		},
		"Host": {
			reason: "an address without a prefix is a host",
			v:      "10.1.0.7",
			valid:  []string{"10.1.0.7"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			valid, skipped := strokeSubnets(tc.v)
			if diff := cmp.Diff(tc.valid, valid); diff != "" {
				t.Errorf("%s\nvalid: -want +got:\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(tc.skipped, skipped); diff != "" {
				t.Errorf("%s\nskipped: -want +got:\n%s", tc.reason, diff)
			}
		})
	}
}
