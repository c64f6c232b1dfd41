// Package workload builds the Kubernetes objects of one Gateway in its target
// cluster from the Gateway and its rendered files. Pure: no I/O.
package workload

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	coordinationv1ac "k8s.io/client-go/applyconfigurations/coordination/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	networkingv1ac "k8s.io/client-go/applyconfigurations/networking/v1"
	rbacv1ac "k8s.io/client-go/applyconfigurations/rbac/v1"

	"github.com/ipsecgw/provider-ipsec/apis/cluster/gateway/v1alpha1"
	"github.com/ipsecgw/provider-ipsec/internal/contract"
	"github.com/ipsecgw/provider-ipsec/internal/render"
)

// Labels and annotations on every object of a gateway.
const (
	LabelManagedBy = "app.kubernetes.io/managed-by"
	LabelName      = "app.kubernetes.io/name"
	LabelGateway   = "gateway.ipsecgw.io/name"
	ManagedBy      = "provider-ipsec"
	// LabelComponent tells the agent's status ConfigMap (ComponentStatus)
	// from the gateway's other ConfigMaps, so that the provider watches
	// only the status ConfigMaps.
	LabelComponent  = "app.kubernetes.io/component"
	ComponentStatus = "tunnel-status"
	// ContainerAgent is the name of the gateway pod's agent container.
	ContainerAgent = "agent"
	// AnnotationStartHash on the pod template is render.Files.StartHash:
	// what charon reads only when it starts (the strongswan.conf
	// fragment). Everything else the pod's configuration holds
	// (swanctl.conf, the NAT rules, the PSKs) the agent loads live, so it
	// is left out of the pod template: a tunnel change must not replace the
	// pod.
	AnnotationStartHash = "gateway.ipsecgw.io/start-hash"
	// AnnotationHash is the legacy pod template annotation: providers
	// before AnnotationStartHash wrote render.Files.Hash there, which rolled
	// the pod on every tunnel change. The provider no longer writes it on a
	// new pod template, but carries a live Deployment's value forward
	// unchanged as long as that pod need not be replaced (see the Gateway
	// controller's legacyTemplate): dropping it from the applied object
	// would make server-side apply remove it, and that alone would replace
	// every gateway pod on a provider upgrade.
	AnnotationHash = "gateway.ipsecgw.io/config-hash"
	// AnnotationNetworkHash on the pod template is the hex SHA-256 of the
	// NetworkAttachmentDefinition's config: CNI plugins run only when a
	// pod is made, so a changed attachment (address, gateway, MAC, plugin)
	// must roll the pod.
	AnnotationNetworkHash = "gateway.ipsecgw.io/network-hash"
	AnnotationMultus      = "k8s.v1.cni.cncf.io/networks"
)

// Paths of the strongswan container (contract has the agent's).
const (
	// StrongSwanConfDir is where the strongswan container finds the
	// fragment, as dataplane.conf, in place of the gateway image's own
	// (data plane KernelXFRM): the image's strongswan.conf includes
	// /etc/ipsecgw/strongswan.d/*.conf last.
	StrongSwanConfDir = "/etc/ipsecgw/strongswan.d"
	// TunDevice is the TUN device kernel-libipsec opens, the node's with
	// data plane Libipsec.
	TunDevice = "/dev/net/tun"
)

// NADKind is the Multus NetworkAttachmentDefinition kind.
var NADKind = schema.GroupVersionKind{Group: "k8s.cni.cncf.io", Version: "v1", Kind: "NetworkAttachmentDefinition"}

// Names of a gateway's objects in its namespace.
type Names struct {
	Gateway, Config, Secrets, Status string
}

// NamesOf returns the object names of the gateway named name: the
// ServiceAccount, Role, RoleBinding, NetworkPolicy, NAD and Deployment take
// the gateway's own name.
func NamesOf(name string) Names {
	return Names{Gateway: name, Config: name + "-config", Secrets: name + "-secrets", Status: name + contract.StatusSuffix}
}

