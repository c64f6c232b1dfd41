package v1alpha1

import (
	"time"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
)

// ChildSALayout says how a tunnel's traffic selector pairs map to CHILD_SAs.
// +kubebuilder:validation:Enum=PerSubnetPair;Single
type ChildSALayout string

// CHILD_SA layouts. Peers differ in what they accept; IKEv1 supports only
// PerSubnetPair.
const (
	// ChildSAPerSubnetPair negotiates one CHILD_SA per local/remote pair.
	ChildSAPerSubnetPair ChildSALayout = "PerSubnetPair"
	// ChildSASingle negotiates one CHILD_SA whose traffic selectors carry
	// all local and all remote subnets.
	ChildSASingle ChildSALayout = "Single"
)

// A Tunnel is one IPsec connection to a peer gateway: one IKE SA and its
// CHILD_SAs. Field names follow strongSwan's swanctl.conf
// (https://docs.strongswan.org/docs/5.9/swanctl/swanctlConf.html).
// +kubebuilder:validation:XValidation:rule="self.ikeVersion == 2 || !has(self.mobike) || !self.mobike",message="MOBIKE is an IKEv2 extension: leave mobike out (or false) for ikeVersion 1"
// +kubebuilder:validation:XValidation:rule="self.ikeVersion == 2 || !has(self.childSALayout) || self.childSALayout == 'PerSubnetPair' || size(self.trafficSelectors) == 1",message="IKEv1 negotiates one subnet pair per CHILD_SA: use childSALayout PerSubnetPair"
// +kubebuilder:validation:XValidation:rule="self.ikeVersion == 1 || !has(self.dpd) || !has(self.dpd.timeout)",message="dpd.timeout is an IKEv1 setting: IKEv2 takes the retransmission timeouts instead, remove dpd.timeout"
// +kubebuilder:validation:XValidation:rule="has(self.preSharedKeySecretRef) != has(self.certificate)",message="give exactly one of preSharedKeySecretRef (a pre-shared key) and certificate (X.509 certificates)"
// +kubebuilder:validation:XValidation:rule="!has(self.certificate) || !has(self.peer.id)",fieldPath=".peer.id",message="with certificate the peer's identity is certificate.remoteId: remove peer.id"
// +kubebuilder:validation:XValidation:rule="!has(self.hideNAT) || self.hideNAT.all(h, self.trafficSelectors.exists(ts, !isCIDR(ts.local) || (has(h.presentedAddress) ? (!isIP(h.presentedAddress) || cidr(ts.local).containsIP(ip(h.presentedAddress))) : (!has(h.presentedPool) || !isCIDR(h.presentedPool) || cidr(ts.local).containsCIDR(cidr(h.presentedPool))))))",fieldPath=".hideNAT",message="a hideNAT rule's presentedAddress (or presentedPool) lies in no local subnet of the tunnel's traffic selectors: the client knows the tenant side by those addresses and the tunnel carries no other; present an address of a local subnet"
// +kubebuilder:validation:XValidation:rule="!has(self.hideNAT) || self.hideNAT.all(h, self.trafficSelectors.all(ts, !isCIDR(ts.remote) || (has(h.presentedAddress) ? (!isIP(h.presentedAddress) || !cidr(ts.remote).containsIP(ip(h.presentedAddress))) : (!has(h.presentedPool) || !isCIDR(h.presentedPool) || !(cidr(ts.remote).containsCIDR(cidr(h.presentedPool)) || cidr(h.presentedPool).containsCIDR(cidr(ts.remote)))))))",fieldPath=".hideNAT",message="a hideNAT rule's presentedAddress (or presentedPool) overlaps a remote traffic selector, a client subnet: the client would see its own addresses as the source; present addresses of the tunnel's local subnet"
// +kubebuilder:validation:XValidation:rule="(has(self.mode) && self.mode == 'route') || !has(self.routes) || size(self.routes) == 0",fieldPath=".routes",message="routes are for mode route: a policy-mode tunnel carries the subnets of its traffic selectors; set mode route, or remove routes"
// +kubebuilder:validation:XValidation:rule="!has(self.mode) || self.mode != 'route' || (has(self.routes) && size(self.routes) > 0)",fieldPath=".routes",message="a tunnel in mode route needs routes: the remote subnets routed over its XFRM interface"
// +kubebuilder:validation:XValidation:rule="(has(self.mode) && self.mode == 'route') || !has(self.routeMetric)",fieldPath=".routeMetric",message="routeMetric is for mode route: set mode route, or remove routeMetric"
// +kubebuilder:validation:XValidation:rule="(has(self.mode) && self.mode == 'route') || self.trafficSelectors.all(ts, !isCIDR(ts.local) || !isCIDR(ts.remote) || (cidr(ts.local).prefixLength() > 0 && cidr(ts.remote).prefixLength() > 0))",fieldPath=".trafficSelectors",message="0.0.0.0/0 traffic selectors are for mode route (one XFRM interface per tunnel, routes deciding what enters it): set mode route with routes, or give the subnets the tunnel carries"
type Tunnel struct {
	// Name of the tunnel, also its swanctl connection name.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Name string `json:"name"`

	// Peer is the remote gateway.
	Peer Peer `json:"peer"`

	// IKEVersion is 1 or 2 and must be given: peers differ.
	// +kubebuilder:validation:Enum=1;2
	IKEVersion int32 `json:"ikeVersion"`

	// IKEProposals for the IKE SA, most preferred first, in strongSwan's
	// syntax (encryption-integrity-prf-dhgroup), such as
	// "aes256-sha256-modp2048" or "aes256gcm16-prfsha384-ecp384";
	// strongSwan's keywords with '_' (sha2_256) too. A proposal holds AEAD
	// (aes256gcm16) or non-AEAD (aes256-sha256) encryption, not both:
	// charon refuses a connection with such a proposal.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:MaxLength=128
	// +kubebuilder:validation:items:Pattern=`^[a-z0-9_]+(-[a-z0-9_]+)*$`
	// +kubebuilder:validation:XValidation:rule="self.all(p, !p.matches('(^|-)(aes(128|192|256)(gcm|ccm)(8|12|16|64|96|128)|aes(128|192|256)gmac|chacha20poly1305)(-|$)') || !p.matches('(^|-)(3des|cast128|blowfish(128|192|256)|aes(128|192|256)?(ctr)?|camellia(128|192|256)?|null)(-|$)'))",message="a proposal mixes AEAD encryption (such as aes256gcm16 or aes128gmac) with non-AEAD encryption (such as aes256): charon refuses to load it; write them as two proposals, such as aes256-sha256-modp2048,aes256gcm16-prfsha256-modp2048"
	IKEProposals []string `json:"ikeProposals"`

	// ESPProposals for the CHILD_SAs, most preferred first, in strongSwan's
	// syntax, such as "aes256-sha256-modp2048" (with PFS) or
	// "aes256gcm16"; keywords with '_' (sha2_256, sha256_96) too. AEAD and
	// non-AEAD encryption go into separate proposals, as for IKEProposals.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:MaxLength=128
	// +kubebuilder:validation:items:Pattern=`^[a-z0-9_]+(-[a-z0-9_]+)*$`
	// +kubebuilder:validation:XValidation:rule="self.all(p, !p.matches('(^|-)(aes(128|192|256)(gcm|ccm)(8|12|16|64|96|128)|aes(128|192|256)gmac|chacha20poly1305)(-|$)') || !p.matches('(^|-)(3des|cast128|blowfish(128|192|256)|aes(128|192|256)?(ctr)?|camellia(128|192|256)?|null)(-|$)'))",message="a proposal mixes AEAD encryption (such as aes256gcm16 or aes128gmac) with non-AEAD encryption (such as aes256): charon refuses to load it; write them as two proposals, such as aes256-sha256,aes256gcm16"
	ESPProposals []string `json:"espProposals"`

	// IKELifetime of the IKE SA.
	// +optional
	// +kubebuilder:default={}
	IKELifetime IKELifetime `json:"ikeLifetime,omitempty"`

	// ChildLifetime of the CHILD_SAs.
	// +optional
	// +kubebuilder:default={}
	ChildLifetime ChildLifetime `json:"childLifetime,omitempty"`

	// DPD is dead peer detection.
	// +optional
	// +kubebuilder:default={}
	DPD DPD `json:"dpd,omitempty"`

	// StartAction: start initiates the tunnel when loaded and keeps it up
	// (always on: charon retries initiation for ever, keyingtries 0, and
	// re-establishes the IKE SA or CHILD_SA the peer closes, close_action
	// start; the gateway agent also re-initiates a tunnel that stays down
	// without charon trying); trap initiates it when traffic matches and
	// arms again when the peer closes it (close_action trap), and keeps
	// strongSwan's one keying try: the trap stays armed after a failed
	// initiation and the next matching packet initiates again; respond waits
	// for the peer and stays waiting when the peer closes it (close_action
	// none): the peer is the one to re-initiate.
	// +optional
	// +kubebuilder:validation:Enum=start;trap;respond
	// +kubebuilder:default=start
	StartAction string `json:"startAction,omitempty"`

	// ForceEncapsulation sends ESP in UDP even when no NAT is detected
	// (swanctl encap).
	// +optional
	ForceEncapsulation bool `json:"forceEncapsulation,omitempty"`

	// MOBIKE enables IKEv2 mobility (swanctl mobike). Off by default: a
	// site-to-site gateway's address does not move.
	// +optional
	MOBIKE bool `json:"mobike,omitempty"`

	// Fragmentation of IKE messages (swanctl fragmentation).
	// +optional
	// +kubebuilder:validation:Enum=yes;accept;force;no
	// +kubebuilder:default=yes
	Fragmentation string `json:"fragmentation,omitempty"`

	// Unique is charon's uniqueness policy for IKE SAs with the peer's
	// identity (swanctl unique), which decides what happens to a second IKE
	// SA, as both sides initiating at the same moment make: no (the
	// default) keeps it, and replaces older IKE SAs only when the peer's
	// IKE_AUTH carries INITIAL_CONTACT (a peer that restarted); replace
	// deletes the older IKE SA when a new one is established (from the same
	// address 10 s later, as for a reauthentication); keep refuses a new
	// IKE SA from another address while one is established (from the same
	// address it behaves as no). Not replace by default: a peer that
	// re-creates every IKE SA it is told to delete (close_action start, as
	// an always-on peer, this gateway included, is configured) answers each
	// delete with a new IKE SA, which replace deletes again 10 s later, for
	// ever (measured with two charons). Whatever the policy, the gateway
	// agent closes duplicates of an always-on tunnel: the IKE SAs the
	// gateway initiated once the peer's own carries every CHILD_SA, and,
	// at most once an hour, the peer's older ones.
	// +optional
	// +kubebuilder:validation:Enum=no;replace;keep
	// +kubebuilder:default="no"
	Unique string `json:"unique,omitempty"`

	// PreSharedKeySecretRef is the key of a Secret in the Gateway's
	// namespace (spec.forProvider.namespace) holding the tunnel's PSK
	// (swanctl auth psk). The Secret must live beside the gateway pod: a
	// tenant whose claim composes this Gateway can name only its own
	// Secrets. The PSK is never written to a ConfigMap, status, event or
	// log. Exactly one of preSharedKeySecretRef and certificate is given.
	// +optional
	PreSharedKeySecretRef *xpv2.LocalSecretKeySelector `json:"preSharedKeySecretRef,omitempty"`

	// TrafficSelectors are the local/remote subnet pairs the tunnel
	// carries.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=32
	TrafficSelectors []TrafficSelector `json:"trafficSelectors"`

	// ChildSALayout is PerSubnetPair (one CHILD_SA per pair, the default)
	// or Single (one CHILD_SA carrying all pairs' subnets). In PerSubnetPair
	// each CHILD_SA is named <tunnel>-<h>, h the first 8 hex digits of the
	// SHA-256 of "<local> <remote>" (such as "10.30.0.0/24
	// 192.168.10.0/24"): adding, removing or reordering other pairs renames
	// no CHILD_SA, so a live change leaves the others up. In Single the
	// CHILD_SA is named <tunnel>.
	// +optional
	// +kubebuilder:default=PerSubnetPair
	ChildSALayout ChildSALayout `json:"childSALayout,omitempty"`

	// HideNAT translates the source of connections that tenant workloads
	// open to client hosts through this tunnel (mode nat): traffic from a
	// rule's tenantSubnets to its remoteSubnets leaves with a presented
	// address of the tunnel's local traffic selector as its source, so that
	// tenant workloads reach client addresses directly, without a reverse
	// exposure per port. The first rule whose subnets match a connection
	// applies; reverse exposures come before every rule.
	// +optional
	// +kubebuilder:validation:MaxItems=8
	// +listType=map
	// +listMapKey=name
	HideNAT []HideNAT `json:"hideNAT,omitempty"`

	// Mode is policy (the default when left out) or route. In policy mode
	// the traffic selectors decide what enters the tunnel (XFRM policies
	// without an interface ID), so no two tunnels may carry overlapping
	// pairs. In route mode the tunnel's CHILD_SAs are bound to an XFRM
	// interface of its own (swanctl if_id_in and if_id_out), usually with
	// 0.0.0.0/0 traffic selectors on both sides as cloud VPN services and
	// route-based firewalls negotiate, and Routes decide what enters it:
	// the gateway agent creates the interface in the gateway pod's network
	// namespace and routes Routes over it with RouteMetric. So two
	// tunnels may negotiate identical selectors (two tunnels of one cloud
	// VPN connection): the lower metric carries the traffic and the other
	// takes over when its interface or CHILD_SA goes (active/backup), or
	// equal metrics share it (ECMP). The interface of tunnel <name> has
	// the interface ID i, the first four bytes of the SHA-256 of <name>
	// as a big-endian number with the top bit cleared (1 if that is 0),
	// and the name xfrm<i as 8 hex digits>: both depend on the tunnel's
	// name alone, so adding, removing or reordering other tunnels changes
	// no interface. Route mode needs gateway mode routed and data plane
	// KernelXFRM (strongSwan's kernel-libipsec has no interface IDs).
	// +optional
	// +kubebuilder:validation:Enum=policy;route
	Mode TunnelMode `json:"mode,omitempty"`

	// Routes are the remote subnets routed over the tunnel's XFRM interface
	// (mode route), each inside one of the tunnel's remote traffic
	// selectors (packets outside them would find no CHILD_SA and be
	// dropped) and apart from the tenant subnets, the gateway's own network
	// and every peer's address (IKE must not enter a tunnel).
	// +optional
	// +kubebuilder:validation:MaxItems=32
	// +listType=set
	Routes []CIDR `json:"routes,omitempty"`

	// RouteMetric is the metric (Linux route priority) of Routes, 100 when
	// left out (mode route). Between tunnels routing the same subnet the
	// lowest metric carries the traffic: give the backup tunnel a higher
	// one. Tunnels routing a subnet with the same metric share it, one
	// multipath route with a next hop per tunnel (ECMP, per flow).
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=65535
	RouteMetric *int32 `json:"routeMetric,omitempty"`

	// TCPMSS is the largest TCP maximum segment size (MSS), in bytes, that
	// a TCP SYN or SYN-ACK entering or leaving this tunnel may announce:
	// the gateway's nftables rules lower (never raise) the MSS option of
	// those packets as they pass, so that both ends send segments that fit
	// the path with the tunnel's ESP overhead added, without fragmentation
	// or a round of path MTU discovery. Left out, the gateway's tcpMSS
	// applies, or else the MSS computed from a 1500-byte path and the
	// largest ESP overhead among the tunnel's espProposals, NAT-T's UDP
	// header included: 1398 for aes256gcm16, 1382 for aes256-sha256
	// (docs/api.md has the formula). Set it lower when the path to the peer
	// carries less than 1500 bytes, such as a VXLAN tenant network's 1450.
	// 536 (the smallest MSS every IPv4 host accepts) to 1460.
	// +optional
	// +kubebuilder:validation:Minimum=536
	// +kubebuilder:validation:Maximum=1460
	TCPMSS *int32 `json:"tcpMSS,omitempty"`

	// Certificate authenticates the tunnel with X.509 certificates
	// (swanctl auth pubkey) instead of a pre-shared key: the gateway's
	// certificate and key, the CAs that sign the peer's certificate and
	// both identities. Exactly one of preSharedKeySecretRef and certificate
	// is given; with certificate, peer.id is left out (certificate.remoteId
	// is the peer's identity).
	// +optional
	Certificate *CertificateAuth `json:"certificate,omitempty"`
}

