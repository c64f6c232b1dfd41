package function

import (
	gwv1alpha1 "github.com/ipsecgw/provider-ipsec/apis/cluster/gateway/v1alpha1"
)

// An XIPsecGateway is the composite resource of the IPsecGateway XRD
// (package/configuration/zz_generated_definition.yaml) as the function reads
// it: its metadata and spec. The XRD's schema stays the one source of the
// validation; these types only name its fields. Those hack/xrdgen takes from
// the Gateway CRD (dataPlane, replicas, tcpMSS, tenantSubnets, tunnels,
// exposures, reverseExposures, nodeSelector) are the Gateway's own Go types,
// from which that CRD is generated; the hand-written rest (endpoint, network, mode,
// routed, nodePorts) is
// checked against the generated XRD by TestSpecMatchesXRD, so a field added
// to one and not the other fails the unit tests.
type XIPsecGateway struct {
	Metadata Metadata          `json:"metadata"`
	Spec     XIPsecGatewaySpec `json:"spec"`
}

// Metadata is the part of the composite's metadata the function reads (the
// v1 XRD's composite is cluster-scoped: it has no namespace; the
// namespaced IPsecGateway's has, see owner).
type Metadata struct {
	Name      string            `json:"name,omitempty"`
	Namespace string            `json:"namespace,omitempty"`
	Labels    map[string]string `json:"labels,omitempty"`
}

// XIPsecGatewaySpec is the spec of an XIPsecGateway.
type XIPsecGatewaySpec struct {
	// ClaimRef is the claim the composite is for (set by Crossplane).
	ClaimRef *ClaimReference `json:"claimRef,omitempty"`

	// ProviderConfigName is the ProviderConfig of every composed resource.
	ProviderConfigName string `json:"providerConfigName,omitempty"`

	// Endpoint is the public side: a pinned or an allocated floating IP.
	Endpoint Endpoint `json:"endpoint"`

	// Network is where the gateway's Neutron port is.
	Network Network `json:"network"`

	// Mode is nat (the XRD's default) or routed.
	Mode gwv1alpha1.Mode `json:"mode,omitempty"`

	// Routed is mode routed's router and client subnets.
	Routed *Routed `json:"routed,omitempty"`

	// DataPlane is the Gateway's spec.forProvider.dataPlane.
	DataPlane gwv1alpha1.DataPlane `json:"dataPlane,omitempty"`

	// Replicas is the Gateway's spec.forProvider.replicas: 1, or 2 for
	// active/standby pods.
	Replicas *int32 `json:"replicas,omitempty"`

	// TCPMSS is the Gateway's spec.forProvider.tcpMSS: the TCP MSS, in
	// bytes, of the tunnels without one of their own.
	TCPMSS *int32 `json:"tcpMSS,omitempty"`

	// TenantSubnets are the Gateway's, and each is a security group rule.
	TenantSubnets []gwv1alpha1.CIDR `json:"tenantSubnets,omitempty"`

	// Tunnels are the Gateway's.
	Tunnels []gwv1alpha1.Tunnel `json:"tunnels,omitempty"`

	// Exposures are the Gateway's.
	Exposures []gwv1alpha1.Exposure `json:"exposures,omitempty"`

	// ReverseExposures are the Gateway's.
	ReverseExposures []gwv1alpha1.ReverseExposure `json:"reverseExposures,omitempty"`

	// NodeSelector is the Gateway's: the nodes the gateway pod may run on,
	// which are also the nodes whose Neutron ports get its address pairs.
	NodeSelector map[string]string `json:"nodeSelector,omitempty"`

	// NodePorts says whether the nodes' Neutron ports get the gateway's
	// allowed address pairs (a NodeAddressPairs): AddressPairs (the XRD's
	// default) or Unmanaged.
	NodePorts NodePorts `json:"nodePorts,omitempty"`
}

// NodePorts is what the provider does to the Neutron ports of the nodes
// that may run the gateway.
type NodePorts string

// The values of spec.nodePorts.
const (
	// NodePortsAddressPairs: a NodeAddressPairs keeps the gateway's fixed
	// IP (and in mode routed the client subnets) with its MAC as allowed
	// address pairs on those ports, as a cloud with port security on needs.
	NodePortsAddressPairs NodePorts = "AddressPairs"
	// NodePortsUnmanaged: the ports are left alone: their port security is
	// off, the nodes are not OpenStack instances, or the platform team
	// grants the pairs itself.
	NodePortsUnmanaged NodePorts = "Unmanaged"
)

// A ClaimReference names the claim of a composite.
type ClaimReference struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
}

// Endpoint is the composite's spec.endpoint: exactly one of FloatingIP and
// FloatingNetworkID (the XRD's rule).
type Endpoint struct {
	// FloatingIP pins an existing floating IP (IPv4).
	FloatingIP string `json:"floatingIP,omitempty"`
	// FloatingNetworkID allocates a floating IP from this external network.
	FloatingNetworkID string `json:"floatingNetworkId,omitempty"`
	// IKESourcePrefix is the source network (IPv4 CIDR) allowed to reach
	// UDP 500 and 4500.
	IKESourcePrefix string `json:"ikeSourcePrefix,omitempty"`
}

// Network is the composite's spec.network.
type Network struct {
	NetworkID string `json:"networkId"`
	SubnetID  string `json:"subnetId"`
	// FixedIP is the port's fixed IP; Neutron picks one when empty.
	FixedIP string `json:"fixedIP,omitempty"`
}

// Routed is the composite's spec.routed.
type Routed struct {
	RouterID      string   `json:"routerId"`
	ClientSubnets []string `json:"clientSubnets"`
}
