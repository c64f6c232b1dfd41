package v1alpha1

import (
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	cluster "github.com/ipsecgw/provider-ipsec/apis/cluster/networking/v1alpha1"
)

// NodeAddressPairsParameters are those of cluster.NodeAddressPairsParameters
// (the same fields, so each converts to the other), whose Port reference
// and selector name a Port managed resource of the resource's namespace.
type NodeAddressPairsParameters struct {
	// PortID of the gateway's Neutron port, whose fixed IPs, MAC and
	// network the pairs take. Set it, or let portIdRef or portIdSelector
	// fill it in.
	// +optional
	// +crossplane:generate:reference:type=Port
	PortID *string `json:"portId,omitempty"`

	// PortIDRef references the gateway's Port managed resource of this
	// namespace, at every reconcile (policy resolve IfNotPresent: once).
	// +optional
	// +kubebuilder:validation:XValidation:rule="!has(self.namespace)",message="a namespaced managed resource references managed resources of its own namespace only: leave namespace out"
	PortIDRef *xpv2.NamespacedReference `json:"portIdRef,omitempty"`

	// PortIDSelector selects the gateway's Port managed resource of this
	// namespace by label, again at every reconcile (policy resolve
	// IfNotPresent: once).
	// +optional
	// +kubebuilder:validation:XValidation:rule="!has(self.namespace)",message="a namespaced managed resource references managed resources of its own namespace only: leave namespace out"
	PortIDSelector *xpv2.NamespacedSelector `json:"portIdSelector,omitempty"`

	// CIDRs the gateway's pod also sends from, with the gateway's MAC: in
	// mode routed, the VPN clients' subnets.
	// +optional
	// +kubebuilder:validation:MaxItems=64
	// +listType=set
	CIDRs []cluster.CIDR `json:"cidrs,omitempty"`

	// NodeSelector selects by label the nodes that may run the gateway,
	// as the gateway pod's nodeSelector does; all nodes when empty.
	// +optional
	// +kubebuilder:validation:MaxProperties=16
	NodeSelector map[string]string `json:"nodeSelector,omitempty"`
}

// A NodeAddressPairsSpec defines the desired state of NodeAddressPairs.
type NodeAddressPairsSpec struct {
	xpv2.ManagedResourceSpec `json:",inline"`
	ForProvider              NodeAddressPairsParameters `json:"forProvider"`
}

// A NodeAddressPairsStatus represents the observed state of NodeAddressPairs.
type NodeAddressPairsStatus struct {
	xpv2.ManagedResourceStatus `json:",inline"`
	AtProvider                 cluster.NodeAddressPairsObservation `json:"atProvider,omitempty"`
}

// +kubebuilder:object:root=true

// NodeAddressPairs, managed from a namespace, are allowed address pairs for
// a gateway's address on the Neutron ports of the nodes that may run its
// pod (the nodes of the target cluster of the resource's ProviderConfig or
// ClusterProviderConfig), so that a cloud with port security on lets the
// pod's frames out through the node's port.
// +kubebuilder:printcolumn:name="READY",type="string",JSONPath=".status.conditions[?(@.type=='Ready')].status"
// +kubebuilder:printcolumn:name="SYNCED",type="string",JSONPath=".status.conditions[?(@.type=='Synced')].status"
// +kubebuilder:printcolumn:name="PORT",type="string",JSONPath=".spec.forProvider.portId"
// +kubebuilder:printcolumn:name="NODES",type="integer",JSONPath=".status.atProvider.nodes"
// +kubebuilder:printcolumn:name="AGE",type="date",JSONPath=".metadata.creationTimestamp"
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced,categories={crossplane,managed,openstack}
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
