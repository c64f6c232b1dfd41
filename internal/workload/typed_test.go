package workload

import (
	"encoding/json"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ipsecgw/provider-ipsec/apis/cluster/gateway/v1alpha1"
	"github.com/ipsecgw/provider-ipsec/internal/render"
)

// typedObjects is Build's objects as the typed objects they describe, in
// apply order (the Deployment last): what the API server stores for each
// apply configuration, before its defaults, and what providers before
// apply configurations applied as typed objects.
func typedObjects(gw *v1alpha1.Gateway, f *render.Files) ([]client.Object, error) {
	o, err := Build(gw, f)
	if err != nil {
		return nil, err
	}
	return typed(o)
}

// typed is o as the typed objects it describes, in apply order.
func typed(o *Objects) ([]client.Object, error) {
	objs := []client.Object{o.NetworkAttachment.DeepCopy()}
	for _, c := range []struct {
		ac  any
		obj client.Object
	}{
		{o.Config, &corev1.ConfigMap{}}, {o.Secrets, &corev1.Secret{}}, {o.Status, &corev1.ConfigMap{}},
		{o.ServiceAccount, &corev1.ServiceAccount{}}, {o.Role, &rbacv1.Role{}}, {o.RoleBinding, &rbacv1.RoleBinding{}},
		{o.NetworkPolicy, &networkingv1.NetworkPolicy{}}, {o.Lease, &coordinationv1.Lease{}}, {o.Deployment, &appsv1.Deployment{}},
	} {
		b, err := json.Marshal(c.ac)
		if err != nil {
			return nil, err
		}
		if err := json.Unmarshal(b, c.obj); err != nil {
			return nil, err
		}
		objs = append(objs, c.obj)
	}
	return objs, nil
}
