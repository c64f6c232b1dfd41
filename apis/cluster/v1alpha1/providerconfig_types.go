package v1alpha1

import (
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A ProviderConfigSpec says how provider-ipsec reaches OpenStack and the
// Kubernetes cluster that runs the gateway pods.
type ProviderConfigSpec struct {
	// Credentials for the OpenStack APIs (Keystone, Neutron), as a clouds.yaml
	// document held in a Secret.
	Credentials OpenStackCredentials `json:"credentials"`

	// Cluster is the Kubernetes cluster in which Gateway managed resources
	// create their pods, ConfigMaps and Secrets. Defaults to the cluster the
	// provider runs in (InjectedIdentity).
	// +optional
	// +kubebuilder:default={source: InjectedIdentity}
	Cluster ClusterCredentials `json:"cluster,omitempty"`
}

// OpenStackCredentials select a clouds.yaml document and one cloud in it. The
// document follows the OpenStack client configuration format
// (https://docs.openstack.org/python-openstackclient/latest/configuration/)
// and is parsed by gophercloud's openstack/config/clouds: password and
// application-credential auth, region_name, interface and verify are read
// from the chosen cloud's entry. secure.yaml and clouds-public.yaml are not
// read; a cacert path inside the document is read from the provider's own
// file system, so prefer caBundleSecretRef.
// +kubebuilder:validation:XValidation:rule="(has(self.source) && self.source != 'Secret') || has(self.secretRef)",message="source Secret needs secretRef: the namespace, name and key of the Secret holding clouds.yaml"
type OpenStackCredentials struct {
	// Source of the credentials. Only Secret is supported.
	// +optional
	// +kubebuilder:validation:Enum=Secret
	// +kubebuilder:default=Secret
	Source xpv2.CredentialsSource `json:"source,omitempty"`

	// SecretRef is the Secret key holding the clouds.yaml document.
	// +optional
	SecretRef *xpv2.SecretKeySelector `json:"secretRef,omitempty"`

	// Cloud is the name of the entry under `clouds:` in the clouds.yaml
	// document to use.
	// +kubebuilder:validation:MinLength=1
	Cloud string `json:"cloud"`

	// Region overrides the cloud's region_name.
	// +optional
	Region string `json:"region,omitempty"`

	// Interface overrides the cloud's interface: which endpoint of the
	// service catalog to use.
	// +optional
	// +kubebuilder:validation:Enum=public;internal;admin
	Interface string `json:"interface,omitempty"`

	// CABundleSecretRef is a Secret key holding PEM-encoded CA certificates
	// that sign the OpenStack API endpoints' certificates. When set, these
	// replace the system roots and any cacert path in clouds.yaml.
	// +optional
	CABundleSecretRef *xpv2.SecretKeySelector `json:"caBundleSecretRef,omitempty"`
}

// ClusterCredentials select the Kubernetes cluster that runs gateway pods.
// +kubebuilder:validation:XValidation:rule="!has(self.source) || self.source != 'Secret' || has(self.secretRef)",message="source Secret needs secretRef: the namespace, name and key of the Secret holding a kubeconfig"
type ClusterCredentials struct {
	// Source of the credentials. InjectedIdentity uses the provider's own
	// identity (its ServiceAccount in cluster, or KUBECONFIG out of cluster);
	// Secret reads a kubeconfig from secretRef.
	// +optional
	// +kubebuilder:validation:Enum=InjectedIdentity;Secret
	// +kubebuilder:default=InjectedIdentity
	Source xpv2.CredentialsSource `json:"source,omitempty"`

	// SecretRef is the Secret key holding a kubeconfig document.
	// +optional
	SecretRef *xpv2.SecretKeySelector `json:"secretRef,omitempty"`
}

// A ProviderConfigStatus reflects the observed state of a ProviderConfig.
type ProviderConfigStatus struct {
	xpv2.ProviderConfigStatus `json:",inline"`
}

// +kubebuilder:object:root=true

// A ProviderConfig configures how provider-ipsec connects to OpenStack and to
// the cluster running the gateways. Managed resources select one with
// spec.providerConfigRef (default: "default").
// +kubebuilder:printcolumn:name="CLOUD",type="string",JSONPath=".spec.credentials.cloud"
// +kubebuilder:printcolumn:name="SECRET",type="string",JSONPath=".spec.credentials.secretRef.name"
// +kubebuilder:printcolumn:name="CLUSTER",type="string",JSONPath=".spec.cluster.source"
// +kubebuilder:printcolumn:name="USERS",type="integer",JSONPath=".status.users"
// +kubebuilder:printcolumn:name="AGE",type="date",JSONPath=".metadata.creationTimestamp"
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,categories={crossplane,provider,ipsec}
type ProviderConfig struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   ProviderConfigSpec   `json:"spec"`
	Status ProviderConfigStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// ProviderConfigList contains a list of ProviderConfig.
type ProviderConfigList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ProviderConfig `json:"items"`
}
