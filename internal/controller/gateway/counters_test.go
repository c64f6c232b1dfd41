package gateway

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ipsecgw/provider-ipsec/apis/cluster/gateway/v1alpha1"
)

func TestDetailHold(t *testing.T) {
	t0 := time.Unix(1795990000, 0)
	// obs is a Gateway's observed state with one tunnel, up or not, that
	// counted bytes, ready pods ready and the active pod leader.
	obs := func(up bool, bytes int64, ready int32, leader string) v1alpha1.GatewayObservation {
		o := v1alpha1.GatewayObservation{Replicas: 2, ReadyReplicas: ready, BytesIn: bytes, BytesOut: bytes,
			Tunnels: []v1alpha1.TunnelStatus{{Name: "branch-a", Up: up, IKEState: "ESTABLISHED",
				ChildSAs: []v1alpha1.ChildSAStatus{{Name: "branch-a-1", State: "INSTALLED", BytesIn: bytes, BytesOut: bytes, PacketsIn: bytes / 10, PacketsOut: bytes / 10}}}}}
		if leader != "" {
			o.Leader = &v1alpha1.LeaderStatus{Pod: leader}
		}
		return o
	}
	type report struct {
		after time.Duration
		now   v1alpha1.GatewayObservation
	}
	// written is what of an observation the cases compare.
	type written struct {
		Bytes  int64
		Ready  int32
		Leader string
		// Due is when the Gateway is observed again (poll 1 minute).
		Due time.Duration
	}
	cases := map[string]struct {
		reason string
		// was is the status before the first report; each report's status
		// is what the previous one returned.
		was     v1alpha1.GatewayObservation
		reports []report
		want    []written
	}{
		"CountersHeld": {
			reason: "Reports that change only the counters are written at most once per countersInterval: the first (nothing remembered), then 30 s later; meanwhile the Gateway is observed again when the held one may be written.",
			was:    obs(true, 100, 2, "a"),
			reports: []report{{0, obs(true, 200, 2, "a")}, {10 * time.Second, obs(true, 300, 2, "a")},
				{20 * time.Second, obs(true, 400, 2, "a")}, {30 * time.Second, obs(true, 500, 2, "a")}},
			want: []written{{200, 2, "a", time.Minute}, {200, 2, "a", 20 * time.Second}, {200, 2, "a", 10 * time.Second}, {500, 2, "a", time.Minute}},
		},
		"StateAtOnce": {
			reason: "A change of state is written at once, with its counters, within countersInterval of the last write.",
			was:    obs(true, 100, 2, "a"),
			reports: []report{{0, obs(true, 200, 2, "a")}, {time.Second, obs(false, 300, 2, "a")},
				{2 * time.Second, obs(true, 310, 2, "a")}},
			want: []written{{200, 2, "a", time.Minute}, {300, 2, "a", time.Minute}, {310, 2, "a", time.Minute}},
		},
		"TakeoverCarriesReadyPods": {
			reason: "A takeover (the active pod deleted: one pod ready, another active) is written at once; its replacement's readiness alone is held, and written 30 s after the last write.",
			was:    obs(true, 100, 2, "a"),
			reports: []report{{0, obs(true, 100, 1, "b")}, {5 * time.Second, obs(true, 100, 2, "b")},
				{10 * time.Second, obs(true, 100, 1, "c")}, {15 * time.Second, obs(true, 100, 2, "c")},
				{40 * time.Second, obs(true, 100, 2, "c")}},
			want: []written{{100, 1, "b", time.Minute}, {100, 1, "b", 25 * time.Second}, {100, 1, "c", time.Minute},
				{100, 1, "c", 25 * time.Second}, {100, 2, "c", time.Minute}},
		},
		"NoPodReady": {
			reason: "The last ready pod gone, and the first one ready again, are changes of state: written at once.",
			was:    obs(true, 100, 1, ""),
			reports: []report{{0, obs(true, 100, 2, "")}, {time.Second, obs(true, 100, 0, "")},
				{2 * time.Second, obs(true, 100, 1, "")}},
			want: []written{{100, 2, "", time.Minute}, {100, 0, "", time.Minute}, {100, 1, "", time.Minute}},
		},
		"TunnelGone": {
			reason:  "A tunnel removed from the status is a change of state.",
			was:     obs(true, 100, 1, ""),
			reports: []report{{0, obs(true, 200, 1, "")}, {time.Second, v1alpha1.GatewayObservation{Replicas: 2, ReadyReplicas: 1}}},
			want:    []written{{200, 1, "", time.Minute}, {0, 1, "", time.Minute}},
		},
		"Unchanged": {
			reason:  "A report equal to the status is the status, and is no write: the next change of counters alone is written.",
			was:     obs(true, 100, 1, ""),
			reports: []report{{0, obs(true, 100, 1, "")}, {time.Second, obs(true, 200, 1, "")}},
			want:    []written{{100, 1, "", time.Minute}, {200, 1, "", time.Minute}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			h := &detailHold{}
			uid := types.UID("gw-1")
			was := tc.was
			var got []written
			for _, r := range tc.reports {
				at := t0.Add(r.after)
				was = h.observation(uid, was, r.now, at)
				w := written{Bytes: was.BytesIn, Ready: was.ReadyReplicas, Due: h.due(uid, time.Minute, at)}
				if was.Leader != nil {
					w.Leader = was.Leader.Pod
				}
				got = append(got, w)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\neach report's status: -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}
