package v1alpha1

import (
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	cluster "github.com/ipsecgw/provider-ipsec/apis/cluster/gateway/v1alpha1"
)

// A GatewaySpec defines the desired state of a Gateway: the configuration
// of a cluster-scoped Gateway without its namespace, which is the Gateway's
// own.
type GatewaySpec struct {
	xpv2.ManagedResourceSpec `json:",inline"`
	ForProvider              cluster.GatewayConfig `json:"forProvider"`
}

// A GatewayStatus represents the observed state of a Gateway.
type GatewayStatus struct {
	xpv2.ManagedResourceStatus `json:",inline"`
	AtProvider                 cluster.GatewayObservation `json:"atProvider,omitempty"`
}

// +kubebuilder:object:root=true

// A Gateway is a strongSwan site-to-site VPN gateway managed from a
// namespace: its NetworkAttachmentDefinition, rendered configuration,
// secrets, NAT rules, RBAC, NetworkPolicy and Deployment run in the
// Gateway's own namespace of the target cluster (its ProviderConfig's, of
// the same namespace, or its ClusterProviderConfig's), and its tunnels' PSKs
// are read from Secrets of that namespace only.
// +kubebuilder:printcolumn:name="READY",type="string",JSONPath=".status.conditions[?(@.type=='Ready')].status"
// +kubebuilder:printcolumn:name="SYNCED",type="string",JSONPath=".status.conditions[?(@.type=='Synced')].status"
// +kubebuilder:printcolumn:name="RENDERED",type="string",JSONPath=".status.conditions[?(@.type=='ConfigRendered')].status"
// +kubebuilder:printcolumn:name="ACTIVE",type="boolean",JSONPath=".spec.forProvider.active"
// +kubebuilder:printcolumn:name="ACTIVE-NODE",type="string",JSONPath=".status.atProvider.leader.node"
// +kubebuilder:printcolumn:name="LOCAL-ID",type="string",JSONPath=".spec.forProvider.endpoint.localId"
// +kubebuilder:printcolumn:name="TUNNELS",type="string",JSONPath=".status.atProvider.tunnelsUp"
// +kubebuilder:printcolumn:name="BYTES-IN",type="integer",JSONPath=".status.atProvider.bytesIn"
// +kubebuilder:printcolumn:name="BYTES-OUT",type="integer",JSONPath=".status.atProvider.bytesOut"
// +kubebuilder:printcolumn:name="AGE",type="date",JSONPath=".metadata.creationTimestamp"
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced,categories={crossplane,managed,ipsec}
type Gateway struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   GatewaySpec   `json:"spec"`
	Status GatewayStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// GatewayList contains a list of Gateway.
type GatewayList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Gateway `json:"items"`
}
