// Package v1alpha1 holds the cluster-scoped OpenStack Neutron managed
// resources of provider-ipsec, API group networking.ipsecgw.io:
// SecurityGroup, Port, FloatingIPBinding and RouterRoutes. Field names
// follow the Neutron API (https://docs.openstack.org/api-ref/network/v2/).
// The external name of each is the Neutron UUID (for RouterRoutes, the
// router's), set by Create.
// +kubebuilder:object:generate=true
// +groupName=networking.ipsecgw.io
// +versionName=v1alpha1
package v1alpha1
