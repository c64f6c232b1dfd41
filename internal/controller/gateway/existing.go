package gateway

import (
	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ipsecgw/provider-ipsec/apis/cluster/gateway/v1alpha1"
	"github.com/ipsecgw/provider-ipsec/internal/workload"
)

// existing returns empty objects, named as the Gateway's objects are, of
// every kind it creates, in creation order: what Delete and a deleting
// Observe look for without rendering.
func existing(gw *v1alpha1.Gateway) []client.Object {
	n := workload.NamesOf(gw.Name)
	m := func(name string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Namespace: gw.Spec.ForProvider.Namespace, Name: name}
	}
	nad := &unstructured.Unstructured{}
	nad.SetGroupVersionKind(workload.NADKind)
	nad.SetNamespace(gw.Spec.ForProvider.Namespace)
	nad.SetName(n.Gateway)
	return []client.Object{
		nad,
		&corev1.ConfigMap{ObjectMeta: m(n.Config)},
		&corev1.Secret{ObjectMeta: m(n.Secrets)},
		&corev1.ConfigMap{ObjectMeta: m(n.Status)},
		&corev1.ServiceAccount{ObjectMeta: m(n.Gateway)},
		&rbacv1.Role{ObjectMeta: m(n.Gateway)},
		&rbacv1.RoleBinding{ObjectMeta: m(n.Gateway)},
		&networkingv1.NetworkPolicy{ObjectMeta: m(n.Gateway)},
		&coordinationv1.Lease{ObjectMeta: m(n.Gateway)},
		&appsv1.Deployment{ObjectMeta: m(n.Gateway)},
	}
}