// Objects are the objects of one gateway in its target namespace as the
// provider server-side applies them: client-go apply configurations that
// hold every field the provider owns and nothing else, so that what the
// API server records as the applier's (client-go's Extract<Kind>) equals
// them until someone else changes one of those fields.
type Objects struct {
	// NetworkAttachment is the Multus NetworkAttachmentDefinition, a kind
	// client-go has no apply configuration of: an unstructured one.
	NetworkAttachment *unstructured.Unstructured
	Config            *corev1ac.ConfigMapApplyConfiguration
	Secrets           *corev1ac.SecretApplyConfiguration
	// Status is the agent's status ConfigMap, its metadata only: the agent
	// fills its data, so the two never own the same field.
	Status         *corev1ac.ConfigMapApplyConfiguration
	ServiceAccount *corev1ac.ServiceAccountApplyConfiguration
	Role           *rbacv1ac.RoleApplyConfiguration
	RoleBinding    *rbacv1ac.RoleBindingApplyConfiguration
	NetworkPolicy  *networkingv1ac.NetworkPolicyApplyConfiguration
	// Lease is the gateway's Lease (lease).
	Lease      *coordinationv1ac.LeaseApplyConfiguration
	Deployment *appsv1ac.DeploymentApplyConfiguration
}

// Build returns every object of gw in its target namespace, for the
// rendered files f. It fails only when the network attachment's CNI config
// cannot be encoded.
func Build(gw *v1alpha1.Gateway, f *render.Files) (*Objects, error) {
	p := gw.Spec.ForProvider
	n := NamesOf(gw.Name)
	nad, networkHash, err := networkAttachment(gw, n.Gateway)
	if err != nil {
		return nil, err
	}
	config := map[string]string{contract.KeySwanctlConf: string(f.SwanctlConf), contract.KeyNATRules: string(f.NATRules)}
	if f.StrongSwanConf != nil {
		config[contract.KeyStrongSwanConf] = string(f.StrongSwanConf)
	}
	if f.XFRMInterfaces != nil {
		config[contract.KeyXFRMInterfaces] = string(f.XFRMInterfaces)
	}
	labels := Labels(gw.Name)
	statusLabels := Labels(gw.Name)
	statusLabels[LabelComponent] = ComponentStatus
	return &Objects{
		NetworkAttachment: nad,
		Config:            corev1ac.ConfigMap(n.Config, p.Namespace).WithLabels(labels).WithData(config),
		Secrets: corev1ac.Secret(n.Secrets, p.Namespace).WithLabels(labels).
			WithType(corev1.SecretTypeOpaque).WithData(map[string][]byte{contract.KeySecrets: f.Secrets}),
		Status:         corev1ac.ConfigMap(n.Status, p.Namespace).WithLabels(statusLabels),
		ServiceAccount: corev1ac.ServiceAccount(n.Gateway, p.Namespace).WithLabels(labels),
		Role: rbacv1ac.Role(n.Gateway, p.Namespace).WithLabels(labels).WithRules(
			// The agent writes its tunnel status into the ConfigMap the
			// provider creates for it, and nowhere else.
			rule("", "configmaps", n.Status, "get", "update", "patch"),
			// It reads its own configuration.
			rule("", "configmaps", n.Config, "get", "watch"),
			rule("", "secrets", n.Secrets, "get", "watch"),
			leaseRule(n),
		),
		RoleBinding: rbacv1ac.RoleBinding(n.Gateway, p.Namespace).WithLabels(labels).
			WithRoleRef(rbacv1ac.RoleRef().WithAPIGroup(rbacv1.GroupName).WithKind("Role").WithName(n.Gateway)).
			WithSubjects(rbacv1ac.Subject().WithKind(rbacv1.ServiceAccountKind).WithName(n.Gateway).WithNamespace(p.Namespace)),
		NetworkPolicy: networkPolicy(gw, n.Gateway),
		Lease:         lease(gw, n.Gateway),
		Deployment:    deployment(gw, f, n, networkHash),
	}, nil
}

