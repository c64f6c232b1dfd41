package topology

import "testing"

func TestNamespacePattern(t *testing.T) {
	cases := map[string]struct {
		reason string
		name   string
		want   bool
	}{
		"Ours":       {reason: "Names Start makes are recognised.", name: "ipt123-4-gw", want: true},
		"Peer":       {reason: "Peer and host namespaces too.", name: "ipt123-4-p0", want: true},
		"Reference":  {reason: "The reference scripts' namespaces are not ours to reap.", name: "ipt-gw"},
		"OtherOwner": {reason: "Other developers' namespaces are left alone.", name: "agt123-4-gw"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := nsPattern.MatchString(tc.name); got != tc.want {
				t.Errorf("%s\nnsPattern.MatchString(%q) = %v, want %v", tc.reason, tc.name, got, tc.want)
			}
		})
	}
}
