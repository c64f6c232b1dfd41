// Package v1alpha1 holds the provider configuration of provider-ipsec's
// namespaced managed resources, API group m.ipsecgw.io: ProviderConfig
// (namespaced: a tenant's own credentials, read only from its namespace),
// ClusterProviderConfig (cluster-scoped: credentials the platform offers to
// every namespace) and ProviderConfigUsage (namespaced: one per managed
// resource, for either kind). The cluster-scoped managed resources keep
// using the ProviderConfig of apis/cluster/v1alpha1.
// +kubebuilder:object:generate=true
// +groupName=m.ipsecgw.io
// +versionName=v1alpha1
package v1alpha1