// rule is the RBAC rule granting verbs on the one object named name of
// resource in the API group group.
func rule(group, resource, name string, verbs ...string) *rbacv1ac.PolicyRuleApplyConfiguration {
	return rbacv1ac.PolicyRule().WithAPIGroups(group).WithResources(resource).WithResourceNames(name).WithVerbs(verbs...)
}

// leaseRule is the agent's rule on the gateway's Lease, by name: get and
// update, which is all client-go's leader election does with a Lease that
// exists, and watch, by which a pod sees the Lease released at once
// (leader.WatchReleases, a watch of that one name); the provider creates
// it (lease), so the agents need no create, which RBAC cannot restrict to
// a name. Two pods elect the active one on it; a single pod hands over to
// its replacement through it (leader.Handover).
func leaseRule(n Names) *rbacv1ac.PolicyRuleApplyConfiguration {
	return rule(coordinationv1.GroupName, "leases", n.Gateway, "get", "update", "watch")
}

// lease is the gateway's Lease, applied with its metadata only: its spec
// (holder, renew time) is the agents'.
func lease(gw *v1alpha1.Gateway, name string) *coordinationv1ac.LeaseApplyConfiguration {
	return coordinationv1ac.Lease(name, gw.Spec.ForProvider.Namespace).WithLabels(Labels(gw.Name))
}

// Labels returns the labels of every object of the gateway named name.
func Labels(name string) map[string]string {
	return map[string]string{LabelManagedBy: ManagedBy, LabelName: "ipsec-gateway", LabelGateway: name}
}

// networkAttachment is the Multus NetworkAttachmentDefinition of the
// secondary interface, a CNI plugin list: the interface's plugin with
// static IPAM from the endpoint, then the reference "tuning" plugin, which
// turns on IPv4 forwarding in the pod's network namespace (exposures and
// routed mode forward between the tunnel and the tenant network; the
// containers cannot write /proc/sys, and a pod-level sysctl would need
// the kubelet to allow an unsafe sysctl). The MAC address is given per pod
// in the networks annotation. It returns the attachment and the network
// hash of the pod template (AnnotationNetworkHash), and fails only when
// the CNI config cannot be encoded.
func networkAttachment(gw *v1alpha1.Gateway, name string) (*unstructured.Unstructured, string, error) {
	p := gw.Spec.ForProvider
	link := map[string]any{
		"type":         orDefault(p.NetworkAttachment.Type, "macvlan"),
		"master":       orDefault(p.NetworkAttachment.Master, "eth1"),
		"mode":         orDefault(p.NetworkAttachment.MacvlanMode, "bridge"),
		"capabilities": map[string]bool{"mac": true},
		"ipam": map[string]any{
			"type": "static",
			"addresses": []map[string]string{{
				"address": fmt.Sprintf("%s/%d", p.Endpoint.PrivateAddress, p.Endpoint.PrefixLength),
				"gateway": string(p.Endpoint.Gateway),
			}},
		},
	}
	sysctl := map[string]string{"net.ipv4.ip_forward": "1"}
	if routeMode(gw) {
		// The route-mode tunnels' XFRM interfaces, which the agent
		// creates later, take the default: loose reverse-path filtering
		// (a new namespace inherits the host's conf.all, often strict;
		// each interface gets the higher of conf.all and its own, so 2 is
		// loose either way). What lets a packet the peer sends on the
		// backup tunnel (cloud VPN peers send on either) in although the
		// route back to its source is the active tunnel's is the kernel,
		// not this: it does not filter IPsec-protected packets by reverse
		// path (fib_validate_source skips a packet with a secpath), and
		// everything an XFRM interface receives is (the kernel guest's
		// TestTunnelPairRouteBased: strict filtering on the interface).
		sysctl["net.ipv4.conf.default.rp_filter"] = "2"
		// ECMP between tunnels of equal metric spreads flows by their
		// ports too, not by source and destination address alone (the
		// kernel's default, policy 0): a tenant host's connections to one
		// VPC host take both tunnels.
		sysctl["net.ipv4.fib_multipath_hash_policy"] = "1"
	}
	if pods(gw) > 1 {
		// Active/standby: the active agent adds the address
		// (activeStandby); and no IPv6 on net1, whose link-local
		// address would send neighbour discovery with the gateway's MAC
		// from the standby while the CNI has the link up.
		delete(link, "ipam")
		sysctl["net.ipv6.conf."+contract.SecondaryInterface+".disable_ipv6"] = "1"
	}
	config := func() (string, error) {
		cfg, err := json.Marshal(map[string]any{
			"cniVersion": "0.3.1",
			"name":       name,
			"plugins":    []map[string]any{link, {"type": "tuning", "sysctl": sysctl}},
		})
		return string(cfg), err
	}
	// The hash leaves the silent start out: a pod made without it, whose
	// agent answers from its start, need not be replaced for it, and the
	// pod that replaces it gets it.
	hashed, err := config()
	if err != nil {
		return nil, "", err
	}
	if silentStart(gw) {
		sysctl["net.ipv4.conf."+contract.SecondaryInterface+".arp_ignore"] = "8"
	}
	cfg, err := config()
	if err != nil {
		return nil, "", err
	}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(NADKind)
	u.SetName(name)
	u.SetNamespace(p.Namespace)
	u.SetLabels(Labels(gw.Name))
	if err := unstructured.SetNestedField(u.Object, cfg, "spec", "config"); err != nil {
		return nil, "", err
	}
	sum := sha256.Sum256([]byte(hashed))
	return u, hex.EncodeToString(sum[:]), nil
}

