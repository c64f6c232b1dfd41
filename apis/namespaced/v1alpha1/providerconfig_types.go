package v1alpha1

import (
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	clusterv1alpha1 "github.com/ipsecgw/provider-ipsec/apis/cluster/v1alpha1"
)

// A ProviderConfigStatus reflects the observed state of a ProviderConfig or
// ClusterProviderConfig.
type ProviderConfigStatus struct {
	xpv2.ProviderConfigStatus `json:",inline"`
}

// +kubebuilder:object:root=true

// A ProviderConfig holds the OpenStack credentials of the namespaced managed
// resources of its own namespace that name it (spec.providerConfigRef kind
// ProviderConfig). Its Secrets must be in its own namespace: a secretRef
// naming another namespace is refused when a managed resource connects.
// +kubebuilder:printcolumn:name="CLOUD",type="string",JSONPath=".spec.credentials.cloud"
// +kubebuilder:printcolumn:name="SECRET",type="string",JSONPath=".spec.credentials.secretRef.name"
// +kubebuilder:printcolumn:name="USERS",type="integer",JSONPath=".status.users"
// +kubebuilder:printcolumn:name="AGE",type="date",JSONPath=".metadata.creationTimestamp"
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Namespaced,categories={crossplane,provider,ipsec}
type ProviderConfig struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   clusterv1alpha1.ProviderConfigSpec `json:"spec"`
	Status ProviderConfigStatus               `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// ProviderConfigList contains a list of ProviderConfig.
type ProviderConfigList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ProviderConfig `json:"items"`
}

// +kubebuilder:object:root=true

// A ClusterProviderConfig holds OpenStack credentials that namespaced
// managed resources of the namespaces its spec.namespaceSelector selects may
// name (spec.providerConfigRef kind ClusterProviderConfig); its Secrets may
// be in any namespace. Only the platform should be able to create one (RBAC
// on clusterproviderconfigs) or label namespaces.
// +kubebuilder:printcolumn:name="CLOUD",type="string",JSONPath=".spec.credentials.cloud"
// +kubebuilder:printcolumn:name="SECRET",type="string",JSONPath=".spec.credentials.secretRef.name"
// +kubebuilder:printcolumn:name="USERS",type="integer",JSONPath=".status.users"
// +kubebuilder:printcolumn:name="AGE",type="date",JSONPath=".metadata.creationTimestamp"
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,categories={crossplane,provider,ipsec}
type ClusterProviderConfig struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   ClusterProviderConfigSpec `json:"spec"`
	Status ProviderConfigStatus      `json:"status,omitempty"`
}

// A ClusterProviderConfigSpec is a ProviderConfig's spec and the namespaces
// whose managed resources may use it.
type ClusterProviderConfigSpec struct {
	clusterv1alpha1.ProviderConfigSpec `json:",inline"`

	// NamespaceSelector selects, by the namespaces' labels, the namespaces
	// whose managed resources may name this ClusterProviderConfig (such as
	// matchLabels kubernetes.io/metadata.name: tenant-a, or a label the
	// platform gives its tenants' namespaces). Unset, it selects no
	// namespace, as a nil label selector does in Kubernetes; {} selects
	// every namespace. A managed resource of a namespace it does not select
	// is refused when it connects (Synced=False, naming this field), before
	// any Secret is read or any OpenStack request is sent.
	// +optional
	NamespaceSelector *metav1.LabelSelector `json:"namespaceSelector,omitempty"`
}

// +kubebuilder:object:root=true

// ClusterProviderConfigList contains a list of ClusterProviderConfig.
type ClusterProviderConfigList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ClusterProviderConfig `json:"items"`
}

// +kubebuilder:object:root=true

// A ProviderConfigUsage records that a namespaced managed resource uses a
// ProviderConfig or ClusterProviderConfig (providerConfigRef.kind), so that
// it cannot be deleted while in use. It lives in the managed resource's
// namespace.
// +kubebuilder:printcolumn:name="AGE",type="date",JSONPath=".metadata.creationTimestamp"
// +kubebuilder:printcolumn:name="CONFIG-KIND",type="string",JSONPath=".providerConfigRef.kind"
// +kubebuilder:printcolumn:name="CONFIG-NAME",type="string",JSONPath=".providerConfigRef.name"
// +kubebuilder:printcolumn:name="RESOURCE-KIND",type="string",JSONPath=".resourceRef.kind"
// +kubebuilder:printcolumn:name="RESOURCE-NAME",type="string",JSONPath=".resourceRef.name"
// +kubebuilder:resource:scope=Namespaced,categories={crossplane,provider,ipsec}
type ProviderConfigUsage struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	xpv2.TypedProviderConfigUsage `json:",inline"`
}

// +kubebuilder:object:root=true

// ProviderConfigUsageList contains a list of ProviderConfigUsage.
type ProviderConfigUsageList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ProviderConfigUsage `json:"items"`
}
