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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ipsecgw/provider-ipsec/apis/cluster/gateway/v1alpha1"
	"github.com/ipsecgw/provider-ipsec/internal/render"
	"github.com/ipsecgw/provider-ipsec/internal/xfrmi"
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

// Keys of the gateway's ConfigMap and Secret, and where the pod mounts them.
const (
	KeySwanctlConf = "swanctl.conf"
	KeyNATRules    = "nat.nft"
	KeySecrets     = "secrets.conf"
	// KeyStrongSwanConf holds the rendered strongswan.conf fragment, when
	// there is one (render.Files.StrongSwanConf).
	KeyStrongSwanConf = "strongswan.conf"
	// KeyXFRMInterfaces holds the XFRM interfaces and routes of the
	// route-mode tunnels, when there is one (render.Files.XFRMInterfaces).
	KeyXFRMInterfaces = xfrmi.File
	// KeyTunnels is the status ConfigMap's key: the agent's JSON array of
	// v1alpha1.TunnelStatus, sorted by name.
	KeyTunnels = "tunnels.json"
	// KeyLeader is the status ConfigMap's key of an active/standby
	// gateway: the active agent's JSON v1alpha1.LeaderStatus.
	KeyLeader = "leader.json"
	// KeyConfigHash is the status ConfigMap's key of the configuration the
	// agent last loaded into charon: its render.ConfigHash, the hex the
	// provider shows as status.atProvider.configHash for what it rendered.
	KeyConfigHash = "config-hash"
	ConfigDir     = "/etc/ipsecgw/config"
	SecretsDir    = "/etc/ipsecgw/secrets" //nolint:gosec // G101: a directory, not a credential
	RunDir        = "/var/run/charon"
	// StrongSwanConfDir is where the strongswan container finds the
	// fragment, as dataplane.conf, in place of the gateway image's own
	// (data plane KernelXFRM): the image's strongswan.conf includes
	// /etc/ipsecgw/strongswan.d/*.conf last.
	StrongSwanConfDir = "/etc/ipsecgw/strongswan.d"
	// TunDevice is the TUN device kernel-libipsec opens, the node's with
	// data plane Libipsec.
	TunDevice = "/dev/net/tun"
	// SecondaryInterface is the pod's interface on the tenant network.
	SecondaryInterface = "net1"
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
	return Names{Gateway: name, Config: name + "-config", Secrets: name + "-secrets", Status: name + "-status"}
}

// Objects returns every object of gw in its target namespace, ready for
// server-side apply, in the order they should be applied (the Deployment
// last).
func Objects(gw *v1alpha1.Gateway, f *render.Files) ([]client.Object, error) {
	p := gw.Spec.ForProvider
	n := NamesOf(gw.Name)
	meta := func(name string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Name: name, Namespace: p.Namespace, Labels: Labels(gw.Name)}
	}
	nad, err := networkAttachment(gw, meta(n.Gateway))
	if err != nil {
		return nil, err
	}
	config := map[string]string{KeySwanctlConf: string(f.SwanctlConf), KeyNATRules: string(f.NATRules)}
	if f.StrongSwanConf != nil {
		config[KeyStrongSwanConf] = string(f.StrongSwanConf)
	}
	if f.XFRMInterfaces != nil {
		config[KeyXFRMInterfaces] = string(f.XFRMInterfaces)
	}
	objs := []client.Object{
		nad,
		&corev1.ConfigMap{
			TypeMeta:   typeMeta("v1", "ConfigMap"),
			ObjectMeta: meta(n.Config),
			Data:       config,
		},
		&corev1.Secret{
			TypeMeta:   typeMeta("v1", "Secret"),
			ObjectMeta: meta(n.Secrets),
			Type:       corev1.SecretTypeOpaque,
			Data:       map[string][]byte{KeySecrets: f.Secrets},
		},
		// The agent fills data; the provider applies only the metadata, so
		// the two never fight over a field.
		&corev1.ConfigMap{TypeMeta: typeMeta("v1", "ConfigMap"), ObjectMeta: statusMeta(meta(n.Status))},
		&corev1.ServiceAccount{TypeMeta: typeMeta("v1", "ServiceAccount"), ObjectMeta: meta(n.Gateway)},
		&rbacv1.Role{
			TypeMeta:   typeMeta("rbac.authorization.k8s.io/v1", "Role"),
			ObjectMeta: meta(n.Gateway),
			Rules: append([]rbacv1.PolicyRule{
				// The agent writes its tunnel status into the ConfigMap
				// the provider creates for it, and nowhere else.
				{APIGroups: []string{""}, Resources: []string{"configmaps"}, ResourceNames: []string{n.Status}, Verbs: []string{"get", "update", "patch"}},
				// It reads its own configuration.
				{APIGroups: []string{""}, Resources: []string{"configmaps"}, ResourceNames: []string{n.Config}, Verbs: []string{"get", "watch"}},
				{APIGroups: []string{""}, Resources: []string{"secrets"}, ResourceNames: []string{n.Secrets}, Verbs: []string{"get", "watch"}},
			}, leaseRules(gw, n)...),
		},
		&rbacv1.RoleBinding{
			TypeMeta:   typeMeta("rbac.authorization.k8s.io/v1", "RoleBinding"),
			ObjectMeta: meta(n.Gateway),
			RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: n.Gateway},
			Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: n.Gateway, Namespace: p.Namespace}},
		},
		networkPolicy(gw, meta(n.Gateway)),
	}
	objs = append(objs, lease(gw, meta(n.Gateway))...)
	return append(objs, deployment(gw, f, n, meta(n.Gateway), networkHash(nad))), nil
}

