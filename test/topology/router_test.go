package topology

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestRuleset(t *testing.T) {
	cases := map[string]struct {
		reason string
		m      map[string]Mapping
		want   string
	}{
		"None": {
			reason: "Without mappings the table is emptied and no tenant address reaches the external network.",
			want: `table ip fipnat {
}
delete table ip fipnat
table ip fipnat {
	chain prerouting {
		type nat hook prerouting priority dstnat; policy accept;
	}
	chain postrouting {
		type nat hook postrouting priority srcnat; policy accept;
	}
	chain forward {
		type filter hook forward priority filter; policy accept;
		iifname "tenant" oifname "external" drop
	}
}
`,
		},
		"Two": {
			reason: "Each floating IP is DNATed to its fixed IP and the fixed IP SNATed back, in address order.",
			m: map[string]Mapping{
				"203.0.113.20": {FixedIP: "10.20.0.10", PortID: "b"},
				"203.0.113.10": {FixedIP: "10.20.0.5", PortID: "a"},
			},
			want: `table ip fipnat {
}
delete table ip fipnat
table ip fipnat {
	chain prerouting {
		type nat hook prerouting priority dstnat; policy accept;
		ip daddr 203.0.113.10 dnat to 10.20.0.5
		ip daddr 203.0.113.20 dnat to 10.20.0.10
	}
	chain postrouting {
		type nat hook postrouting priority srcnat; policy accept;
		oifname "external" ip saddr 10.20.0.5 snat to 203.0.113.10
		oifname "external" ip saddr 10.20.0.10 snat to 203.0.113.20
	}
	chain forward {
		type filter hook forward priority filter; policy accept;
		iifname "tenant" oifname "external" ip saddr != { 10.20.0.5, 10.20.0.10 } drop
	}
}
`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, ruleset(tc.m, "tenant", "external")); diff != "" {
				t.Errorf("%s\nruleset(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestDiff(t *testing.T) {
	vm := Mapping{FixedIP: "10.20.0.5", PortID: "vm"}
	gw := Mapping{FixedIP: "10.20.0.10", PortID: "gw"}
	cases := map[string]struct {
		reason   string
		old, new map[string]Mapping
		want     []change
	}{
		"Same": {
			reason: "Nothing changes when the mappings are equal.",
			old:    map[string]Mapping{"203.0.113.10": vm},
			new:    map[string]Mapping{"203.0.113.10": vm},
		},
		"Moved": {
			reason: "A floating IP moved to another port is one change from the old to the new fixed IP.",
			old:    map[string]Mapping{"203.0.113.10": vm},
			new:    map[string]Mapping{"203.0.113.10": gw},
			want:   []change{{FloatingIP: "203.0.113.10", Old: vm, New: gw}},
		},
		"AssociatedAndDisassociated": {
			reason: "A new association and a disassociation are changes from and to no mapping, in address order.",
			old:    map[string]Mapping{"203.0.113.20": vm},
			new:    map[string]Mapping{"203.0.113.10": gw},
			want: []change{
				{FloatingIP: "203.0.113.10", New: gw},
				{FloatingIP: "203.0.113.20", Old: vm},
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if d := cmp.Diff(tc.want, diff(tc.old, tc.new)); d != "" {
				t.Errorf("%s\ndiff(...): -want, +got:\n%s", tc.reason, d)
			}
		})
	}
}
