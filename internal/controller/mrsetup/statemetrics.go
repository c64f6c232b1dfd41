package mrsetup

import (
	"fmt"

	"github.com/crossplane/crossplane-runtime/v2/pkg/controller"
	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"
	"github.com/crossplane/crossplane-runtime/v2/pkg/statemetrics"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// stateRecorder returns the recorder of crossplane-runtime's MR state
// metrics (crossplane_managed_resource_exists, _ready and _synced, by gvk)
// for kind gvk, listing its resources with c every
// o.MetricOptions.PollStateMetricInterval (--poll-state-metric); nil when
// o configures no state metrics. It returns an error when the scheme of c
// has no list type for gvk.
func stateRecorder(c client.Client, o controller.Options, gvk schema.GroupVersionKind) (*statemetrics.MRStateRecorder, error) {
	m := o.MetricOptions
	if m == nil || m.MRStateMetrics == nil || m.PollStateMetricInterval <= 0 {
		return nil, nil
	}
	obj, err := c.Scheme().New(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
	if err != nil {
		return nil, fmt.Errorf("cannot make the list of %s for its state metrics: %w", gvk.Kind, err)
	}
	list, ok := obj.(resource.ManagedList)
	if !ok {
		return nil, fmt.Errorf("%sList is not a list of managed resources", gvk.Kind)
	}
	return statemetrics.NewMRStateRecorder(c, o.Logger.WithValues("recorder", gvk.Kind+"-state"), m.MRStateMetrics, list, m.PollStateMetricInterval), nil
}