// leaseRules returns the agent's rules on the gateway's Lease with
// replicas 2, by name: get and update, which is all client-go's leader
// election does with a Lease that exists, and watch, by which a standby
// sees the Lease released at once (leader.WatchReleases, a watch of that
// one name); the provider creates it (lease), so the agents need no
// create, which RBAC cannot restrict to a name.
func leaseRules(gw *v1alpha1.Gateway, n Names) []rbacv1.PolicyRule {
	if pods(gw) < 2 {
		return nil
	}
	return []rbacv1.PolicyRule{{APIGroups: []string{coordinationv1.GroupName}, Resources: []string{"leases"}, ResourceNames: []string{n.Gateway}, Verbs: []string{"get", "update", "watch"}}}
}

// lease is the gateway's Lease with replicas 2, applied with its metadata
// only: its spec (holder, renew time) is the agents'.
func lease(gw *v1alpha1.Gateway, meta metav1.ObjectMeta) []client.Object {
	if pods(gw) < 2 {
		return nil
	}
	return []client.Object{&coordinationv1.Lease{TypeMeta: typeMeta("coordination.k8s.io/v1", "Lease"), ObjectMeta: meta}}
}

// statusMeta is m with the status ConfigMap's LabelComponent.
func statusMeta(m metav1.ObjectMeta) metav1.ObjectMeta {
	m.Labels[LabelComponent] = ComponentStatus
	return m
}

// Labels returns the labels of every object of the gateway named name.
func Labels(name string) map[string]string {
	return map[string]string{LabelManagedBy: ManagedBy, LabelName: "ipsec-gateway", LabelGateway: name}
}

func typeMeta(apiVersion, kind string) metav1.TypeMeta {
	return metav1.TypeMeta{APIVersion: apiVersion, Kind: kind}
}

// networkAttachment is the Multus NetworkAttachmentDefinition of the
// secondary interface, a CNI plugin list: the interface's plugin with
// static IPAM from the endpoint, then the reference "tuning" plugin, which
// turns on IPv4 forwarding in the pod's network namespace (exposures and
// routed mode forward between the tunnel and the tenant network; the
// containers cannot write /proc/sys, and a pod-level sysctl would need
// the kubelet to allow an unsafe sysctl). The MAC address is given per pod
// in the networks annotation.
func networkAttachment(gw *v1alpha1.Gateway, meta metav1.ObjectMeta) (*unstructured.Unstructured, error) {
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
		// creates later, take the default: loose reverse-path filtering,
		// so that a packet the peer sends on the backup tunnel (cloud VPN
		// peers send on either) is not dropped because the route back
		// to its source is the active tunnel's. A new namespace inherits
		// the host's conf.all (often strict); each interface gets the
		// higher of conf.all and its own, so 2 is loose either way.
		sysctl["net.ipv4.conf.default.rp_filter"] = "2"
	}
	if pods(gw) > 1 {
		// Active/standby: the active agent adds the address
		// (activeStandby); and no IPv6 on net1, whose link-local
		// address would send neighbour discovery with the gateway's MAC
		// from the standby while the CNI has the link up.
		delete(link, "ipam")
		sysctl["net.ipv6.conf."+SecondaryInterface+".disable_ipv6"] = "1"
	}
	cfg, err := json.Marshal(map[string]any{
		"cniVersion": "0.3.1",
		"name":       meta.Name,
		"plugins":    []map[string]any{link, {"type": "tuning", "sysctl": sysctl}},
	})
	if err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(NADKind)
	u.SetName(meta.Name)
	u.SetNamespace(meta.Namespace)
	u.SetLabels(meta.Labels)
	if err := unstructured.SetNestedField(u.Object, string(cfg), "spec", "config"); err != nil {
		return nil, err
	}
	return u, nil
}

// networkHash returns the hex SHA-256 of nad's spec.config.
func networkHash(nad *unstructured.Unstructured) string {
	cfg, _, _ := unstructured.NestedString(nad.Object, "spec", "config")
	sum := sha256.Sum256([]byte(cfg))
	return hex.EncodeToString(sum[:])
}

// networkPolicy admits to the gateway pod's cluster interface only what
// reverse exposures publish. IKE and ESP arrive on the secondary
// interface, which NetworkPolicy does not govern. Egress is left open: the
// agent talks to the API server and exposures reach tenant endpoints whose
// addresses may change.
func networkPolicy(gw *v1alpha1.Gateway, meta metav1.ObjectMeta) *networkingv1.NetworkPolicy {
	ports := make([]networkingv1.NetworkPolicyPort, 0, len(gw.Spec.ForProvider.ReverseExposures))
	for _, r := range gw.Spec.ForProvider.ReverseExposures {
		proto := corev1.ProtocolTCP
		if r.Protocol == "udp" {
			proto = corev1.ProtocolUDP
		}
		port := intstr.FromInt32(int32(r.ListenPort))
		ports = append(ports, networkingv1.NetworkPolicyPort{Protocol: &proto, Port: &port})
	}
	np := &networkingv1.NetworkPolicy{
		TypeMeta:   typeMeta("networking.k8s.io/v1", "NetworkPolicy"),
		ObjectMeta: meta,
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{MatchLabels: Labels(gw.Name)},
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress},
		},
	}
	if len(ports) > 0 {
		np.Spec.Ingress = []networkingv1.NetworkPolicyIngressRule{{Ports: ports}}
	}
	return np
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