// CertificateAuth is a tunnel's X.509 authentication: both sides prove
// their identity with a certificate and a signature of the IKE_AUTH
// exchange (swanctl auth pubkey).
type CertificateAuth struct {
	// SecretName is a Secret of type kubernetes.io/tls in the Gateway's
	// namespace holding the gateway's certificate and private key, as
	// cert-manager writes it: tls.crt, PEM, the certificate first, then
	// any intermediate CA certificates; tls.key, PEM, an RSA or ECDSA key
	// in PKCS#1, PKCS#8 or SEC 1 form, unencrypted. A new certificate in
	// the Secret is loaded live: established IKE SAs stay up and
	// authenticate with it at their next reauthentication.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$`
	SecretName string `json:"secretName"`

	// PeerCA holds the CA certificates that sign the peer's certificate
	// (swanctl remote.cacerts): the peer must present a certificate that
	// chains to one of them.
	PeerCA CARef `json:"peerCA"`

	// LocalID is the identity the gateway presents (swanctl local.id). It
	// must be in the gateway's certificate: its subject (a DN) or a
	// subjectAltName (DNS name, email or IP address, such as the floating
	// IP, which many peers expect as the gateway's identity); a
	// certificate without it is refused, as charon could not prove it.
	// Defaults to the certificate's subject DN.
	// +optional
	LocalID *Identity `json:"localId,omitempty"`

	// RemoteID is the identity the peer must present and its certificate
	// must carry (swanctl remote.id). Required: a CA signs many
	// certificates, and any of them would authenticate without it.
	RemoteID Identity `json:"remoteId"`
}

