//go:build kernel

package guest

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	extv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	"github.com/ipsecgw/provider-ipsec/apis/cluster/gateway/v1alpha1"
	"github.com/ipsecgw/provider-ipsec/internal/render"
	"github.com/ipsecgw/provider-ipsec/internal/xfrmi"
	"github.com/ipsecgw/provider-ipsec/test/topology"
)

// The world the examples describe (examples/gateway's comments): the
// gateway's Neutron port and floating IP, the branch office and its
// subnet, the tenant's web service on the Neutron subnet, the cloud
// provider's two VPN endpoints. The topology stands there, so that the
// examples' addresses are tested as written.
var (
	branchPeer   = netip.MustParseAddr("198.51.100.7")
	natEndpoint  = topology.Endpoint{PrivateAddress: netip.MustParseAddr("10.20.0.10"), MACAddress: "fa:16:3e:00:00:0a", FloatingIP: netip.MustParseAddr("203.0.113.10")}
	webHost      = netip.MustParseAddr("10.20.0.80")
	cloudPeers   = []netip.Addr{netip.MustParseAddr("198.51.100.101"), netip.MustParseAddr("198.51.100.102")}
	cloudEnd     = topology.Endpoint{PrivateAddress: netip.MustParseAddr("10.20.0.11"), MACAddress: "fa:16:3e:00:00:0b", FloatingIP: netip.MustParseAddr("203.0.113.11")}
	branchInside = netip.MustParsePrefix("100.64.0.0/24")
)

// webPort is the tenant web service's port (the exposure's target.port),
// and the branch host's service the hide NAT's connection reaches.
const webPort = 8443

// What the other side configured, as its administrators would from the
// examples' comments, written here and not read from the examples: the
// branch's firewall offers the strongest proposals of gateway.yaml, the
// cloud provider its usual ones (AWS's default set begins with them).
var (
	branchIKE = []string{"aes256gcm16-prfsha384-ecp384"}
	branchESP = []string{"aes256gcm16-ecp384"}
	cloudIKE  = []string{"aes256-sha256-modp2048"}
	cloudESP  = []string{"aes256-sha256-modp2048"}
)

// exampleCRD is the cluster-scoped Gateway's CRD, whose defaults the API
// server gives a Gateway before the provider reads it.
const exampleCRD = "package/crds/gateway.ipsecgw.io_gateways.yaml"

// example returns the Gateway of the examples' file name (in
// examples/gateway, as the guest has it below RepoDir) with the CRD's
// defaults applied, as the provider gets it from the API server, and the
// raw PSK of each of its tunnels from the Secrets of the files secrets, by
// the tunnel's preSharedKeySecretRef in the Gateway's namespace.
func example(t *testing.T, name string, secrets ...string) (v1alpha1.GatewayParameters, map[string][]byte) {
	t.Helper()
	var gw *v1alpha1.Gateway
	data := map[string]map[string][]byte{}
	for _, f := range append([]string{name}, secrets...) {
		for _, o := range manifests(t, filepath.Join(RepoDir, "examples", "gateway", f)) {
			switch o.GetKind() {
			case "Gateway":
				if f != name || gw != nil {
					t.Fatalf("%s: Gateway %s: want one Gateway, in %s only", f, o.GetName(), name)
				}
				defaulting.Default(o.Object, gatewaySchema(t))
				gw = &v1alpha1.Gateway{}
				if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(o.Object, gw, true); err != nil {
					t.Fatalf("%s: the Gateway does not decode as v1alpha1: %v", f, err)
				}
			case "Secret":
				var s corev1.Secret
				if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, &s); err != nil {
					t.Fatalf("%s: the Secret %s: %v", f, o.GetName(), err)
				}
				// The API server merges stringData into data.
				keys := map[string][]byte{}
				for k, v := range s.Data {
					keys[k] = v
				}
				for k, v := range s.StringData {
					keys[k] = []byte(v)
				}
				data[s.Namespace+"/"+s.Name] = keys
			}
		}
	}
	if gw == nil {
		t.Fatalf("%s holds no Gateway", name)
	}
	spec := gw.Spec.ForProvider
	psks := map[string][]byte{}
	for _, tn := range spec.Tunnels {
		ref := tn.PreSharedKeySecretRef
		if ref == nil {
			t.Fatalf("%s: tunnel %s has no preSharedKeySecretRef", name, tn.Name)
		}
		psk, ok := data[spec.Namespace+"/"+ref.Name][ref.Key]
		if !ok {
			t.Fatalf("%s: tunnel %s's PSK, key %s of Secret %s/%s, is in none of %v", name, tn.Name, ref.Key, spec.Namespace, ref.Name, secrets)
		}
		psks[tn.Name] = psk
	}
	return spec, psks
}

