package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
)

// Mode is how client traffic reaches the tenant side.
// +kubebuilder:validation:Enum=nat;routed
type Mode string

// Modes of a Gateway.
const (
	// ModeNAT: the client reaches inside addresses that the gateway
	// translates to tenant endpoints (exposures), and tenant workloads
	// reach client hosts through the gateway (reverse exposures) or at
	// their own addresses with a presented source (a tunnel's hideNAT).
	ModeNAT Mode = "nat"
	// ModeRouted: client subnets are routed to the gateway's port by the
	// tenant's Neutron router; no address translation.
	ModeRouted Mode = "routed"
)

// DataPlane is where the gateway's ESP packets are encrypted and decrypted:
// which of strongSwan's IPsec backend plugins charon loads
// (https://docs.strongswan.org/docs/5.9/plugins/kernel-libipsec.html).
// +kubebuilder:validation:Enum=KernelXFRM;Libipsec
type DataPlane string

// Data planes of a Gateway.
const (
	// DataPlaneKernelXFRM: the node's kernel processes ESP (XFRM); charon
	// installs SAs and policies through its kernel-netlink plugin. The
	// node's kernel needs ESP (CONFIG_INET_ESP, CONFIG_XFRM_USER), as cloud
	// images have.
	DataPlaneKernelXFRM DataPlane = "KernelXFRM"
	// DataPlaneLibipsec: charon processes ESP in userspace with its
	// kernel-libipsec plugin, loaded before kernel-netlink (which still
	// installs routes and addresses), always encapsulated in UDP 4500, and
	// hands packets to and from the pod's network stack through a TUN
	// device: the pod gets the node's /dev/net/tun. For nodes whose kernel
	// has no ESP, where CHILD_SAs fail with "Function not implemented".
	DataPlaneLibipsec DataPlane = "Libipsec"
)

// A GatewayParameters is the desired state of a Gateway.
type GatewayParameters struct {
	// Namespace of the target cluster in which the gateway's pod,
	// configuration and RBAC objects are created. It must exist.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Namespace string `json:"namespace"`

	GatewayConfig `json:",inline"`
}

