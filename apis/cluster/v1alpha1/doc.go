// Package v1alpha1 holds the cluster-scoped provider configuration of
// provider-ipsec, API group ipsecgw.io: ProviderConfig and
// ProviderConfigUsage. Namespaced twins, when they come, live beside this
// package under apis/namespaced, in ".m." groups.
// +kubebuilder:object:generate=true
// +groupName=ipsecgw.io
// +versionName=v1alpha1
package v1alpha1
