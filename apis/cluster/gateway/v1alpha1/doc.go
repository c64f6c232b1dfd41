// Package v1alpha1 holds the cluster-scoped Gateway managed resource, API
// group gateway.ipsecgw.io: a strongSwan site-to-site VPN gateway that runs
// as a pod in the ProviderConfig's target cluster.
// +kubebuilder:object:generate=true
// +groupName=gateway.ipsecgw.io
// +versionName=v1alpha1
package v1alpha1