// A GatewayConfig is what a Gateway runs, in either scope: the parameters
// of a cluster-scoped Gateway are its namespace (of its objects) and a
// GatewayConfig, those of a namespaced Gateway (gateway.m.ipsecgw.io), whose
// objects are in its own namespace, are a GatewayConfig.
// +kubebuilder:validation:XValidation:rule="!has(self.dataPlane) || self.dataPlane != 'Libipsec' || self.tunnels.all(t, !has(t.startAction) || t.startAction != 'trap')",fieldPath=".tunnels",message="a tunnel's startAction trap never initiates with dataPlane Libipsec (kernel-libipsec raises no acquires, so matching traffic is dropped and no IKE SA starts): use startAction start (or respond), or dataPlane KernelXFRM"
// +kubebuilder:validation:XValidation:rule="!has(self.replicas) || self.replicas != 2 || self.tunnels.all(t, !has(t.mobike) || !t.mobike)",fieldPath=".tunnels",message="a tunnel's mobike must be false with replicas 2: when a pod gives the gateway's address up (demoted, killed or frozen), MOBIKE would move its IKE SAs to the pod network's interface, where they would reach the peer beside the active pod's; leave mobike out (or false), or use replicas 1"
// +kubebuilder:validation:XValidation:rule="!has(self.mode) || self.mode != 'routed' || ((!has(self.exposures) || size(self.exposures) == 0) && (!has(self.reverseExposures) || size(self.reverseExposures) == 0))",message="exposures and reverseExposures are for mode nat; in mode routed the tenant network reaches client subnets directly"
// +kubebuilder:validation:XValidation:rule="!has(self.mode) || self.mode != 'routed' || self.tunnels.all(t, !has(t.hideNAT) || size(t.hideNAT) == 0)",fieldPath=".tunnels",message="a tunnel's hideNAT is for mode nat; in mode routed the tenant network reaches client subnets directly, untranslated"
// +kubebuilder:validation:XValidation:rule="!has(self.tenantSubnets) || self.tunnels.all(t, !has(t.hideNAT) || t.hideNAT.all(h, self.tenantSubnets.all(s, !isCIDR(s) || (has(h.presentedAddress) ? (!isIP(h.presentedAddress) || !cidr(s).containsIP(ip(h.presentedAddress))) : (!has(h.presentedPool) || !isCIDR(h.presentedPool) || !(cidr(s).containsCIDR(cidr(h.presentedPool)) || cidr(h.presentedPool).containsCIDR(cidr(s))))))))",fieldPath=".tunnels",message="a tunnel's hideNAT presentedAddress (or presentedPool) overlaps a tenantSubnets entry: the presented addresses must be apart from the tenant's real ones; present addresses of the tunnel's local subnet (such as in 100.64.0.0/10)"
// +kubebuilder:validation:XValidation:rule="self.tunnels.all(t, !has(t.hideNAT) || t.hideNAT.all(h, h.tenantSubnets.all(r, !isCIDR(r) || (has(self.tenantSubnets) && self.tenantSubnets.exists(s, !isCIDR(s) || cidr(s).containsCIDR(cidr(r)))))))",fieldPath=".tunnels",message="a tunnel's hideNAT tenantSubnets entry lies in no tenantSubnets entry of the gateway: add the tenant subnet to tenantSubnets (the security group admits traffic from those only)"
// +kubebuilder:validation:XValidation:rule="!has(self.dataPlane) || self.dataPlane != 'Libipsec' || self.tunnels.all(t, !has(t.mode) || t.mode != 'route')",fieldPath=".tunnels",message="a tunnel's mode route needs dataPlane KernelXFRM: strongSwan's kernel-libipsec has no XFRM interface IDs (if_id) and routes every CHILD_SA through its own TUN device; use mode policy, or dataPlane KernelXFRM"
// +kubebuilder:validation:XValidation:rule="(has(self.mode) && self.mode == 'routed') || self.tunnels.all(t, !has(t.mode) || t.mode != 'route')",fieldPath=".tunnels",message="a tunnel's mode route needs the gateway's mode routed: in mode nat the local traffic selectors are the addresses presented to the client, which 0.0.0.0/0 cannot be; set mode routed, or use the tunnel's mode policy"
type GatewayConfig struct {
	// Images of the gateway pod's containers. An image left out is the
	// provider's --gateway-image, written here when the Gateway is first
	// observed (late initialization), so that a later change of that flag
	// does not restart a running gateway.
	// +optional
	Images Images `json:"images,omitempty"`

	// Active false pre-stages the gateway: every object, the rendered
	// configuration included, is created and kept up to date, but the
	// Deployment runs 0 replicas. The migration runbook's pre-stage.
	// +optional
	// +kubebuilder:default=true
	Active *bool `json:"active,omitempty"`

	// Replicas of the gateway pod: 1 (default), or 2 for active/standby,
	// two pods on different nodes of which the one holding the gateway's
	// Lease (in Namespace, named as the gateway) is active. Only the
	// active pod holds the endpoint's address on the tenant network,
	// announced with gratuitous ARP, and talks IKE; the standby has the
	// same configuration validated and loaded and takes over when the
	// active pod or its node is lost (within the Lease's duration, 6 s, and a retry period).
	// With 2, the cluster needs two schedulable nodes that may run the
	// gateway (nodeSelector, tolerations) and that attach to the tenant
	// network (networkAttachment.master).
	// +optional
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=2
	Replicas *int32 `json:"replicas,omitempty"`

	// DataPlane is where the gateway's ESP packets are processed:
	// KernelXFRM (default), the node's kernel, or Libipsec, charon in
	// userspace with the node's /dev/net/tun, for nodes whose kernel has
	// no ESP.
	// +optional
	// +kubebuilder:default=KernelXFRM
	DataPlane DataPlane `json:"dataPlane,omitempty"`

	// Endpoint is the gateway's own address on the tenant network (the
	// Neutron port) and the identity it presents to peers.
	Endpoint Endpoint `json:"endpoint"`

	// NetworkAttachment configures the pod's secondary interface, a Multus
	// NetworkAttachmentDefinition with the endpoint's MAC and address.
	// +optional
	// +kubebuilder:default={}
	NetworkAttachment NetworkAttachment `json:"networkAttachment,omitempty"`

	// Tunnels to peers; each is one strongSwan connection (one IKE SA).
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=64
	// +listType=map
	// +listMapKey=name
	Tunnels []Tunnel `json:"tunnels"`

	// Mode is nat (default) or routed.
	// +optional
	// +kubebuilder:default=nat
	Mode Mode `json:"mode,omitempty"`

	// TenantSubnets and the exposures are not omitempty: an empty list,
	// which the IPsecGateway claim defaults to, survives the provider's
	// updates of the object (an unset one is sent as null, which the API
	// server drops). Dropped, Crossplane would apply the claim's [] again,
	// one more generation each time, and watch events that the composite's
	// circuit breaker counts.

	// TenantSubnets are the tenant-side networks, IPv4 CIDRs (such as the
	// cluster's pod and Service networks and the tenant's Neutron
	// subnets). No remote traffic selector may overlap them.
	// +optional
	// +kubebuilder:validation:MaxItems=32
	// +listType=set
	TenantSubnets []CIDR `json:"tenantSubnets"`

	// Exposures publish tenant endpoints to the client side at inside
	// addresses (mode nat).
	// +optional
	// +kubebuilder:validation:MaxItems=128
	// +listType=map
	// +listMapKey=name
	Exposures []Exposure `json:"exposures"`

	// ReverseExposures publish client hosts to tenant workloads on a port
	// of the gateway (mode nat).
	// +optional
	// +kubebuilder:validation:MaxItems=128
	// +listType=map
	// +listMapKey=name
	ReverseExposures []ReverseExposure `json:"reverseExposures"`

	// TCPMSS is the TCP maximum segment size, in bytes, to which the
	// gateway clamps the SYNs and SYN-ACKs entering and leaving every
	// tunnel without a tcpMSS of its own (see the tunnels' tcpMSS). Left
	// out, each tunnel's is computed from a 1500-byte path and its ESP
	// proposals. 536 to 1460.
	// +optional
	// +kubebuilder:validation:Minimum=536
	// +kubebuilder:validation:Maximum=1460
	TCPMSS *int32 `json:"tcpMSS,omitempty"`

	// Resources of the strongswan container.
	// +optional
	Resources *corev1.ResourceRequirements `json:"resources,omitempty"`

	// NodeSelector of the gateway pod.
	// +optional
	NodeSelector map[string]string `json:"nodeSelector,omitempty"`

	// Tolerations of the gateway pod.
	// +optional
	Tolerations []corev1.Toleration `json:"tolerations,omitempty"`
}

