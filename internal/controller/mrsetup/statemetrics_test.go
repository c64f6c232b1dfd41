package mrsetup

import (
	"context"
	"testing"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/controller"
	"github.com/crossplane/crossplane-runtime/v2/pkg/logging"
	"github.com/crossplane/crossplane-runtime/v2/pkg/statemetrics"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/ipsecgw/provider-ipsec/apis"
	"github.com/ipsecgw/provider-ipsec/apis/cluster/networking/v1alpha1"
)

func TestStateRecorder(t *testing.T) {
	s := runtime.NewScheme()
	if err := apis.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	port := func(name string, c ...xpv2.Condition) client.Object {
		p := &v1alpha1.Port{ObjectMeta: metav1.ObjectMeta{Name: name}}
		p.SetConditions(c...)
		return p
	}
	type gauges struct{ Exists, Ready, Synced float64 }
	cases := map[string]struct {
		reason  string
		metrics bool
		objs    []client.Object
		want    *gauges
	}{
		"NotConfigured": {
			reason: "Without state metrics (no --poll-state-metric interval or recorder) no recorder is made.",
		},
		"Counted": {
			reason:  "The recorder counts the kind's resources, those Ready and those Synced.",
			metrics: true,
			objs: []client.Object{
				port("ready", xpv2.Available(), xpv2.ReconcileSuccess()),
				port("synced", xpv2.Creating(), xpv2.ReconcileSuccess()),
				port("failing", xpv2.Unavailable(), xpv2.ReconcileError(context.DeadlineExceeded)),
			},
			want: &gauges{Exists: 3, Ready: 1, Synced: 2},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			o := controller.Options{Logger: logging.NewNopLogger()}
			m := statemetrics.NewMRStateMetrics()
			if tc.metrics {
				o.MetricOptions = &controller.MetricOptions{PollStateMetricInterval: time.Second, MRStateMetrics: m}
			}
			c := fake.NewClientBuilder().WithScheme(s).WithObjects(tc.objs...).Build()
			r, err := stateRecorder(c, o, v1alpha1.PortGroupVersionKind)
			if err != nil {
				t.Fatal(err)
			}
			var got *gauges
			if r != nil {
				if err := r.Record(context.Background()); err != nil {
					t.Fatal(err)
				}
				gvk := v1alpha1.PortGroupVersionKind.String()
				got = &gauges{
					Exists: testutil.ToFloat64(m.Exists.WithLabelValues(gvk)),
					Ready:  testutil.ToFloat64(m.Ready.WithLabelValues(gvk)),
					Synced: testutil.ToFloat64(m.Synced.WithLabelValues(gvk)),
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\n-want +got:\n%s", tc.reason, diff)
			}
		})
	}
}
