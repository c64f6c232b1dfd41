// Package v1alpha1 holds the namespaced Gateway managed resource, API group
// gateway.m.ipsecgw.io: the namespaced twin of
// apis/cluster/gateway/v1alpha1's Gateway, with the same configuration
// (cluster.GatewayConfig) and observation, whose pod and other objects run
// in the Gateway's own namespace and whose PSK Secrets are read from that
// namespace only. It uses a ProviderConfig of its own namespace or a
// ClusterProviderConfig (m.ipsecgw.io) for the target cluster.
// +kubebuilder:object:generate=true
// +groupName=gateway.m.ipsecgw.io
// +versionName=v1alpha1
package v1alpha1