// Images of the gateway pod.
type Images struct {
	// StrongSwan runs charon and swanctl: an image reference such as
	// REGISTRY/ipsecgw/gateway:v0.1.0.
	// +optional
	// +kubebuilder:validation:MaxLength=512
	StrongSwan string `json:"strongswan,omitempty"`

	// Agent loads configuration into charon and reports tunnel state: an
	// image reference, usually the same as StrongSwan's.
	// +optional
	// +kubebuilder:validation:MaxLength=512
	Agent string `json:"agent,omitempty"`
}

// IPv4 is a dotted-quad IPv4 address.
// +kubebuilder:validation:MaxLength=15
// +kubebuilder:validation:XValidation:rule="isIP(self) && ip(self).family() == 4",message="must be an IPv4 address such as 10.0.0.5"
type IPv4 string

// CIDR is an IPv4 network in CIDR notation with no host bits set, such as
// 10.1.0.0/24.
// +kubebuilder:validation:MaxLength=18
// +kubebuilder:validation:XValidation:rule="isCIDR(self) && cidr(self).ip().family() == 4 && cidr(self) == cidr(self).masked()",message="must be an IPv4 network in CIDR notation with no host bits set, such as 10.1.0.0/24"
type CIDR string

// An Endpoint is the gateway's address on the tenant network and the
// identity it presents. The gateway sits behind Neutron's 1:1 floating IP
// NAT: it binds PrivateAddress and identifies itself with LocalID.
// +kubebuilder:validation:XValidation:rule="self.localId != self.privateAddress",fieldPath=".localId",message="localId is the gateway's private address: peers reach the gateway through its floating IP and know it by that address, so IKE_AUTH would fail on the identity; set localId to the floating IP"
type Endpoint struct {
	// PrivateAddress is the Neutron port's fixed IP: the address charon binds
	// (swanctl local_addrs).
	PrivateAddress IPv4 `json:"privateAddress"`

	// PrefixLength of the tenant network the port is on, in bits.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=30
	PrefixLength int32 `json:"prefixLength"`

	// Gateway is the tenant network's default gateway (the Neutron router's
	// interface address).
	Gateway IPv4 `json:"gateway"`

	// MACAddress of the Neutron port, given to the secondary interface.
	// +kubebuilder:validation:Pattern=`^([0-9a-f]{2}:){5}[0-9a-f]{2}$`
	MACAddress string `json:"macAddress"`

	// LocalID is the IKE identity the gateway presents (swanctl local.id),
	// an IPv4 address: the floating IP peers know it by, never
	// PrivateAddress (admission refuses that).
	LocalID IPv4 `json:"localId"`
}

// NetworkAttachment options of the Multus NetworkAttachmentDefinition.
type NetworkAttachment struct {
	// Type of CNI plugin.
	// +optional
	// +kubebuilder:validation:Enum=macvlan
	// +kubebuilder:default=macvlan
	Type string `json:"type,omitempty"`

	// Master is the node's interface that carries the tenant network.
	// +optional
	// +kubebuilder:default=eth1
	// +kubebuilder:validation:Pattern=`^[a-zA-Z0-9][a-zA-Z0-9_.-]{0,14}$`
	Master string `json:"master,omitempty"`

	// MacvlanMode is the macvlan mode.
	// +optional
	// +kubebuilder:validation:Enum=bridge;private;vepa;passthru
	// +kubebuilder:default=bridge
	MacvlanMode string `json:"macvlanMode,omitempty"`
}
