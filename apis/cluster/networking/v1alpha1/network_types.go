package v1alpha1

import (
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// NetworkParameters are the desired state of a Neutron network
// (https://docs.openstack.org/api-ref/network/v2/#networks). A Network is
// mostly imported: an existing tenant network named by its ID in the
// external name, with management policy Observe, for Ports to reference.
type NetworkParameters struct {
	// Name of the network in Neutron; unset leaves Neutron's alone.
	// +optional
	// +kubebuilder:validation:MaxLength=255
	Name *string `json:"name,omitempty"`

	// Description of the network; unset leaves Neutron's alone. A network
	// the provider creates carries " [crossplane-mr-<hash of this
	// resource's namespace and name>]" after it in Neutron (see
	// MaxDescriptionLength).
	// +optional
	// +kubebuilder:validation:MaxLength=201
	Description *string `json:"description,omitempty"`

	// AdminStateUp turns the network on or off; unset leaves Neutron's
	// value (true for a new network) alone.
	// +optional
	AdminStateUp *bool `json:"adminStateUp,omitempty"`

	// Tags of the network, besides the one the provider adds.
	// +optional
	// +kubebuilder:validation:MaxItems=32
	Tags []string `json:"tags,omitempty"`
}

// NetworkObservation is the state of the network in Neutron.
type NetworkObservation struct {
	// ID of the network.
	ID string `json:"id,omitempty"`
	// Status of the network: ACTIVE, DOWN, BUILD or ERROR.
	Status string `json:"status,omitempty"`
	// Subnets are the IDs of the network's subnets.
	Subnets []string `json:"subnets,omitempty"`
	// MTU of the network in bytes.
	MTU int `json:"mtu,omitempty"`
	// Shared says the network is shared with all projects.
	Shared bool `json:"shared,omitempty"`
	// External says the network is external (router:external): floating
	// IPs and router gateways come from it.
	External bool `json:"external,omitempty"`
	// RevisionNumber of the network.
	RevisionNumber int `json:"revisionNumber,omitempty"`
}

// A NetworkSpec defines the desired state of a Network.
type NetworkSpec struct {
	xpv2.ClusterManagedResourceSpec `json:",inline"`
	// +optional
	ForProvider NetworkParameters `json:"forProvider"`
}

// A NetworkStatus represents the observed state of a Network.
type NetworkStatus struct {
	xpv2.ManagedResourceStatus `json:",inline"`
	AtProvider                 NetworkObservation `json:"atProvider,omitempty"`
}

// +kubebuilder:object:root=true

// A Network is a Neutron network. Ports reference it by networkIdRef or
// networkIdSelector; its external name is the network's ID. With
// management policy Observe it imports an existing network, named by that
// external name, without changing it.
// +kubebuilder:printcolumn:name="READY",type="string",JSONPath=".status.conditions[?(@.type=='Ready')].status"
// +kubebuilder:printcolumn:name="SYNCED",type="string",JSONPath=".status.conditions[?(@.type=='Synced')].status"
// +kubebuilder:printcolumn:name="EXTERNAL-NAME",type="string",JSONPath=".metadata.annotations.crossplane\\.io/external-name"
// +kubebuilder:printcolumn:name="STATUS",type="string",JSONPath=".status.atProvider.status"
// +kubebuilder:printcolumn:name="MTU",type="integer",JSONPath=".status.atProvider.mtu",priority=1
// +kubebuilder:printcolumn:name="AGE",type="date",JSONPath=".metadata.creationTimestamp"
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,categories={crossplane,managed,openstack}
type Network struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   NetworkSpec   `json:"spec"`
	Status NetworkStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// NetworkList contains a list of Network.
type NetworkList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Network `json:"items"`
}