// A CARef names CA certificates, PEM, in key Key of a Secret or a
// ConfigMap in the Gateway's namespace, such as the ca.crt that
// cert-manager writes beside tls.crt, or a trust bundle's ConfigMap.
// +kubebuilder:validation:XValidation:rule="has(self.secretName) != has(self.configMapName)",message="give exactly one of secretName and configMapName"
type CARef struct {
	// SecretName of a Secret holding the CA certificates.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$`
	SecretName *string `json:"secretName,omitempty"`

	// ConfigMapName of a ConfigMap holding the CA certificates.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$`
	ConfigMapName *string `json:"configMapName,omitempty"`

	// Key holding the PEM certificates; ca.crt by default.
	// +optional
	// +kubebuilder:default="ca.crt"
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[-._a-zA-Z0-9]+$`
	Key string `json:"key,omitempty"`
}

// The key a CARef takes by default.
const DefaultCAKey = "ca.crt"

// An Identity is an IKE identity of a certificate: exactly one of a
// distinguished name, a DNS name, an email address or an IPv4 address.
// +kubebuilder:validation:XValidation:rule="(has(self.dn) ? 1 : 0) + (has(self.fqdn) ? 1 : 0) + (has(self.email) ? 1 : 0) + (has(self.ip) ? 1 : 0) == 1",message="give exactly one of dn, fqdn, email and ip"
type Identity struct {
	// DN is a distinguished name in the order of the certificate's
	// subject, as strongSwan and openssl x509 -noout -subject print it,
	// most significant RDN first: "C=DE, O=Example AG, CN=vpn.example.com".
	// Attributes: C, ST, L, O, OU, CN, SN (serialNumber), DC, UID, E
	// (emailAddress); a value may hold any UTF-8 text, with ',', '+', '"',
	// '\', '<', '>', ';' and '=' escaped by '\' (RFC 4514), or a byte as
	// \XX. A multi-valued RDN joins its attributes with '+'
	// ("OU=Net + CN=rtr1"). Or the DER of the name, as strongSwan's
	// asn1dn:#<hex> (openssl x509 -noout -subject -nameopt multiline
	// does not print it; openssl asn1parse -i -strparse does): for a
	// subject whose attributes or string types the text form cannot
	// write. It matches a certificate whose subject has the same attributes
	// in the same order with the same values, whatever string type the CA
	// encoded them in (strongSwan's asn1dn semantics: it is rendered as
	// the DER of the name, asn1dn:#...). A certificate whose subject lists
	// the attributes in the other order (RFC 4514 strings, as Go and
	// openssl -nameopt RFC2253 print them, are reversed) does not match.
	// +optional
	// +kubebuilder:validation:MinLength=3
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:XValidation:rule="self.contains('=') || self.matches('^asn1dn:#([0-9a-fA-F]{2})+$')",message="a DN is a list of attribute=value, such as C=DE, O=Example AG, CN=vpn.example.com, or asn1dn:# and the hex of its DER"
	DN *string `json:"dn,omitempty"`

	// FQDN is a DNS name of the certificate's subjectAltName.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-zA-Z0-9]([-a-zA-Z0-9]{0,61}[a-zA-Z0-9])?(\.[a-zA-Z0-9]([-a-zA-Z0-9]{0,61}[a-zA-Z0-9])?)*$`
	FQDN *string `json:"fqdn,omitempty"`

	// Email is an email address (rfc822Name) of the certificate's
	// subjectAltName.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-zA-Z0-9._+-]+@[a-zA-Z0-9]([-a-zA-Z0-9.]*[a-zA-Z0-9])?$`
	Email *string `json:"email,omitempty"`

	// IP is an IPv4 address of the certificate's subjectAltName
	// (iPAddress), such as the gateway's floating IP (spec.endpoint.localId
	// of a PSK tunnel).
	// +optional
	IP *IPv4 `json:"ip,omitempty"`
}

