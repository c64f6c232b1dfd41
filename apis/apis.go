// Package apis holds the API types of provider-ipsec. Cluster-scoped kinds
// live under apis/cluster; their namespaced twins, in ".m." groups, under
// apis/namespaced.
package apis

import (
	"k8s.io/apimachinery/pkg/runtime"

	gatewayv1alpha1 "github.com/ipsecgw/provider-ipsec/apis/cluster/gateway/v1alpha1"
	networkingv1alpha1 "github.com/ipsecgw/provider-ipsec/apis/cluster/networking/v1alpha1"
	clusterv1alpha1 "github.com/ipsecgw/provider-ipsec/apis/cluster/v1alpha1"
	nsgatewayv1alpha1 "github.com/ipsecgw/provider-ipsec/apis/namespaced/gateway/v1alpha1"
	nsnetworkingv1alpha1 "github.com/ipsecgw/provider-ipsec/apis/namespaced/networking/v1alpha1"
	nsv1alpha1 "github.com/ipsecgw/provider-ipsec/apis/namespaced/v1alpha1"
)

// AddToSchemes registers every API group of the provider with a Scheme.
var AddToSchemes = runtime.SchemeBuilder{
	clusterv1alpha1.SchemeBuilder.AddToScheme,
	gatewayv1alpha1.SchemeBuilder.AddToScheme,
	networkingv1alpha1.SchemeBuilder.AddToScheme,
	nsv1alpha1.SchemeBuilder.AddToScheme,
	nsnetworkingv1alpha1.SchemeBuilder.AddToScheme,
	nsgatewayv1alpha1.SchemeBuilder.AddToScheme,
}

// AddToScheme adds all of the provider's types to s. It returns the first
// registration error.
func AddToScheme(s *runtime.Scheme) error {
	return AddToSchemes.AddToScheme(s)
}