// silentStart reports whether the single pod's net1 is to come up from the
// CNI answering ARP for no address (arp_ignore 8), so that a replacement,
// which the ReplicaSet starts with the same address and MAC while the pod
// it replaces still runs, answers only once its agent holds the Lease,
// after the old one went quiet (leader.Handover). Only when the gateway's
// agent image is one whose agent was seen to reset arp_ignore
// (status.atProvider.silentStartImage): an older agent never does, and its
// pod would never answer.
func silentStart(gw *v1alpha1.Gateway) bool {
	img := gw.Spec.ForProvider.Images.Agent
	return pods(gw) == 1 && img != "" && img == gw.Status.AtProvider.SilentStartImage
}

// networkPolicy admits to the gateway pod's cluster interface only what
// reverse exposures publish. IKE and ESP arrive on the secondary
// interface, which NetworkPolicy does not govern. Egress is left open: the
// agent talks to the API server and exposures reach tenant endpoints whose
// addresses may change. Every port names its protocol, which the API
// server would otherwise default.
func networkPolicy(gw *v1alpha1.Gateway, name string) *networkingv1ac.NetworkPolicyApplyConfiguration {
	spec := networkingv1ac.NetworkPolicySpec().
		WithPodSelector(metav1ac.LabelSelector().WithMatchLabels(Labels(gw.Name))).
		WithPolicyTypes(networkingv1.PolicyTypeIngress)
	if rs := gw.Spec.ForProvider.ReverseExposures; len(rs) > 0 {
		rule := networkingv1ac.NetworkPolicyIngressRule()
		for _, r := range rs {
			proto := corev1.ProtocolTCP
			if r.Protocol == "udp" {
				proto = corev1.ProtocolUDP
			}
			rule.WithPorts(networkingv1ac.NetworkPolicyPort().WithProtocol(proto).WithPort(intstr.FromInt32(int32(r.ListenPort))))
		}
		spec.WithIngress(rule)
	}
	return networkingv1ac.NetworkPolicy(name, gw.Spec.ForProvider.Namespace).WithLabels(Labels(gw.Name)).WithSpec(spec)
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// routeMode says whether a tunnel of gw is in mode route.
func routeMode(gw *v1alpha1.Gateway) bool {
	return slices.ContainsFunc(gw.Spec.ForProvider.Tunnels, func(t v1alpha1.Tunnel) bool { return t.Mode == v1alpha1.TunnelModeRoute })
}
