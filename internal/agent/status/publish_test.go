package status

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/ipsecgw/provider-ipsec/apis/cluster/gateway/v1alpha1"
	"github.com/ipsecgw/provider-ipsec/internal/workload"
)

func TestPublisher(t *testing.T) {
	down := []v1alpha1.TunnelStatus{{Name: "a", IKEState: StateDown}}
	const downJSON = `[{"name":"a","ikeState":"DOWN"}]`
	errBoom := errors.New("boom")
	cm := func(data map[string]string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "gw-status"}, Data: data}
	}
	type want struct {
		data   map[string]string
		writes int
		wait   time.Duration
		err    bool
	}
	cases := map[string]struct {
		reason   string
		existing *corev1.ConfigMap
		failGet  bool
		tunnels  []v1alpha1.TunnelStatus
		loaded   string
		want     want
	}{
		"Loaded": {
			reason:  "The loaded configuration's hash is written beside the tunnels.",
			tunnels: down,
			loaded:  "h1",
			want:    want{data: map[string]string{KeyTunnels: downJSON, workload.KeyConfigHash: "h1"}, writes: 1},
		},
		"NewlyLoaded": {
			reason:   "A newly loaded configuration is written although the tunnels did not change.",
			existing: cm(map[string]string{KeyTunnels: downJSON, workload.KeyConfigHash: "h1"}),
			tunnels:  down,
			loaded:   "h2",
			want:     want{data: map[string]string{KeyTunnels: downJSON, workload.KeyConfigHash: "h2"}, writes: 1},
		},
		"SameLoaded": {
			reason:   "A ConfigMap that already holds the status and the loaded hash is not written.",
			existing: cm(map[string]string{KeyTunnels: downJSON, workload.KeyConfigHash: "h1"}),
			tunnels:  down,
			loaded:   "h1",
			want:     want{data: map[string]string{KeyTunnels: downJSON, workload.KeyConfigHash: "h1"}},
		},
		"Create": {
			reason:  "A missing ConfigMap is created with tunnels.json.",
			tunnels: down,
			want:    want{data: map[string]string{KeyTunnels: downJSON}, writes: 1},
		},
		"Empty": {
			reason: "No tunnels is an empty array, not null.",
			want:   want{data: map[string]string{KeyTunnels: `[]`}, writes: 1},
		},
		"Replace": {
			reason:   "Anything else in the ConfigMap is replaced.",
			existing: cm(map[string]string{"other": "x", KeyTunnels: "[]"}),
			tunnels:  down,
			want:     want{data: map[string]string{KeyTunnels: downJSON}, writes: 1},
		},
		"KeepsActivePod": {
			reason:   "The active pod of an active/standby gateway, which the agent reports beside the tunnels, stays.",
			existing: cm(map[string]string{"other": "x", KeyTunnels: "[]", workload.KeyLeader: `{"pod":"vpn-a"}`}),
			tunnels:  down,
			want:     want{data: map[string]string{KeyTunnels: downJSON, workload.KeyLeader: `{"pod":"vpn-a"}`}, writes: 1},
		},
		"SameWithActivePod": {
			reason:   "A ConfigMap that already holds the status beside the active pod is not written.",
			existing: cm(map[string]string{KeyTunnels: downJSON, workload.KeyLeader: `{"pod":"vpn-a"}`}),
			tunnels:  down,
			want:     want{data: map[string]string{KeyTunnels: downJSON, workload.KeyLeader: `{"pod":"vpn-a"}`}},
		},
		"Same": {
			reason:   "A ConfigMap that already holds the status is not written.",
			existing: cm(map[string]string{KeyTunnels: downJSON}),
			tunnels:  down,
			want:     want{data: map[string]string{KeyTunnels: downJSON}},
		},
		"GetFails": {
			reason:   "A failed read is an error.",
			existing: cm(map[string]string{KeyTunnels: "[]"}),
			failGet:  true,
			tunnels:  down,
			want:     want{data: map[string]string{KeyTunnels: "[]"}, err: true},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			writes, failGet := 0, tc.failGet
			b := fake.NewClientBuilder().WithInterceptorFuncs(interceptor.Funcs{
				Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
					if failGet {
						return errBoom
					}
					return c.Get(ctx, key, obj, opts...)
				},
				Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
					writes++
					return c.Create(ctx, obj, opts...)
				},
				Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
					writes++
					return c.Update(ctx, obj, opts...)
				},
			})
			if tc.existing != nil {
				b = b.WithObjects(tc.existing)
			}
			kube := b.Build()
			p := &Publisher{Client: kube, Namespace: "ns", Name: "gw-status"}
			p.SetLoaded(tc.loaded)
			wait, err := p.Publish(context.Background(), tc.tunnels)
			if (err != nil) != tc.want.err {
				t.Fatalf("\n%s\nPublish(...): error %v, want error %v", tc.reason, err, tc.want.err)
			}
			failGet = false
			got := &corev1.ConfigMap{}
			_ = kube.Get(context.Background(), client.ObjectKey{Namespace: "ns", Name: "gw-status"}, got)
			if diff := cmp.Diff(tc.want.data, got.Data); diff != "" {
				t.Errorf("\n%s\nConfigMap data: -want, +got:\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(tc.want.writes, writes); diff != "" {
				t.Errorf("\n%s\nwrites: -want, +got:\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(tc.want.wait, wait); diff != "" {
				t.Errorf("\n%s\nwait: -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

// TestPublisherRateLimit checks the sequence of a running agent: a change
// right after a write is written at once (the burst), one more within
// MinInterval waits for the bucket, unchanged content costs no API call,
// and a failed write is retried on the next call.
func TestPublisherRateLimit(t *testing.T) {
	clock := now
	calls, failUpdate := 0, false
	kube := fake.NewClientBuilder().WithInterceptorFuncs(interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			calls++
			return c.Get(ctx, key, obj, opts...)
		},
		Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			calls++
			if failUpdate {
				return errors.New("conflict")
			}
			return c.Update(ctx, obj, opts...)
		},
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			calls++
			return c.Create(ctx, obj, opts...)
		},
	}).Build()
	p := &Publisher{Client: kube, Namespace: "ns", Name: "gw-status", MinInterval: 5 * time.Second, Now: func() time.Time { return clock }}
	a := []v1alpha1.TunnelStatus{{Name: "a", IKEState: StateDown}}
	b := []v1alpha1.TunnelStatus{{Name: "a", IKEState: StateEstablished}}
	c := []v1alpha1.TunnelStatus{{Name: "a", IKEState: StateDown, LastError: "peer closed the IKE SA"}}
	type step struct {
		advance   time.Duration
		tunnels   []v1alpha1.TunnelStatus
		failWrite bool
		wait      time.Duration
		calls     int
		err       bool
	}
	steps := []step{
		{tunnels: a, calls: 2},                       // get (missing), create: 1 token left
		{advance: time.Second, tunnels: a, calls: 0}, // unchanged: no call
		{tunnels: b, calls: 2},                       // changed: the burst's second write, get, update
		{tunnels: c, wait: 4 * time.Second},          // changed again: 0.2 tokens, held back 4 s
		{advance: 4 * time.Second, tunnels: c, failWrite: true, calls: 2, err: true}, // get, update fails: no token spent
		{tunnels: c, calls: 2},           // retried: get, update
		{advance: time.Hour, tunnels: c}, // unchanged
	}
	for i, s := range steps {
		clock = clock.Add(s.advance)
		calls, failUpdate = 0, s.failWrite
		wait, err := p.Publish(context.Background(), s.tunnels)
		// The bucket counts in floating point: a wait is right to the
		// millisecond it is rounded up to.
		if (err != nil) != s.err || (wait-s.wait).Abs() > time.Millisecond || calls != s.calls {
			t.Errorf("step %d: wait %v, %d API calls, error %v; want wait %v, %d calls, error %v", i, wait, calls, err, s.wait, s.calls, s.err)
		}
	}
}
