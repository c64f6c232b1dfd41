package v1alpha1

import (
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// NodeAddressPairsParameters say which nodes may run a gateway and which
// addresses its pod sends with. The provider keeps, on the tenant-network
// Neutron port of every such node, an allowed address pair for each fixed
// IP of the gateway's port and each of cidrs, all with the gateway port's
// MAC (the pod's net1 is a macvlan with that MAC, and a pair without it
// admits the IP only with the node port's own MAC). A node maps to its
// port as the OpenStack cloud provider maps it: spec.providerID
// openstack:///<instance UUID> (or openstack://<region>/<instance UUID>)
// names the instance, and its port is the one on the gateway port's
// network with that device_id.
type NodeAddressPairsParameters struct {
	// PortID of the gateway's Neutron port, whose fixed IPs, MAC and
	// network the pairs take. Set it, or let portIdRef or portIdSelector
	// fill it in.
	// +optional
	// +crossplane:generate:reference:type=Port
	PortID *string `json:"portId,omitempty"`

	// PortIDRef references the gateway's Port managed resource, at every
	// reconcile (policy resolve IfNotPresent: once).
	// +optional
	PortIDRef *xpv2.Reference `json:"portIdRef,omitempty"`

	// PortIDSelector selects the gateway's Port managed resource by label,
	// again at every reconcile (policy resolve IfNotPresent: once).
	// +optional
	PortIDSelector *xpv2.Selector `json:"portIdSelector,omitempty"`

	// CIDRs the gateway's pod also sends from, with the gateway's MAC: in
	// mode routed, the VPN clients' subnets.
	// +optional
	// +kubebuilder:validation:MaxItems=64
	// +listType=set
	CIDRs []CIDR `json:"cidrs,omitempty"`

	// NodeSelector selects by label the nodes that may run the gateway,
	// as the gateway pod's nodeSelector does; all nodes when empty.
	// +optional
	// +kubebuilder:validation:MaxProperties=16
	NodeSelector map[string]string `json:"nodeSelector,omitempty"`
}

// An ObservedAddressPair is an allowed address pair of a node's port.
type ObservedAddressPair struct {
	IPAddress  string `json:"ipAddress"`
	MACAddress string `json:"macAddress"`
}

// NodePortPairs are the allowed address pairs this resource added to one
// node's port and that the port still holds.
type NodePortPairs struct {
	// Node is the Node's name.
	Node string `json:"node"`
	// PortID is the node's Neutron port on the tenant network.
	PortID string `json:"portId"`
	// Pairs this resource added. Pairs the port had before (another
	// tool's, even when equal) are not listed and never removed.
	Pairs []ObservedAddressPair `json:"pairs,omitempty"`
}

// NodeAddressPairsObservation is what Neutron holds of these pairs.
type NodeAddressPairsObservation struct {
	// NodePorts are the ports holding pairs this resource added: the
	// record by which it removes them again, and only them.
	NodePorts []NodePortPairs `json:"nodePorts,omitempty"`
	// NetworkID is the gateway port's network, whose ports hold the
	// pairs; kept so that the pairs can be removed after that port is gone.
	NetworkID string `json:"networkId,omitempty"`
	// Nodes is how many selected nodes' ports hold every pair.
	Nodes int `json:"nodes,omitempty"`
}

// A NodeAddressPairsSpec defines the desired state of NodeAddressPairs.
type NodeAddressPairsSpec struct {
	xpv2.ClusterManagedResourceSpec `json:",inline"`
	ForProvider                     NodeAddressPairsParameters `json:"forProvider"`
}

// A NodeAddressPairsStatus represents the observed state of NodeAddressPairs.
type NodeAddressPairsStatus struct {
	xpv2.ManagedResourceStatus `json:",inline"`
	AtProvider                 NodeAddressPairsObservation `json:"atProvider,omitempty"`
}

// +kubebuilder:object:root=true

// NodeAddressPairs are allowed address pairs for a gateway's address on the
// Neutron ports of the nodes that may run its pod, so that a cloud with
// port security on lets the pod's frames out through the node's port.
// +kubebuilder:printcolumn:name="READY",type="string",JSONPath=".status.conditions[?(@.type=='Ready')].status"
// +kubebuilder:printcolumn:name="SYNCED",type="string",JSONPath=".status.conditions[?(@.type=='Synced')].status"
// +kubebuilder:printcolumn:name="PORT",type="string",JSONPath=".spec.forProvider.portId"
// +kubebuilder:printcolumn:name="NODES",type="integer",JSONPath=".status.atProvider.nodes"
// +kubebuilder:printcolumn:name="AGE",type="date",JSONPath=".metadata.creationTimestamp"
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,categories={crossplane,managed,openstack}
type NodeAddressPairs struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   NodeAddressPairsSpec   `json:"spec"`
	Status NodeAddressPairsStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// NodeAddressPairsList contains a list of NodeAddressPairs.
type NodeAddressPairsList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []NodeAddressPairs `json:"items"`
}
