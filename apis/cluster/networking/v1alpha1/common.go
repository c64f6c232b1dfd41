package v1alpha1

// IPAddress is an IPv4 or IPv6 address.
// +kubebuilder:validation:MaxLength=45
// +kubebuilder:validation:XValidation:rule="isIP(self)",message="must be an IP address such as 10.20.0.10"
type IPAddress string

// CIDR is a network in CIDR notation with no host bits set, such as
// 10.20.0.0/24 or 2001:db8::/64.
// +kubebuilder:validation:MaxLength=49
// +kubebuilder:validation:XValidation:rule="isCIDR(self) && cidr(self) == cidr(self).masked()",message="must be a network in CIDR notation with no host bits set, such as 10.20.0.0/24"
type CIDR string

// UUID is a Neutron resource ID.
// +kubebuilder:validation:Pattern=`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`
type UUID string

// MaxDescriptionLength is the longest description a spec may give: 255
// characters (Neutron's limit) less the " [crossplane-uid-<UID>]" that
// earlier releases appended to the description of every object they
// created, which is longer than this release's marker
// " [crossplane-mr-<hash of the resource's namespace and name>]". The
// marker finds the object again when the provider dies between the create
// request and saving the object's ID, and when the resource is deleted
// while its object stays and applied again
// (internal/clients/openstack.Mark). The kubebuilder markers of the
// description fields repeat the number.
const MaxDescriptionLength = 201
