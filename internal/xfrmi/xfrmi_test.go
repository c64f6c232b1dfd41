package xfrmi

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestIfID pins the interface IDs and names derived from tunnel names: a
// change would renumber every route-mode tunnel's interface on the next
// provider release, and charon's SAs with it.
func TestIfID(t *testing.T) {
	cases := map[string]struct {
		reason string
		tunnel string
		id     uint32
		name   string
	}{
		"CloudVPN1": {reason: "The golden route-active-backup's first tunnel.", tunnel: "cloud-vpn-1", id: 1963521638, name: "xfrm7508f666"},
		"CloudVPN2": {reason: "Its second tunnel.", tunnel: "cloud-vpn-2", id: 698112753, name: "xfrm299c5af1"},
		"Longest":   {reason: "A 32-character name still gives a 12-character interface name.", tunnel: "abcdefghijklmnopqrstuvwxyz012345", id: 1698410788, name: "xfrm653bb124"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			id := IfID(tc.tunnel)
			if diff := cmp.Diff(tc.id, id); diff != "" {
				t.Errorf("%s\nIfID(%q): -want, +got:\n%s", tc.reason, tc.tunnel, diff)
			}
			if id == 0 || id&(1<<31) != 0 {
				t.Errorf("%s\nIfID(%q) = %#x: want non-zero with the top bit clear", tc.reason, tc.tunnel, id)
			}
			n := InterfaceName(id)
			if diff := cmp.Diff(tc.name, n); diff != "" {
				t.Errorf("%s\nInterfaceName(%d): -want, +got:\n%s", tc.reason, id, diff)
			}
			if len(n) != 12 {
				t.Errorf("%s\nInterfaceName(%d) = %q: want 12 characters (Linux allows 15)", tc.reason, id, n)
			}
		})
	}
}