// TunnelMode says whether a tunnel's traffic selectors (policy) or routes
// over an XFRM interface of its own (route) decide what enters it.
type TunnelMode string

// Tunnel modes.
const (
	// TunnelModePolicy: XFRM policies of the traffic selectors, no
	// interface.
	TunnelModePolicy TunnelMode = "policy"
	// TunnelModeRoute: an XFRM interface per tunnel and routes over it.
	TunnelModeRoute TunnelMode = "route"
)

// DefaultRouteMetric is the metric of a route-mode tunnel's routes when
// RouteMetric is left out.
const DefaultRouteMetric = 100

// Uniqueness policies of a Tunnel (Tunnel.Unique), swanctl's values.
const (
	UniqueNo      = "no"
	UniqueReplace = "replace"
	UniqueKeep    = "keep"
)

// A Peer is the remote gateway of a tunnel.
type Peer struct {
	// Address of the peer: an IPv4 address or a DNS name (swanctl
	// remote_addrs).
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^([0-9]{1,3}(\.[0-9]{1,3}){3}|[a-zA-Z0-9]([-a-zA-Z0-9]{0,61}[a-zA-Z0-9])?(\.[a-zA-Z0-9]([-a-zA-Z0-9]{0,61}[a-zA-Z0-9])?)*)$`
	Address string `json:"address"`

	// ID is the identity the peer presents (swanctl remote.id), in the
	// forms charon reads: an IPv4 address; a DNS name, '_' allowed
	// ("fw_1.example.net"), with or without strongSwan's '@' that keeps it
	// from being taken for an address ("@fw.example.net"); user@domain;
	// or a distinguished name, written and matched as certificate
	// identities' dn ("C=DE, O=Example AG, CN=fw", "OU=Net + CN=rtr1",
	// or asn1dn:#<hex of the DER>). Defaults to Address.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:Pattern=`^([0-9]{1,3}(\.[0-9]{1,3}){3}|@?[a-zA-Z0-9_]([-a-zA-Z0-9_.]*[a-zA-Z0-9_])?|[a-zA-Z0-9._+-]+@[a-zA-Z0-9]([-a-zA-Z0-9.]*[a-zA-Z0-9])?|[^=]+=.*|asn1dn:#([0-9a-fA-F]{2})+)$`
	ID string `json:"id,omitempty"`
}

// Duration is a Go duration such as "90m" or "4h" ("0" for none), kept as
// written: a metav1.Duration would be written back in Go's canonical form
// ("1h0m0s") by every update the provider makes to the object, Crossplane
// would apply the claim's "1h" again, and each round trip costs watch
// events that the composite's circuit breaker counts.
// +kubebuilder:validation:Pattern=`^(0|([0-9]+(\.[0-9]+)?(ns|us|ms|s|m|h))+)$`
type Duration string

// Duration parses d; admission refuses what it cannot parse.
func (d Duration) Duration() (time.Duration, error) {
	return time.ParseDuration(string(d))
}

// IKELifetime bounds an IKE SA's life. Durations are Go durations ("4h",
// "90m"), rendered to swanctl in seconds.
type IKELifetime struct {
	// RekeyTime after which the IKE SA is rekeyed (swanctl rekey_time).
	// +optional
	// +kubebuilder:default="4h"
	RekeyTime *Duration `json:"rekeyTime,omitempty"`

	// ReauthTime after which the IKE SA is re-authenticated, 0 for never
	// (swanctl reauth_time).
	// +optional
	ReauthTime *Duration `json:"reauthTime,omitempty"`

	// RandTime is the range from which charon picks, for each IKE SA, a
	// random time to subtract from RekeyTime and ReauthTime (swanctl
	// rand_time), so that both peers, and many gateways started together,
	// do not rekey at the same instant; 0 turns it off. Must be shorter
	// than RekeyTime and ReauthTime (when they are not 0). Defaults to
	// strongSwan's: over_time, 10% of the longer of the two.
	// +optional
	RandTime *Duration `json:"randTime,omitempty"`
}

// ChildLifetime bounds a CHILD_SA's life. Durations as in IKELifetime.
// +kubebuilder:validation:XValidation:rule="!has(self.lifeTime) || !has(self.rekeyTime) || duration(self.lifeTime) > duration(self.rekeyTime)",message="lifeTime must be longer than rekeyTime"
type ChildLifetime struct {
	// RekeyTime after which the CHILD_SA is rekeyed (swanctl
	// children.rekey_time).
	// +optional
	// +kubebuilder:default="1h"
	RekeyTime *Duration `json:"rekeyTime,omitempty"`

	// LifeTime after which the CHILD_SA expires if not rekeyed (swanctl
	// children.life_time). Defaults to strongSwan's: 110% of RekeyTime in
	// whole seconds, which equals a RekeyTime under 10s; such a RekeyTime
	// needs a LifeTime, or the CHILD_SA would expire instead of being
	// rekeyed.
	// +optional
	LifeTime *Duration `json:"lifeTime,omitempty"`

	// RandTime is the range from which charon picks, for each CHILD_SA, a
	// random time to subtract from RekeyTime (swanctl children.rand_time);
	// 0 turns it off. Must be shorter than RekeyTime (when it is not 0).
	// Defaults to strongSwan's: LifeTime - RekeyTime.
	// +optional
	RandTime *Duration `json:"randTime,omitempty"`
}

// DPD is dead peer detection.
type DPD struct {
	// Delay between checks of an idle peer, 0 to turn DPD off (swanctl
	// dpd_delay).
	// +optional
	// +kubebuilder:default="30s"
	Delay *Duration `json:"delay,omitempty"`

	// Action when the peer is found dead: clear closes the CHILD_SAs,
	// trap re-arms them to initiate on traffic, restart initiates at once
	// (swanctl children.dpd_action).
	// +optional
	// +kubebuilder:validation:Enum=clear;trap;restart
	// +kubebuilder:default=restart
	Action string `json:"action,omitempty"`

	// Timeout after which an IKEv1 peer that answered no DPD check is
	// declared dead (swanctl dpd_timeout; strongSwan's default is 150s).
	// IKEv1 only: an IKEv2 peer is declared dead when the retransmissions
	// of a check run out, and admission refuses the field for ikeVersion 2.
	// +optional
	Timeout *Duration `json:"timeout,omitempty"`
}

// A TrafficSelector is a pair of subnets whose traffic the tunnel carries.
// +kubebuilder:validation:XValidation:rule="!isCIDR(self.local) || !isCIDR(self.remote) || cidr(self.local).prefixLength() == 0 || cidr(self.remote).prefixLength() == 0 || !(cidr(self.local).containsCIDR(cidr(self.remote)) || cidr(self.remote).containsCIDR(cidr(self.local)))",fieldPath=".remote",message="local and remote overlap: the same addresses cannot be on both sides of the tunnel; give the client's subnet as remote and a local subnet apart from it"
type TrafficSelector struct {
	// Local subnet: in mode nat the inside addresses the client sees, in
	// mode routed a tenant subnet.
	Local CIDR `json:"local"`
	// Remote subnet, on the client side.
	Remote CIDR `json:"remote"`
}
