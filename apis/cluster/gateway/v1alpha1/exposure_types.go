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
