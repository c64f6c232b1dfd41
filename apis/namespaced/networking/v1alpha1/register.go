package v1alpha1

import (
	"reflect"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

// Package type metadata.
const (
	Group   = "networking.m.ipsecgw.io"
	Version = "v1alpha1"
)

var (
	// SchemeGroupVersion is the group version used to register these objects.
	SchemeGroupVersion = schema.GroupVersion{Group: Group, Version: Version}

	// SchemeBuilder registers the Go types with a runtime.Scheme.
	SchemeBuilder = &scheme.Builder{GroupVersion: SchemeGroupVersion}
)

// Kind metadata of each managed resource of the group.
var (
	SecurityGroupKind             = reflect.TypeOf(SecurityGroup{}).Name()
	SecurityGroupGroupKind        = schema.GroupKind{Group: Group, Kind: SecurityGroupKind}.String()
	SecurityGroupGroupVersionKind = SchemeGroupVersion.WithKind(SecurityGroupKind)

	NetworkKind             = reflect.TypeOf(Network{}).Name()
	NetworkGroupKind        = schema.GroupKind{Group: Group, Kind: NetworkKind}.String()
	NetworkGroupVersionKind = SchemeGroupVersion.WithKind(NetworkKind)

	PortKind             = reflect.TypeOf(Port{}).Name()
	PortGroupKind        = schema.GroupKind{Group: Group, Kind: PortKind}.String()
	PortGroupVersionKind = SchemeGroupVersion.WithKind(PortKind)

	FloatingIPBindingKind             = reflect.TypeOf(FloatingIPBinding{}).Name()
	FloatingIPBindingGroupKind        = schema.GroupKind{Group: Group, Kind: FloatingIPBindingKind}.String()
	FloatingIPBindingGroupVersionKind = SchemeGroupVersion.WithKind(FloatingIPBindingKind)

	RouterRoutesKind             = reflect.TypeOf(RouterRoutes{}).Name()
	RouterRoutesGroupKind        = schema.GroupKind{Group: Group, Kind: RouterRoutesKind}.String()
	RouterRoutesGroupVersionKind = SchemeGroupVersion.WithKind(RouterRoutesKind)

	NodeAddressPairsKind             = reflect.TypeOf(NodeAddressPairs{}).Name()
	NodeAddressPairsGroupKind        = schema.GroupKind{Group: Group, Kind: NodeAddressPairsKind}.String()
	NodeAddressPairsGroupVersionKind = SchemeGroupVersion.WithKind(NodeAddressPairsKind)
)

func init() {
	SchemeBuilder.Register(&SecurityGroup{}, &SecurityGroupList{})
	SchemeBuilder.Register(&Network{}, &NetworkList{})
	SchemeBuilder.Register(&Port{}, &PortList{})
	SchemeBuilder.Register(&FloatingIPBinding{}, &FloatingIPBindingList{})
	SchemeBuilder.Register(&RouterRoutes{}, &RouterRoutesList{})
	SchemeBuilder.Register(&NodeAddressPairs{}, &NodeAddressPairsList{})
}
