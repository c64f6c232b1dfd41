package v1alpha1

import (
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A FixedIP asks for an address on a subnet of the port's network.
// +kubebuilder:validation:XValidation:rule="has(self.subnetId) || has(self.ipAddress)",message="a fixed IP needs subnetId, ipAddress or both"
type FixedIP struct {
	// SubnetID of the subnet the address is from.
	// +optional
	SubnetID *UUID `json:"subnetId,omitempty"`
	// IPAddress to take; Neutron picks a free one when unset.
	// +optional
	IPAddress *IPAddress `json:"ipAddress,omitempty"`
}

// An AddressPair lets traffic with another address (or network) pass the
// port's anti-spoofing rules (Neutron allowed address pairs).
type AddressPair struct {
	// IPAddress is an address or a network in CIDR notation.
	// +kubebuilder:validation:MaxLength=49
	// +kubebuilder:validation:XValidation:rule="isIP(self) || isCIDR(self)",message="must be an IP address or a network in CIDR notation"
	IPAddress string `json:"ipAddress"`
	// MACAddress; the port's own when unset.
	// +optional
	// +kubebuilder:validation:Pattern=`^([0-9a-f]{2}:){5}[0-9a-f]{2}$`
	MACAddress *string `json:"macAddress,omitempty"`
}

// PortParameters are the desired state of an unbound ("VIP-style") Neutron
// port: no device owner, used by a gateway pod's secondary interface.
// +kubebuilder:validation:XValidation:rule="has(self.networkId) || has(self.networkIdRef) || has(self.networkIdSelector)",message="a port needs networkId, networkIdRef or networkIdSelector"
// +kubebuilder:validation:XValidation:rule="!has(self.portSecurityEnabled) || self.portSecurityEnabled || ((!has(self.securityGroupIds) || size(self.securityGroupIds) == 0) && !has(self.securityGroupIdRefs) && !has(self.securityGroupIdSelector) && (!has(self.allowedAddressPairs) || size(self.allowedAddressPairs) == 0))",message="security groups and allowed address pairs need portSecurityEnabled"
type PortParameters struct {
	// NetworkID of the network the port is on. Set it, or let
	// networkIdRef or networkIdSelector fill it in.
	// +optional
	// +kubebuilder:validation:Pattern=`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="networkId is immutable: Neutron cannot move a port to another network"
	// +crossplane:generate:reference:type=Network
	NetworkID *string `json:"networkId,omitempty"`

	// NetworkIDRef references the Network managed resource whose ID (its
	// external name) fills networkId, resolved at every reconcile (policy
	// resolve IfNotPresent resolves once).
	// +optional
	NetworkIDRef *xpv2.Reference `json:"networkIdRef,omitempty"`

	// NetworkIDSelector selects a Network managed resource by label to fill
	// networkId, again at every reconcile (policy resolve IfNotPresent
	// selects once).
	// +optional
	NetworkIDSelector *xpv2.Selector `json:"networkIdSelector,omitempty"`

	// Name of the port in Neutron.
	// +optional
	// +kubebuilder:validation:MaxLength=255
	Name *string `json:"name,omitempty"`

	// Description of the port. A port the provider creates carries
	// " [crossplane-mr-<hash of this resource's namespace and name>]" after
	// it in Neutron (see MaxDescriptionLength).
	// +optional
	// +kubebuilder:validation:MaxLength=201
	Description *string `json:"description,omitempty"`

	// FixedIPs of the port. Neutron picks one from the network when unset.
	// +optional
	// +kubebuilder:validation:MaxItems=8
	FixedIPs []FixedIP `json:"fixedIps,omitempty"`

	// SecurityGroupIDs of the port.
	// +optional
	// +crossplane:generate:reference:type=SecurityGroup
	// +crossplane:generate:reference:refFieldName=SecurityGroupIDRefs
	// +crossplane:generate:reference:selectorFieldName=SecurityGroupIDSelector
	SecurityGroupIDs []string `json:"securityGroupIds,omitempty"`

	// SecurityGroupIDRefs reference SecurityGroup managed resources whose
	// IDs make up securityGroupIds, resolved at every reconcile (policy
	// resolve IfNotPresent on every reference resolves once).
	// +optional
	SecurityGroupIDRefs []xpv2.Reference `json:"securityGroupIdRefs,omitempty"`

	// SecurityGroupIDSelector selects SecurityGroup managed resources by
	// label, again at every reconcile (policy resolve IfNotPresent selects
	// once).
	// +optional
	SecurityGroupIDSelector *xpv2.Selector `json:"securityGroupIdSelector,omitempty"`

	// AllowedAddressPairs of the port, such as the client subnets a gateway
	// routes in mode routed.
	// +optional
	// +kubebuilder:validation:MaxItems=64
	AllowedAddressPairs []AddressPair `json:"allowedAddressPairs,omitempty"`

	// PortSecurityEnabled turns Neutron's anti-spoofing and security groups
	// on the port on or off.
	// +optional
	PortSecurityEnabled *bool `json:"portSecurityEnabled,omitempty"`

	// Tags of the port, besides the one the provider adds.
	// +optional
	// +kubebuilder:validation:MaxItems=32
	Tags []string `json:"tags,omitempty"`
}

// An ObservedFixedIP is an address the port has, with the network facts
// of its subnet that a gateway on the port needs.
type ObservedFixedIP struct {
	SubnetID  string `json:"subnetId"`
	IPAddress string `json:"ipAddress"`
	// SubnetCIDR is the subnet's network in CIDR notation, such as
	// 10.20.0.0/24 (Neutron subnet cidr).
	SubnetCIDR string `json:"subnetCidr,omitempty"`
	// GatewayIP is the subnet's gateway address, empty when the subnet
	// has none (Neutron subnet gateway_ip).
	GatewayIP string `json:"gatewayIp,omitempty"`
}

// PortObservation is the state of the port in Neutron.
type PortObservation struct {
	// ID of the port.
	ID string `json:"id,omitempty"`
	// FixedIPs the port has.
	FixedIPs []ObservedFixedIP `json:"fixedIps,omitempty"`
	// MACAddress of the port.
	MACAddress string `json:"macAddress,omitempty"`
	// Status of the port (DOWN while no device uses it).
	Status string `json:"status,omitempty"`
	// RevisionNumber of the port.
	RevisionNumber int `json:"revisionNumber,omitempty"`
}

// A PortSpec defines the desired state of a Port.
type PortSpec struct {
	xpv2.ClusterManagedResourceSpec `json:",inline"`
	ForProvider                     PortParameters `json:"forProvider"`
}

// A PortStatus represents the observed state of a Port.
type PortStatus struct {
	xpv2.ManagedResourceStatus `json:",inline"`
	AtProvider                 PortObservation `json:"atProvider,omitempty"`
}

// +kubebuilder:object:root=true

// A Port is an unbound Neutron port: the fixed IP, MAC and security groups
// a gateway pod's secondary interface takes.
// +kubebuilder:printcolumn:name="READY",type="string",JSONPath=".status.conditions[?(@.type=='Ready')].status"
// +kubebuilder:printcolumn:name="SYNCED",type="string",JSONPath=".status.conditions[?(@.type=='Synced')].status"
// +kubebuilder:printcolumn:name="FIXED-IP",type="string",JSONPath=".status.atProvider.fixedIps[0].ipAddress"
// +kubebuilder:printcolumn:name="MAC",type="string",JSONPath=".status.atProvider.macAddress"
// +kubebuilder:printcolumn:name="EXTERNAL-NAME",type="string",JSONPath=".metadata.annotations.crossplane\\.io/external-name"
// +kubebuilder:printcolumn:name="AGE",type="date",JSONPath=".metadata.creationTimestamp"
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,categories={crossplane,managed,openstack}
type Port struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   PortSpec   `json:"spec"`
	Status PortStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// PortList contains a list of Port.
type PortList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Port `json:"items"`
}
