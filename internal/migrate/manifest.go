package migrate

import (
	"bytes"
	"sort"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	gwv1alpha1 "github.com/ipsecgw/provider-ipsec/apis/cluster/gateway/v1alpha1"
	"github.com/ipsecgw/provider-ipsec/internal/function"
)

// API versions of the IPsecGateway.
const (
	apiNamespaced = "vpn.m.ipsecgw.io/v1alpha1"
	apiLegacy     = "vpn.ipsecgw.io/v1alpha1"
)

// gateway is the IPsecGateway manifest: the XRD's spec as the function
// reads it (internal/function), only the fields an import fills.
type gateway struct {
	APIVersion string            `json:"apiVersion"`
	Kind       string            `json:"kind"`
	Metadata   metav1.ObjectMeta `json:"metadata"`
	Spec       gatewaySpec       `json:"spec"`
}

type gatewaySpec struct {
	Endpoint      function.Endpoint   `json:"endpoint"`
	Network       function.Network    `json:"network"`
	Mode          gwv1alpha1.Mode     `json:"mode"`
	Routed        *function.Routed    `json:"routed,omitempty"`
	TenantSubnets []gwv1alpha1.CIDR   `json:"tenantSubnets,omitempty"`
	Tunnels       []gwv1alpha1.Tunnel `json:"tunnels"`
}

// GatewayManifest is the IPsecGateway of res as YAML: mode routed (the VM
// routed the tenant's subnets, its leftsubnets, to the client's, its
// rightsubnets), pinning the VM's floating IP. It holds no secret.
func GatewayManifest(res *Result, opts Options) ([]byte, error) {
	g := gateway{APIVersion: apiNamespaced, Kind: "IPsecGateway",
		Metadata: metav1.ObjectMeta{Name: opts.Name, Namespace: opts.Namespace}}
	if opts.LegacyClaim {
		g.APIVersion = apiLegacy
	}
	g.Spec = gatewaySpec{
		Endpoint: function.Endpoint{FloatingIP: opts.FloatingIP},
		Network:  function.Network{NetworkID: opts.NetworkID, SubnetID: opts.SubnetID, FixedIP: opts.FixedIP},
		Mode:     gwv1alpha1.ModeRouted,
		Routed:   &function.Routed{RouterID: opts.RouterID},
		Tunnels:  res.Tunnels,
	}
	local, remote := map[string]bool{}, map[string]bool{}
	for _, t := range res.Tunnels {
		for _, ts := range t.TrafficSelectors {
			local[string(ts.Local)], remote[string(ts.Remote)] = true, true
		}
	}
	for _, s := range sortedKeys(local) {
		g.Spec.TenantSubnets = append(g.Spec.TenantSubnets, gwv1alpha1.CIDR(s))
	}
	g.Spec.Routed.ClientSubnets = sortedKeys(remote)
	return yaml.Marshal(g)
}

// SecretManifests are the Secrets res's tunnels name, as YAML documents
// separated by "---": the PSKs (Opaque, a key per tunnel), each tunnel's
// certificate and key (kubernetes.io/tls) and the peers' CAs. The only
// output of an import that holds secrets.
func SecretManifests(res *Result, opts Options) ([]byte, error) {
	var docs []corev1.Secret
	meta := func(name string) metav1.ObjectMeta { return metav1.ObjectMeta{Name: name, Namespace: opts.Namespace} }
	tm := metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"}
	if len(res.PSKs) > 0 {
		s := corev1.Secret{TypeMeta: tm, ObjectMeta: meta(opts.Name + "-psk"), Type: corev1.SecretTypeOpaque, Data: map[string][]byte{}}
		for k, v := range res.PSKs {
			s.Data[k] = v
		}
		docs = append(docs, s)
	}
	names := make([]string, 0, len(res.TLS))
	for n := range res.TLS {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		docs = append(docs, corev1.Secret{TypeMeta: tm, ObjectMeta: meta(n), Type: corev1.SecretTypeTLS,
			Data: map[string][]byte{corev1.TLSCertKey: res.TLS[n][0], corev1.TLSPrivateKeyKey: res.TLS[n][1]}})
	}
	if len(res.CA) > 0 {
		docs = append(docs, corev1.Secret{TypeMeta: tm, ObjectMeta: meta(opts.Name + "-peer-ca"), Type: corev1.SecretTypeOpaque,
			Data: map[string][]byte{gwv1alpha1.DefaultCAKey: res.CA}})
	}
	var b bytes.Buffer
	for i, d := range docs {
		if i > 0 {
			b.WriteString("---\n")
		}
		y, err := yaml.Marshal(d)
		if err != nil {
			return nil, err
		}
		b.Write(y)
	}
	return b.Bytes(), nil
}