// manifests returns the YAML documents of file, each an object.
func manifests(t *testing.T, file string) []*unstructured.Unstructured {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("the guest's copy of the repository (package kernel writes it): %v", err)
	}
	var out []*unstructured.Unstructured
	d := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(b), 4096)
	for {
		o := &unstructured.Unstructured{}
		err := d.Decode(&o.Object)
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		if o.Object != nil {
			out = append(out, o)
		}
	}
}

// gatewaySchema returns the structural schema of exampleCRD's served
// version, for its defaults.
func gatewaySchema(t *testing.T) *structuralschema.Structural {
	t.Helper()
	objs := manifests(t, filepath.Join(RepoDir, exampleCRD))
	if len(objs) != 1 {
		t.Fatalf("%s holds %d objects, want the CRD", exampleCRD, len(objs))
	}
	var crd extv1.CustomResourceDefinition
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(objs[0].Object, &crd); err != nil {
		t.Fatalf("%s: %v", exampleCRD, err)
	}
	for _, v := range crd.Spec.Versions {
		if v.Name != v1alpha1.Version || v.Schema == nil {
			continue
		}
		var props apiextensions.JSONSchemaProps
		if err := extv1.Convert_v1_JSONSchemaProps_To_apiextensions_JSONSchemaProps(v.Schema.OpenAPIV3Schema, &props, nil); err != nil {
			t.Fatalf("%s: %v", exampleCRD, err)
		}
		s, err := structuralschema.NewStructural(&props)
		if err != nil {
			t.Fatalf("%s: %v", exampleCRD, err)
		}
		return s
	}
	t.Fatalf("%s has no schema of version %s", exampleCRD, v1alpha1.Version)
	return nil
}

// TestTunnelExamplePolicy runs examples/gateway/gateway.yaml with psk.yaml
// as written, then hide-nat.yaml as a configuration change of the same
// gateway, rendered by internal/render and applied by the image's agent on
// the kernel's data plane, the branch office's charon at the examples'
// peer address offering its own proposals with the Secret's key: a TCP
// connection from the branch's host to the exposure's inside address
// (100.64.0.10:443) reaches the tenant web service (10.20.0.80:8443) from
// the gateway's address (masquerade) through the CHILD_SA of the examples'
// selectors, whose two kernel SAs count it; after hide-nat.yaml, a
// connection from the web service to the branch host's own address
// reaches it from the presented address (100.64.0.20), and the exposure
// still answers.
func TestTunnelExamplePolicy(t *testing.T) {
	spec, psks := example(t, "gateway.yaml", "psk.yaml")
	tp := topology.Start(t, topology.Options{Peers: 1, Conf: topology.KernelConf, GatewayConf: imageConf,
		PeerAddresses: []netip.Addr{branchPeer}, Endpoint: natEndpoint})
	branch := tp.Peers[0]
	sheet := topology.ClientSheet{Name: "to-tenant-a", LocalAddress: branch.Address.String(), RemoteAddress: natEndpoint.FloatingIP.String(),
		PSK: string(psks["branch-a"]), IKEProposals: branchIKE, ESPProposals: branchESP,
		Children: []topology.ClientChild{{Name: "web", LocalTS: []string{branch.Subnet.String()}, RemoteTS: []string{branchInside.String()}}}}
	loadSheet(t, branch, sheet)
	web, err := tp.AddHost("web", webHost, "eth0", "")
	if err != nil {
		t.Fatal(err)
	}
	tp.ServeWhoAmI(t, web, "tcp", fmt.Sprintf("%s:%d", webHost, webPort))

	began := time.Now()
	dir := startAgent(t, tp, spec, psks)
	tp.Gateway.WaitSA(t, "branch-a", upTimeout, topology.Up(render.ChildName("branch-a", branchInside, branch.Subnet)))
	t.Logf("gateway.yaml: agent started to the CHILD_SA INSTALLED in %v", time.Since(began).Round(time.Millisecond))
	ask(t, tp, "gateway.yaml's exposure web: branch host → 100.64.0.10:443", branch.HostNS, "tcp", "100.64.0.10:443", natEndpoint.PrivateAddress)
	kernelCarried(t, tp, 2, 3)
	if t.Failed() {
		return
	}

	spec, psks = example(t, "hide-nat.yaml", "psk.yaml")
	// The tenant hosts' route to the branch (hide-nat.yaml's comment).
	tp.MustExec(web, "ip", "route", "add", branch.Subnet.String(), "via", natEndpoint.PrivateAddress.String())
	tp.ServeWhoAmI(t, branch.HostNS, "tcp", fmt.Sprintf("%s:%d", branch.Host, webPort))
	began = time.Now()
	writeAgentFiles(t, dir, render.Input{Spec: spec, PSKs: psks})
	presented := netip.MustParseAddr("100.64.0.20")
	to := fmt.Sprintf("%s:%d", branch.Host, webPort)
	for {
		from, err := tp.AskWhoAmI(web, "tcp", to, 2*time.Second)
		if got, perr := netip.ParseAddrPort(from); err == nil && perr == nil && got.Addr() == presented {
			break
		}
		if time.Since(began) > upTimeout {
			t.Fatalf("hide-nat.yaml's neutron-hosts: web service → branch host %s did not arrive from %s within %v after the change (last: %q, %v)", to, presented, upTimeout, from, err)
		}
		time.Sleep(500 * time.Millisecond)
	}
	t.Logf("hide-nat.yaml: the branch host saw the web service as %s %v after the change", presented, time.Since(began).Round(time.Millisecond))
	ask(t, tp, "hide-nat.yaml's exposure web: branch host → 100.64.0.10:443", branch.HostNS, "tcp", "100.64.0.10:443", natEndpoint.PrivateAddress)
}

