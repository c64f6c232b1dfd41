package v1alpha1

import (
	cluster "github.com/ipsecgw/provider-ipsec/apis/cluster/gateway/v1alpha1"
)

// Cluster returns the cluster-scoped Gateway that the Gateway controller
// works on: copies of mg's metadata, configuration and status, with
// spec.forProvider.namespace mg's own namespace, so that its objects run
// and its PSK Secrets are read there and nowhere else.
func (mg *Gateway) Cluster() *cluster.Gateway {
	c := mg.DeepCopy()
	return &cluster.Gateway{ObjectMeta: c.ObjectMeta,
		Spec:   cluster.GatewaySpec{ForProvider: cluster.GatewayParameters{Namespace: c.Namespace, GatewayConfig: c.Spec.ForProvider}},
		Status: cluster.GatewayStatus(c.Status)}
}

// FromCluster sets mg's metadata, configuration and status to c's (c's
// namespace parameter is mg's own namespace, see Cluster).
func (mg *Gateway) FromCluster(c *cluster.Gateway) {
	mg.ObjectMeta, mg.Spec.ForProvider, mg.Status = c.ObjectMeta, c.Spec.ForProvider.GatewayConfig, GatewayStatus(c.Status)
}
