package v1alpha1

// Protocol is a transport protocol of an exposure.
// +kubebuilder:validation:Enum=tcp;udp
type Protocol string

// Port is a TCP or UDP port number.
// +kubebuilder:validation:Minimum=1
// +kubebuilder:validation:Maximum=65535
type Port int32

// An Exposure publishes a tenant endpoint to the client side: traffic from
// the client to InsideAddress:Port is translated to the target (DNAT), with
// the gateway's tenant-side address as its source (SNAT) so replies return
// through the gateway.
// +kubebuilder:validation:XValidation:rule="has(self.target.address) != has(self.target.serviceName)",message="target needs exactly one of address or serviceName"
type Exposure struct {
	// Name of the exposure.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Name string `json:"name"`

	// Protocol, tcp by default.
	// +optional
	// +kubebuilder:default=tcp
	Protocol Protocol `json:"protocol,omitempty"`

	// InsideAddress the client connects to; it must lie in a local traffic
	// selector of a tunnel.
	InsideAddress IPv4 `json:"insideAddress"`

	// Port the client connects to.
	Port Port `json:"port"`

	// Target is the tenant endpoint.
	Target ExposureTarget `json:"target"`
}

// An ExposureTarget is a tenant endpoint: an address, or a Service in the
// gateway's namespace whose cluster IP is used.
type ExposureTarget struct {
	// Address of the endpoint.
	// +optional
	Address *IPv4 `json:"address,omitempty"`

	// ServiceName of a Service in the gateway's namespace.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z]([-a-z0-9]*[a-z0-9])?$`
	ServiceName *string `json:"serviceName,omitempty"`

	// Port of the endpoint.
	Port Port `json:"port"`
}

// A ReverseExposure publishes a client host to tenant workloads: traffic to
// the gateway's ListenPort is translated to ClientAddress:ClientPort (DNAT)
// with SourceAddress, an inside address, as its source (SNAT) so that it
// matches the tunnel's traffic selectors.
type ReverseExposure struct {
	// Name of the reverse exposure.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Name string `json:"name"`

	// Protocol, tcp by default.
	// +optional
	// +kubebuilder:default=tcp
	Protocol Protocol `json:"protocol,omitempty"`

	// ListenPort on the gateway that tenant workloads connect to.
	ListenPort Port `json:"listenPort"`

	// ClientAddress of the client host; it must lie in a remote traffic
	// selector of a tunnel.
	ClientAddress IPv4 `json:"clientAddress"`

	// ClientPort on the client host.
	ClientPort Port `json:"clientPort"`

	// SourceAddress the client host sees the connections come from; it must
	// lie in a local traffic selector of the same tunnel.
	SourceAddress IPv4 `json:"sourceAddress"`
}

// A HideNAT rule is many-to-one source NAT (hide NAT) towards a client: a
// connection from one of TenantSubnets to one of RemoteSubnets that a
// tenant workload opens to a client host leaves through the tunnel with
// PresentedAddress (or an address of PresentedPool) as its source and a
// translated source port (nftables snat); conntrack translates the replies
// back. The presented addresses lie in a local traffic selector of the
// tunnel (the addresses the client knows the tenant side by), apart from
// the tenant's real subnets and the client's. Tenant hosts route
// RemoteSubnets to the gateway.
// +kubebuilder:validation:XValidation:rule="has(self.presentedAddress) != has(self.presentedPool)",message="hideNAT needs exactly one of presentedAddress or presentedPool"
type HideNAT struct {
	// Name of the rule.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Name string `json:"name"`

	// TenantSubnets whose connections are translated, each inside one of
	// the gateway's tenantSubnets. Traffic from other tenant subnets is not
	// translated, and the tunnel does not carry it.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=8
	// +listType=set
	TenantSubnets []CIDR `json:"tenantSubnets"`

	// RemoteSubnets the connections go to, each inside a remote traffic
	// selector of the tunnel whose local subnet holds the presented
	// addresses (checked when the configuration is rendered).
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=8
	// +listType=set
	RemoteSubnets []CIDR `json:"remoteSubnets"`

	// PresentedAddress is the one source address the client sees.
	// +optional
	PresentedAddress *IPv4 `json:"presentedAddress,omitempty"`

	// PresentedPool is a network of source addresses the client sees,
	// instead of one address: each tenant host keeps one address of the
	// pool for all its connections (nftables snat persistent).
	// +optional
	PresentedPool *CIDR `json:"presentedPool,omitempty"`
}