// TestTunnelExampleRouteBased runs examples/gateway/route-based.yaml as
// written (its Secret's two keys), rendered by internal/render and applied
// by the image's agent on the kernel's data plane, with two cloud peer
// charons at the example's endpoints, each 0.0.0.0/0 === 0.0.0.0/0 with its
// own key and its own proposals, both holding the VPC's address: the
// tenant's router sends 172.31.0.0/16 to the gateway's port (the example's
// comment), and UDP from the tenant web service to the VPC goes, from its
// own address (mode routed), through cloud-vpn-1's interface (metric 100)
// and SAs, none through cloud-vpn-2's (metric 200).
func TestTunnelExampleRouteBased(t *testing.T) {
	spec, psks := example(t, "route-based.yaml")
	tp := topology.Start(t, topology.Options{Peers: 2, Conf: topology.KernelConf, GatewayConf: imageConf,
		PeerAddresses: cloudPeers, Endpoint: cloudEnd})
	anyNet := netip.MustParsePrefix("0.0.0.0/0")
	var links []string
	var ids []uint32
	for i, p := range tp.Peers {
		name := fmt.Sprintf("cloud-vpn-%d", i+1)
		loadSheet(t, p, topology.ClientSheet{Name: "vpn-connection", LocalAddress: p.Address.String(), RemoteAddress: cloudEnd.FloatingIP.String(),
			PSK: string(psks[name]), IKEProposals: cloudIKE, ESPProposals: cloudESP,
			Children: []topology.ClientChild{{Name: "vpc", LocalTS: []string{anyNet.String()}, RemoteTS: []string{anyNet.String()}}}})
		tp.MustExec(p.NS, "ip", "addr", "add", netip.PrefixFrom(vpcAddress, 32).String(), "dev", "lo")
		tp.ServeWhoAmI(t, p.NS, "udp", fmt.Sprintf("%s:%d", vpcAddress, vpcPort))
		ids = append(ids, xfrmi.IfID(name))
		links = append(links, xfrmi.InterfaceName(xfrmi.IfID(name)))
	}
	web, err := tp.AddHost("web", webHost, "eth0", "")
	if err != nil {
		t.Fatal(err)
	}
	tp.MustExec(tp.Router, "ip", "route", "add", vpcSubnet.String(), "via", cloudEnd.PrivateAddress.String())

	began := time.Now()
	startAgent(t, tp, spec, psks)
	for _, tn := range spec.Tunnels {
		tp.Gateway.WaitSA(t, tn.Name, upTimeout, topology.Up(render.ChildName(tn.Name, anyNet, anyNet)))
	}
	t.Logf("agent started to both CHILD_SAs INSTALLED in %v", time.Since(began).Round(time.Millisecond))
	awaitRoutes(t, tp, "route-based.yaml", 10*time.Second, fmt.Sprintf("dev %s .*metric 100", links[0]), fmt.Sprintf("dev %s .*metric 200", links[1]))

	tx0, sa0 := linkTX(t, tp, links), saPackets(t, tp)
	for i := range 3 {
		ask(t, tp, fmt.Sprintf("web service → VPC %s (%d)", vpcAddress, i), web, "udp", fmt.Sprintf("%s:%d", vpcAddress, vpcPort), webHost)
	}
	tx1, sa1 := linkTX(t, tp, links), saPackets(t, tp)
	if d := sub(tx1, tx0); d[0] < 3 || d[1] != 0 {
		t.Errorf("the interfaces sent %v packets (%v): want 3 or more through the active cloud-vpn-1, none through cloud-vpn-2", d, links)
	}
	if a, b := sa1[ids[0]]-sa0[ids[0]], sa1[ids[1]]-sa0[ids[1]]; a < 6 || b != 0 {
		t.Errorf("cloud-vpn-1's SAs counted %d packets, cloud-vpn-2's %d: want 6 or more (both ways), and none", a, b)
	}
}
