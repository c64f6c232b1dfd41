package gateway

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ipsecgw/provider-ipsec/apis/cluster/gateway/v1alpha1"
)

func TestCounterHold(t *testing.T) {
	t0 := time.Unix(1795990000, 0)
	tunnel := func(up bool, bytes int64) []v1alpha1.TunnelStatus {
		return []v1alpha1.TunnelStatus{{Name: "branch-a", Up: up, IKEState: "ESTABLISHED",
			ChildSAs: []v1alpha1.ChildSAStatus{{Name: "branch-a-1", State: "INSTALLED", BytesIn: bytes, BytesOut: bytes, PacketsIn: bytes / 10, PacketsOut: bytes / 10}}}}
	}
	type report struct {
		after time.Duration
		now   []v1alpha1.TunnelStatus
	}
	cases := map[string]struct {
		reason string
		// was is the status before the first report; each report's status
		// is what the previous one returned.
		was     []v1alpha1.TunnelStatus
		reports []report
		// want is the byte count of each report's result, -1 for no tunnel.
		want []int64
	}{
		"CountersHeld": {
			reason:  "Reports that change only the counters are written at most once per countersInterval: the first (nothing remembered), then 30 s later.",
			was:     tunnel(true, 100),
			reports: []report{{0, tunnel(true, 200)}, {10 * time.Second, tunnel(true, 300)}, {20 * time.Second, tunnel(true, 400)}, {30 * time.Second, tunnel(true, 500)}},
			want:    []int64{200, 200, 200, 500},
		},
		"StateAtOnce": {
			reason:  "A change of state is written at once, with its counters, within countersInterval of the last counters.",
			was:     tunnel(true, 100),
			reports: []report{{0, tunnel(true, 200)}, {time.Second, tunnel(false, 300)}, {2 * time.Second, tunnel(true, 310)}},
			want:    []int64{200, 300, 310},
		},
		"TunnelGone": {
			reason:  "A tunnel removed from the status is a change of state.",
			was:     tunnel(true, 100),
			reports: []report{{0, tunnel(true, 200)}, {time.Second, nil}},
			want:    []int64{200, -1},
		},
		"Unchanged": {
			reason:  "A report equal to the status is the status.",
			was:     tunnel(true, 100),
			reports: []report{{0, tunnel(true, 100)}, {time.Second, tunnel(true, 200)}},
			want:    []int64{100, 200},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			h := &counterHold{}
			uid := types.UID("gw-1")
			was := tc.was
			var got []int64
			for _, r := range tc.reports {
				was = h.tunnels(uid, was, r.now, t0.Add(r.after))
				if len(was) == 0 {
					got = append(got, -1)
					continue
				}
				got = append(got, was[0].ChildSAs[0].BytesIn)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\nbytes in of each report's status: -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}
