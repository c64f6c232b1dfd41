package v1alpha1

import (
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A SecurityGroupRule is one rule of a Neutron security group
// (https://docs.openstack.org/api-ref/network/v2/#security-group-rules-security-group-rules).
// +kubebuilder:validation:XValidation:rule="!(has(self.remoteIpPrefix) && has(self.remoteGroupId))",message="remoteIpPrefix and remoteGroupId are mutually exclusive"
// +kubebuilder:validation:XValidation:rule="!has(self.portRangeMin) && !has(self.portRangeMax) || (has(self.protocol) && self.protocol in ['tcp', 'udp', 'sctp', 'icmp'])",message="a port range needs protocol tcp, udp, sctp (or icmp, where the range is type and code)"
// +kubebuilder:validation:XValidation:rule="!has(self.portRangeMin) || !has(self.portRangeMax) || (has(self.protocol) && self.protocol == 'icmp') || self.portRangeMin <= self.portRangeMax",message="portRangeMin must not exceed portRangeMax"
type SecurityGroupRule struct {
	// Direction of the traffic the rule admits.
	// +kubebuilder:validation:Enum=ingress;egress
	Direction string `json:"direction"`

	// EtherType is IPv4 or IPv6.
	// +optional
	// +kubebuilder:validation:Enum=IPv4;IPv6
	// +kubebuilder:default=IPv4
	EtherType string `json:"ethertype,omitempty"`

	// Protocol by name; unset means any protocol.
	// +optional
	// +kubebuilder:validation:Enum=tcp;udp;icmp;icmpv6;esp;ah;gre;sctp;vrrp
	Protocol *string `json:"protocol,omitempty"`

	// PortRangeMin and PortRangeMax bound the destination ports (1–65535);
	// for icmp they are the ICMP type and code.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=65535
	PortRangeMin *int32 `json:"portRangeMin,omitempty"`
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=65535
	PortRangeMax *int32 `json:"portRangeMax,omitempty"`

	// RemoteIPPrefix the traffic comes from (ingress) or goes to (egress).
	// +optional
	RemoteIPPrefix *CIDR `json:"remoteIpPrefix,omitempty"`

	// RemoteGroupID is a security group whose ports the traffic comes from
	// or goes to.
	// +optional
	RemoteGroupID *UUID `json:"remoteGroupId,omitempty"`

	// Description of the rule.
	// +optional
	// +kubebuilder:validation:MaxLength=255
	Description *string `json:"description,omitempty"`
}

// SecurityGroupParameters are the desired state of a Neutron security group.
type SecurityGroupParameters struct {
	// Name of the group in Neutron.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=255
	Name string `json:"name"`

	// Description of the group. The provider appends
	// " [crossplane-mr-<hash of this resource's namespace and name>]" in
	// Neutron (see MaxDescriptionLength).
	// +optional
	// +kubebuilder:validation:MaxLength=201
	Description *string `json:"description,omitempty"`

	// Rules of the group. The group holds exactly these: rules added by hand
	// in Neutron are deleted and missing ones re-created.
	// +optional
	// +kubebuilder:validation:MaxItems=100
	Rules []SecurityGroupRule `json:"rules,omitempty"`

	// KeepDefaultEgressRules leaves alone the two rules Neutron adds to
	// every new group (egress to any address, IPv4 and IPv6), so that ports
	// keep their outbound traffic; they are not counted as drift. False
	// deletes them like any rule not in rules.
	// +optional
	// +kubebuilder:default=true
	KeepDefaultEgressRules *bool `json:"keepDefaultEgressRules,omitempty"`
}

// An ObservedRule is a rule as Neutron holds it.
type ObservedRule struct {
	ID             string  `json:"id"`
	Direction      string  `json:"direction"`
	EtherType      string  `json:"ethertype"`
	Protocol       string  `json:"protocol,omitempty"`
	PortRangeMin   *int32  `json:"portRangeMin,omitempty"`
	PortRangeMax   *int32  `json:"portRangeMax,omitempty"`
	RemoteIPPrefix string  `json:"remoteIpPrefix,omitempty"`
	RemoteGroupID  string  `json:"remoteGroupId,omitempty"`
	Description    *string `json:"description,omitempty"`
}

// SecurityGroupObservation is the state of the group in Neutron.
type SecurityGroupObservation struct {
	// ID of the group.
	ID string `json:"id,omitempty"`
	// Rules as Neutron holds them.
	Rules []ObservedRule `json:"rules,omitempty"`
	// RevisionNumber of the group.
	RevisionNumber int `json:"revisionNumber,omitempty"`
}

// A SecurityGroupSpec defines the desired state of a SecurityGroup.
type SecurityGroupSpec struct {
	xpv2.ClusterManagedResourceSpec `json:",inline"`
	ForProvider                     SecurityGroupParameters `json:"forProvider"`
}

// A SecurityGroupStatus represents the observed state of a SecurityGroup.
type SecurityGroupStatus struct {
	xpv2.ManagedResourceStatus `json:",inline"`
	AtProvider                 SecurityGroupObservation `json:"atProvider,omitempty"`
}

// +kubebuilder:object:root=true

// A SecurityGroup is a Neutron security group with its rules.
// +kubebuilder:printcolumn:name="READY",type="string",JSONPath=".status.conditions[?(@.type=='Ready')].status"
// +kubebuilder:printcolumn:name="SYNCED",type="string",JSONPath=".status.conditions[?(@.type=='Synced')].status"
// +kubebuilder:printcolumn:name="EXTERNAL-NAME",type="string",JSONPath=".metadata.annotations.crossplane\\.io/external-name"
// +kubebuilder:printcolumn:name="NAME",type="string",JSONPath=".spec.forProvider.name"
// +kubebuilder:printcolumn:name="AGE",type="date",JSONPath=".metadata.creationTimestamp"
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,categories={crossplane,managed,openstack}
type SecurityGroup struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   SecurityGroupSpec   `json:"spec"`
	Status SecurityGroupStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// SecurityGroupList contains a list of SecurityGroup.
type SecurityGroupList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []SecurityGroup `json:"items"`
}
