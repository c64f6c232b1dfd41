package gateway

import (
	"context"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ipsecgw/provider-ipsec/internal/render"
	"github.com/ipsecgw/provider-ipsec/internal/workload"
)

// keepLegacyTemplate makes the desired gateway Deployment of e.objects keep
// the pod template annotations of live, the cluster's Deployment, when a
// provider before start hashes made it and its pod need not be replaced:
// then the desired template is the one that provider rendered
// (workload.LegacyTemplate: live's workload.AnnotationHash, value
// unchanged, no workload.AnnotationStartHash, the agent reading its
// mounted files), so that applying it changes nothing in the pod template
// and a provider upgrade replaces no gateway pod (with replicas 1 that
// would be an outage). Dropping the
// legacy annotation instead would not do: server-side apply removes a
// field its manager owned and no longer applies, which changes the
// template as much as a new value.
//
// The pod need not be replaced while the strongswan.conf fragment it
// started with is still the desired one (same start hash) and the network
// attachment and images are unchanged; otherwise it is replaced anyway,
// and the template takes the new form. Which fragment a legacy pod started
// with is known once: when the legacy hash is render.ConfigHash of the live
// ConfigMap's files (the older provider rolled the pod on every change of
// them, so its charon started with that ConfigMap's fragment). A legacy
// pod template that was not made for the live ConfigMap (the older
// provider stopped between applying the two) is not trusted and takes the
// new form. The start hash found so is kept in the Deployment's own
// annotations (workload.AnnotationStartHash, which replaces no pod), since
// the ConfigMap moves on with the next tunnel change while the legacy
// template stays. The live ConfigMap is read here, in Observe, before
// anything is applied, and e.get keeps that read for the reconcile.
func (e *external) keepLegacyTemplate(ctx context.Context, live *appsv1.Deployment, n workload.Names) error {
	want, _ := desired[*appsv1.Deployment](e.objects, n.Gateway)
	config, _ := desired[*corev1.ConfigMap](e.objects, n.Config)
	la := live.Spec.Template.Annotations
	legacy, ok := la[workload.AnnotationHash]
	if want == nil || config == nil || !ok {
		return nil
	}
	if _, ok := la[workload.AnnotationStartHash]; ok {
		return nil
	}
	wa := want.Spec.Template.Annotations
	if la[workload.AnnotationNetworkHash] != wa[workload.AnnotationNetworkHash] || !sameImages(want, live) {
		return nil
	}
	started, known := live.Annotations[workload.AnnotationStartHash]
	if !known {
		got, err := e.get(ctx, config)
		if kerrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return err
		}
		data := got.(*corev1.ConfigMap).Data
		ss := []byte(data[workload.KeyStrongSwanConf])
		if render.ConfigHash([]byte(data[workload.KeySwanctlConf]), []byte(data[workload.KeyNATRules]), ss, nil) != legacy {
			return nil
		}
		started = render.StartHash(ss)
	}
	if started != wa[workload.AnnotationStartHash] {
		return nil
	}
	workload.LegacyTemplate(want, legacy)
	want.Annotations = map[string]string{workload.AnnotationStartHash: started}
	return nil
}

// desired returns the object of type T named name among objs, and whether
// there is one.
func desired[T client.Object](objs []client.Object, name string) (T, bool) {
	for _, o := range objs {
		if t, ok := o.(T); ok && o.GetName() == name {
			return t, true
		}
	}
	var zero T
	return zero, false
}

// sameImages says whether each container of want, the desired Deployment,
// has its image in got, the cluster's, at the same place.
func sameImages(want, got *appsv1.Deployment) bool {
	gc := got.Spec.Template.Spec.Containers
	for i, c := range want.Spec.Template.Spec.Containers {
		if i >= len(gc) || gc[i].Image != c.Image {
			return false
		}
	}
	return true
}
