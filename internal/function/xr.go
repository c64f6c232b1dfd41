package function

import (
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	gwv1alpha1 "github.com/ipsecgw/provider-ipsec/apis/cluster/gateway/v1alpha1"
)

// An XIPsecGateway is the composite resource of the IPsecGateway XRD
// (package/configuration/zz_generated_definition.yaml) as the function reads
// it: its metadata, spec and status. The XRD's schema stays the one source of the
// validation; these types only name its fields. Those hack/xrdgen takes from
// the Gateway CRD (dataPlane, tenantSubnets, tunnels, exposures,
// reverseExposures, nodeSelector) are the Gateway's own Go types, from which
// that CRD is generated; the hand-written rest (endpoint, network, mode,
// routed, nodePorts) is
// checked against the generated XRD by TestSpecMatchesXRD, so a field added
// to one and not the other fails the unit tests.
type XIPsecGateway struct {
	// Metadata: the v1 XRD's composite is cluster-scoped, without a
	// namespace; the namespaced IPsecGateway has one (see owner).
	Metadata metav1.ObjectMeta   `json:"metadata"`
	Spec     XIPsecGatewaySpec   `json:"spec"`
	Status   XIPsecGatewayStatus `json:"status,omitempty"`
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

// XIPsecGatewayStatus is the part of the composite's status the function
// writes: each step of the runbook, from its composed resource (Status),
// and the Neutron IDs the composite records (record). A field is left out
// while its resource does not report it.
type XIPsecGatewayStatus struct {
	SecurityGroup *NeutronStepStatus `json:"securityGroup,omitempty"`
	Port          *PortStepStatus    `json:"port,omitempty"`
	FloatingIP    *FloatingIPStatus  `json:"floatingIP,omitempty"`
	Routing       *StepStatus        `json:"routing,omitempty"`
	NodePorts     *NodePortsStatus   `json:"nodePorts,omitempty"`
	Gateway       *GatewayStepStatus `json:"gateway,omitempty"`
	// Tunnels are the Gateway's status.atProvider.tunnels.
	Tunnels []gwv1alpha1.TunnelStatus `json:"tunnels,omitempty"`
}

// StepStatus is a step's composed resource's conditions.
type StepStatus struct {
	Conditions []xpv2.Condition `json:"conditions,omitempty"`
}

// NeutronStepStatus is a step whose Neutron object the composite records by
// ID (adopt.go).
type NeutronStepStatus struct {
	// ID is the Neutron ID: the external name of the step's managed
	// resource, kept while that is away.
	ID         string           `json:"id,omitempty"`
	Conditions []xpv2.Condition `json:"conditions,omitempty"`
}

// PortStepStatus is status.port: the gateway port's facts from Neutron.
type PortStepStatus struct {
	ID         string           `json:"id,omitempty"`
	PrivateIP  string           `json:"privateIP,omitempty"`
	SubnetCIDR string           `json:"subnetCIDR,omitempty"`
	GatewayIP  string           `json:"gatewayIP,omitempty"`
	MACAddress string           `json:"macAddress,omitempty"`
	Conditions []xpv2.Condition `json:"conditions,omitempty"`
}

// FloatingIPStatus is status.floatingIP.
type FloatingIPStatus struct {
	ID string `json:"id,omitempty"`
	// Address is the floating IP: Neutron's, else the pinned one.
	Address string `json:"address,omitempty"`
	// Attached says it is on the gateway's port; nil until the binding
	// reports.
	Attached   *bool            `json:"attached,omitempty"`
	Conditions []xpv2.Condition `json:"conditions,omitempty"`
}

// NodePortsStatus is status.nodePorts.
type NodePortsStatus struct {
	// Nodes is how many selected nodes' ports hold every pair.
	Nodes      int              `json:"nodes,omitempty"`
	Conditions []xpv2.Condition `json:"conditions,omitempty"`
}

// GatewayStepStatus is status.gateway: the Gateway's name and its
// status.atProvider but the tunnels (status.tunnels).
type GatewayStepStatus struct {
	Name             string `json:"name,omitempty"`
	ConfigHash       string `json:"configHash,omitempty"`
	LoadedConfigHash string `json:"loadedConfigHash,omitempty"`
	Replicas         int32  `json:"replicas,omitempty"`
	TunnelsUp        string `json:"tunnelsUp,omitempty"`
	// BytesIn and BytesOut are ESP bytes; nil until the Gateway reports.
	BytesIn    *int64                   `json:"bytesIn,omitempty"`
	BytesOut   *int64                   `json:"bytesOut,omitempty"`
	Warnings   []string                 `json:"warnings,omitempty"`
	Leader     *gwv1alpha1.LeaderStatus `json:"leader,omitempty"`
	Conditions []xpv2.Condition         `json:"conditions,omitempty"`
}
