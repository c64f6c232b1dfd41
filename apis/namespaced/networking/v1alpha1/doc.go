// Package v1alpha1 holds the namespaced OpenStack Neutron managed resources
// of provider-ipsec, API group networking.m.ipsecgw.io: the namespaced twins
// of apis/cluster/networking/v1alpha1's kinds, with the same parameters and
// observations (the same Go types, or for kinds with references a copy that
// converts to the cluster type, so that one controller serves both scopes).
// A namespaced managed resource uses a ProviderConfig of its own namespace
// or a ClusterProviderConfig (m.ipsecgw.io), and its references name
// managed resources of its own namespace only.
// +kubebuilder:object:generate=true
// +groupName=networking.m.ipsecgw.io
// +versionName=v1alpha1
package v1alpha1
