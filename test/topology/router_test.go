package topology

import (
	"net/netip"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestNATRuleset(t *testing.T) {
	cases := map[string]struct {
		reason     string
		fip, fixed netip.Addr
		want       string
	}{
		"Gateway": {
			reason: "The floating IP is DNATed to the fixed IP, the fixed IP SNATed back with random ports as the qrouter does, and no other tenant address reaches the external network.",
			fip:    netip.MustParseAddr("203.0.113.10"),
			fixed:  netip.MustParseAddr("10.20.0.10"),
			want: `table ip fipnat {
	chain prerouting {
		type nat hook prerouting priority dstnat; policy accept;
		ip daddr 203.0.113.10 dnat to 10.20.0.10
	}
	chain postrouting {
		type nat hook postrouting priority srcnat; policy accept;
		oifname "external" ip saddr 10.20.0.10 snat to 203.0.113.10 fully-random
	}
	chain forward {
		type filter hook forward priority filter; policy accept;
		iifname "tenant" oifname "external" ip saddr != 10.20.0.10 drop
	}
}
`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, natRuleset(tc.fip, tc.fixed, "tenant", "external")); diff != "" {
				t.Errorf("%s\nnatRuleset(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}
