package function

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/crossplane/function-sdk-go/logging"
	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/types/known/structpb"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	gwv1alpha1 "github.com/ipsecgw/provider-ipsec/apis/cluster/gateway/v1alpha1"
)

// obj parses a YAML object.
func obj(t *testing.T, y string) map[string]any {
	t.Helper()
	m := map[string]any{}
	if err := yaml.Unmarshal([]byte(y), &m); err != nil {
		t.Fatalf("%v\n%s", err, y)
	}
	return m
}

// res is a RunFunction resource from a YAML object.
func res(t *testing.T, y string) *fnv1.Resource {
	t.Helper()
	s, err := structpb.NewStruct(obj(t, y))
	if err != nil {
		t.Fatal(err)
	}
	return &fnv1.Resource{Resource: s}
}

// natSpec is the part of the spec of a mode nat composite that its Gateway
// carries as is.
const natSpec = `mode: nat
tenantSubnets: [10.20.0.0/24, 10.96.0.0/12]
tunnels:
- name: branch-a
  peer: {address: 198.51.100.7}
  ikeVersion: 2
  ikeProposals: [aes256-sha256-modp2048]
  espProposals: [aes256gcm16]
  preSharedKeySecretRef: {name: branch-a-psk, key: psk}
  trafficSelectors: [{local: 100.64.0.0/24, remote: 192.168.10.0/24}]
exposures: []
reverseExposures: []`

// indent indents every line of y by n spaces.
func indent(y string, n int) string {
	pad := strings.Repeat(" ", n)
	return pad + strings.ReplaceAll(y, "\n", "\n"+pad)
}

// natXR is a mode nat composite with a label, the endpoint endpoint (a YAML
// flow mapping) and, unless claimRef is empty, the claim reference claimRef.
func natXR(claimRef, endpoint string) string {
	if claimRef != "" {
		claimRef = "\n  claimRef: " + claimRef
	}
	return fmt.Sprintf(`
apiVersion: vpn.ipsecgw.io/v1alpha1
kind: XIPsecGateway
metadata:
  name: branch-vpn-7xk2p
  labels: {cutover: "1795990000"}
spec:%s
  providerConfigName: default
  endpoint: %s
  network: {networkId: n-1, subnetId: s-1, fixedIP: 10.20.0.10}
%s
`, claimRef, endpoint, indent(natSpec, 2))
}

const (
	// claimA is the claim of xrNAT.
	claimA = "{apiVersion: vpn.ipsecgw.io/v1alpha1, kind: IPsecGateway, namespace: tenant-a, name: branch-vpn}"
	// pinnedEndpoint is xrNAT's endpoint.
	pinnedEndpoint = "{floatingIP: 203.0.113.10, ikeSourcePrefix: 0.0.0.0/0}"
)

// xrNAT is a pinned, mode nat composite of a claim, with a label.
var xrNAT = natXR(claimA, pinnedEndpoint)

const wantSG = `
apiVersion: networking.ipsecgw.io/v1alpha1
kind: SecurityGroup
metadata:
  labels: {cutover: "1795990000"}
spec:
  providerConfigRef: {name: default}
  forProvider:
    name: ipsecgw-tenant-a-branch-vpn
    description: IPsec gateway (provider-ipsec)
    rules:
    - {direction: ingress, protocol: udp, portRangeMin: 500, portRangeMax: 500, remoteIpPrefix: 0.0.0.0/0, description: IKE}
    - {direction: ingress, protocol: udp, portRangeMin: 4500, portRangeMax: 4500, remoteIpPrefix: 0.0.0.0/0, description: IKE and ESP in UDP (NAT-T)}
    - {direction: ingress, remoteIpPrefix: 10.20.0.0/24}
    - {direction: ingress, remoteIpPrefix: 10.96.0.0/12}
`

const wantPort = `
apiVersion: networking.ipsecgw.io/v1alpha1
kind: Port
metadata:
  labels: {cutover: "1795990000"}
spec:
  providerConfigRef: {name: default}
  forProvider:
    name: ipsecgw-tenant-a-branch-vpn
    description: IPsec gateway (provider-ipsec)
    networkId: n-1
    portSecurityEnabled: true
    fixedIps: [{subnetId: s-1, ipAddress: 10.20.0.10}]
    securityGroupIdSelector: {matchControllerRef: true}
`

const wantPinnedFIP = `
apiVersion: networking.ipsecgw.io/v1alpha1
kind: FloatingIPBinding
metadata:
  labels: {cutover: "1795990000"}
spec:
  providerConfigRef: {name: default}
  deletionPolicy: Orphan
  forProvider:
    description: IPsec gateway (provider-ipsec)
    floatingIpAddress: 203.0.113.10
    portIdSelector: {matchControllerRef: true}
`

// wantPairs is xrNAT's NodeAddressPairs: the gateway port's address on the
// ports of every node (no nodeSelector), no CIDRs in mode nat.
const wantPairs = `
apiVersion: networking.ipsecgw.io/v1alpha1
kind: NodeAddressPairs
metadata:
  labels: {cutover: "1795990000"}
spec:
  providerConfigRef: {name: default}
  forProvider:
    portIdSelector: {matchControllerRef: true}
`

// observedPairs is xrNAT's NodeAddressPairs as the provider reports it:
// Ready, or not with the message msg.
func observedPairs(ready bool, nodes int, msg string) string {
	return fmt.Sprintf(`
apiVersion: networking.ipsecgw.io/v1alpha1
kind: NodeAddressPairs
metadata: {name: branch-vpn-7xk2p-n3c8d}
status:
  atProvider: {nodes: %d}
  conditions: [{type: Ready, status: %q, reason: Available, message: %q, lastTransitionTime: "2026-11-29T10:00:07Z"}]
`, nodes, map[bool]string{true: "True", false: "False"}[ready], msg)
}

// fixedIP is the fixed IP Neutron reports for xrNAT's port.
const fixedIP = "{subnetId: s-1, ipAddress: 10.20.0.10, subnetCidr: 10.20.0.0/24, gatewayIp: 10.20.0.1}"

// readyPort is xrNAT's port, Ready, as Neutron made it with the fixed IP
// fixed (a YAML flow mapping): Neutron ID p-1, its external name.
func readyPort(fixed string) string {
	return fmt.Sprintf(`
apiVersion: networking.ipsecgw.io/v1alpha1
kind: Port
metadata: {name: branch-vpn-7xk2p-p9d2x, annotations: {crossplane.io/external-name: p-1}}
status:
  atProvider:
    id: p-1
    macAddress: fa:16:3e:12:34:56
    fixedIps: [%s]
  conditions: [{type: Ready, status: "True", reason: Available, lastTransitionTime: "2026-11-29T10:00:05Z"}]
`, fixed)
}

// observedPort is the port of xrNAT once Neutron made it.
var observedPort = readyPort(fixedIP)

// readyCondition is the conditions of a resource whose Ready is status.
func readyCondition(status bool) string {
	return fmt.Sprintf(`[{type: Ready, status: %q, reason: Available, lastTransitionTime: "2026-11-29T10:00:06Z"}]`,
		map[bool]string{true: "True", false: "False"}[status])
}

// observedBinding is xrNAT's binding, attached or not.
func observedBinding(attached bool) string {
	return fmt.Sprintf(`
apiVersion: networking.ipsecgw.io/v1alpha1
kind: FloatingIPBinding
metadata: {name: branch-vpn-7xk2p-f8s1q}
spec: {forProvider: {floatingIpAddress: 203.0.113.10}}
status:
  atProvider: {attached: %t}
  conditions: %s
`, attached, readyCondition(attached))
}

// portStatus is the composite's status.port from observedPort.
const portStatus = `
port:
  id: p-1
  privateIP: 10.20.0.10
  subnetCIDR: 10.20.0.0/24
  gatewayIP: 10.20.0.1
  macAddress: fa:16:3e:12:34:56
  conditions: [{type: Ready, status: "True", reason: Available, lastTransitionTime: "2026-11-29T10:00:05Z"}]
`

// fipStatus is the composite's status.floatingIP from observedBinding.
func fipStatus(attached bool) string {
	return fmt.Sprintf(`
floatingIP:
  address: 203.0.113.10
  attached: %t
  conditions: %s
`, attached, readyCondition(attached))
}

// wantGateway is xrNAT's Gateway with the endpoint of observedPort and the
// local identity localID.
func wantGateway(active bool, localID string) string {
	return fmt.Sprintf(`
apiVersion: gateway.ipsecgw.io/v1alpha1
kind: Gateway
metadata:
  labels: {cutover: "1795990000"}
spec:
  providerConfigRef: {name: default}
  forProvider:
    namespace: tenant-a
    active: %t
    endpoint: {privateAddress: 10.20.0.10, prefixLength: 24, gateway: 10.20.0.1, macAddress: "fa:16:3e:12:34:56", localId: %s}
%s
`, active, localID, indent(natSpec, 4))
}

// manySubnets is a routed, allocated composite with n tenant and n client
// subnets, and what it composes beside the Port and the Gateway.
func manySubnets(n int) (xr, sg, routes, pairs string) {
	var ts, cs, rules, rs, cidrs []string
	for i := range n {
		ts = append(ts, fmt.Sprintf("10.40.%d.0/24", i))
		cs = append(cs, fmt.Sprintf("192.168.%d.0/24", 100+i))
		rules = append(rules, fmt.Sprintf("    - {direction: ingress, remoteIpPrefix: 10.40.%d.0/24}", i))
		rs = append(rs, fmt.Sprintf("    - {destination: 192.168.%d.0/24}", 100+i))
		cidrs = append(cidrs, fmt.Sprintf("    - 192.168.%d.0/24", 100+i))
	}
	xr = fmt.Sprintf(`
apiVersion: vpn.ipsecgw.io/v1alpha1
kind: XIPsecGateway
metadata: {name: campus-vpn-h7q2w}
spec:
  claimRef: {namespace: tenant-c, name: campus-vpn}
  endpoint: {floatingNetworkId: ext-1}
  network: {networkId: n-2, subnetId: s-2}
  mode: routed
  routed: {routerId: r-1, clientSubnets: [%s]}
  tenantSubnets: [%s]
  tunnels: [{name: campus, peer: {address: 198.51.100.40}, trafficSelectors: [{local: 10.40.0.0/16, remote: 192.168.100.0/24}]}]
`, strings.Join(cs, ", "), strings.Join(ts, ", "))
	sg = `
apiVersion: networking.ipsecgw.io/v1alpha1
kind: SecurityGroup
spec:
  providerConfigRef: {name: default}
  forProvider:
    name: ipsecgw-tenant-c-campus-vpn
    description: IPsec gateway (provider-ipsec)
    rules:
    - {direction: ingress, protocol: udp, portRangeMin: 500, portRangeMax: 500, description: IKE}
    - {direction: ingress, protocol: udp, portRangeMin: 4500, portRangeMax: 4500, description: IKE and ESP in UDP (NAT-T)}
` + strings.Join(rules, "\n")
	routes = `
apiVersion: networking.ipsecgw.io/v1alpha1
kind: RouterRoutes
spec:
  providerConfigRef: {name: default}
  forProvider:
    routerId: r-1
    nexthopPortSelector: {matchControllerRef: true}
    routes:
` + strings.Join(rs, "\n")
	pairs = `
apiVersion: networking.ipsecgw.io/v1alpha1
kind: NodeAddressPairs
spec:
  providerConfigRef: {name: default}
  forProvider:
    portIdSelector: {matchControllerRef: true}
    cidrs:
` + strings.Join(cidrs, "\n")
	return xr, sg, routes, pairs
}

// unmappedNode is the message of a NodeAddressPairs with a node it cannot
// map to its port.
const unmappedNode = `node vpn-2: spec.providerID "" is not openstack:///<instance UUID>: run the OpenStack cloud provider (or set it so), or leave the node out with spec.forProvider.nodeSelector`

// gatewayNodes is the nodeSelector of the NodeSelector case.
var gatewayNodes = map[string]any{"node-role.kubernetes.io/vpn-gateway": "", "topology.kubernetes.io/zone": "az-1"}

// withForProvider is the object y with spec.forProvider.key set to v.
func withForProvider(t *testing.T, y, key string, v any) map[string]any {
	t.Helper()
	m := obj(t, y)
	m["spec"].(map[string]any)["forProvider"].(map[string]any)[key] = v
	return m
}

// withExternalName is the object y with the external name name.
func withExternalName(t *testing.T, y, name string) map[string]any {
	t.Helper()
	m := obj(t, y)
	md, _ := m["metadata"].(map[string]any)
	if md == nil {
		md = map[string]any{}
		m["metadata"] = md
	}
	md["annotations"] = map[string]any{"crossplane.io/external-name": name}
	return m
}

// resultStrings are the results of rsp as "SEVERITY TARGET: message", each
// that starts with the one of want at its index as that one.
// run runs the function on the composite xr and the observed composed
// resources by name (YAML), with none of the pins Crossplane fetches for
// the claim's namespace.
func run(t *testing.T, xr string, observed map[string]string) *fnv1.RunFunctionResponse {
	t.Helper()
	req := &fnv1.RunFunctionRequest{Observed: &fnv1.State{Composite: res(t, xr), Resources: map[string]*fnv1.Resource{}},
		RequiredResources: map[string]*fnv1.Resources{pinRequirement: {}}}
	for n, y := range observed {
		req.Observed.Resources[n] = res(t, y)
	}
	rsp, err := New(logging.NewNopLogger()).RunFunction(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	return rsp
}

func resultStrings(rsp *fnv1.RunFunctionResponse, want []string) []string {
	var out []string
	for i, r := range rsp.GetResults() {
		g := r.GetSeverity().String() + " " + r.GetTarget().String() + ": " + r.GetMessage()
		if i < len(want) && strings.HasPrefix(g, want[i]) {
			g = want[i]
		}
		out = append(out, g)
	}
	return out
}

// conditionString is condition StepsReady of rsp as "STATUS TARGET Reason:
// message", empty when rsp has none.
func conditionString(rsp *fnv1.RunFunctionResponse) string {
	for _, c := range rsp.GetConditions() {
		if c.GetType() == TypeStepsReady {
			return c.GetStatus().String() + " " + c.GetTarget().String() + " " + c.GetReason() + ": " + c.GetMessage()
		}
	}
	return ""
}

// got is what a response says of each desired composed resource.
type got struct {
	Object map[string]any
	Ready  fnv1.Ready
}

func TestRunFunction(t *testing.T) {
	xr20, sg20, routes20, pairs20 := manySubnets(20)
	type want struct {
		// resources by name; nil: not checked.
		resources map[string]got
		// only these resource names, in any order.
		names []string
		// status of the desired composite.
		status map[string]any
		// results as "SEVERITY TARGET: message", each message in full or,
		// for a fatal one that wraps an error of a library, its beginning.
		results []string
		// readiness of the desired composite: the function leaves it to
		// Crossplane, which derives it from the composed resources'.
		compositeReady fnv1.Ready
		// stepsReady is condition StepsReady as conditionString says it;
		// empty: not checked.
		stepsReady string
	}
	cases := map[string]struct {
		reason   string
		xr       string
		observed map[string]string
		want     want
	}{
		"PinnedNATFirstRun": {
			reason: "A new nat composite gets its security group (a rule per tenant subnet), port, pinned binding (deletionPolicy Orphan) and node address pairs (the port's, on every node's port), with its labels; no RouterRoutes, no Gateway before the port has an address, and no result at all (no warning).",
			xr:     xrNAT,
			want: want{
				names: []string{"floating-ip", "node-address-pairs", "port", "security-group"},
				resources: map[string]got{
					"security-group": {Object: obj(t, wantSG), Ready: fnv1.Ready_READY_FALSE},
					"port":           {Object: obj(t, wantPort), Ready: fnv1.Ready_READY_FALSE},
					"floating-ip":    {Object: obj(t, wantPinnedFIP), Ready: fnv1.Ready_READY_FALSE},
					// It reads the port's address from Neutron through its
					// selector: nothing to wait for here.
					"node-address-pairs": {Object: obj(t, wantPairs), Ready: fnv1.Ready_READY_FALSE},
				},
				status: map[string]any{},
			},
		},
		"PreStage": {
			reason: "With the port made and the pinned floating IP still held elsewhere, the Gateway renders ahead of the attach (its local identity is the pinned address) with active false, and the port's facts reach the composite's status.",
			xr:     xrNAT,
			observed: map[string]string{
				"port":        observedPort,
				"floating-ip": observedBinding(false),
			},
			want: want{
				names: []string{"floating-ip", "gateway", "node-address-pairs", "port", "security-group"},
				resources: map[string]got{
					"port":    {Object: withExternalName(t, wantPort, "p-1"), Ready: fnv1.Ready_READY_TRUE},
					"gateway": {Object: obj(t, wantGateway(false, "203.0.113.10")), Ready: fnv1.Ready_READY_FALSE},
				},
				status: obj(t, fipStatus(false)+portStatus),
			},
		},
		"Cutover": {
			reason: "In the run that observes the binding attached, the Gateway is active: it does not wait for the composite's status.",
			xr:     xrNAT,
			observed: map[string]string{
				"port":        observedPort,
				"floating-ip": observedBinding(true),
			},
			want: want{
				names: []string{"floating-ip", "gateway", "node-address-pairs", "port", "security-group"},
				resources: map[string]got{
					"gateway":     {Object: obj(t, wantGateway(true, "203.0.113.10")), Ready: fnv1.Ready_READY_FALSE},
					"floating-ip": {Object: obj(t, wantPinnedFIP), Ready: fnv1.Ready_READY_TRUE},
				},
			},
		},
		"ActiveStandby": {
			reason: "The composite's replicas reach the Gateway as they are: two pods, active and standby.",
			xr:     xrNAT + "  replicas: 2\n",
			observed: map[string]string{
				"port":        observedPort,
				"floating-ip": observedBinding(true),
			},
			want: want{
				names: []string{"floating-ip", "gateway", "node-address-pairs", "port", "security-group"},
				resources: map[string]got{
					"gateway": {Object: obj(t, wantGateway(true, "203.0.113.10")+"    replicas: 2\n"), Ready: fnv1.Ready_READY_FALSE},
				},
			},
		},
		"TCPMSS": {
			reason: "The composite's tcpMSS reaches the Gateway as it is: the TCP MSS of the tunnels without one of their own.",
			xr:     xrNAT + "  tcpMSS: 1300\n",
			observed: map[string]string{
				"port":        observedPort,
				"floating-ip": observedBinding(true),
			},
			want: want{
				names: []string{"floating-ip", "gateway", "node-address-pairs", "port", "security-group"},
				resources: map[string]got{
					"gateway": {Object: obj(t, wantGateway(true, "203.0.113.10")+"    tcpMSS: 1300\n"), Ready: fnv1.Ready_READY_FALSE},
				},
			},
		},
		"GatewayKeptWhilePortSilent": {
			reason: "A Gateway composed before stays composed, with its endpoint, when the port reports no address in a run: dropped, Crossplane would delete it.",
			xr:     xrNAT,
			observed: map[string]string{
				"port":        "{apiVersion: networking.ipsecgw.io/v1alpha1, kind: Port, metadata: {name: p}}",
				"floating-ip": observedBinding(true),
				"gateway":     "{apiVersion: gateway.ipsecgw.io/v1alpha1, kind: Gateway, metadata: {name: branch-vpn-7xk2p-g1}, spec: {forProvider: {endpoint: {privateAddress: 10.20.0.10, prefixLength: 24, gateway: 10.20.0.1, macAddress: 'fa:16:3e:12:34:56', localId: 203.0.113.10}}}}",
			},
			want: want{
				names: []string{"floating-ip", "gateway", "node-address-pairs", "port", "security-group"},
				resources: map[string]got{
					"gateway": {Object: obj(t, wantGateway(true, "203.0.113.10")), Ready: fnv1.Ready_READY_FALSE},
				},
				status: obj(t, fipStatus(true)+"gateway: {name: branch-vpn-7xk2p-g1}"),
			},
		},
		"GatewayWarnings": {
			reason: "The Gateway's advisories (status.atProvider.warnings) reach the composite's, and so the claim's, status.gateway.warnings, and each that the composite does not hold yet is a warning to the composite and the claim (their events).",
			xr:     xrNAT,
			observed: map[string]string{
				"port":        "{apiVersion: networking.ipsecgw.io/v1alpha1, kind: Port, metadata: {name: p}}",
				"floating-ip": observedBinding(true),
				"gateway":     "{apiVersion: gateway.ipsecgw.io/v1alpha1, kind: Gateway, metadata: {name: branch-vpn-7xk2p-g1}, spec: {forProvider: {endpoint: {privateAddress: 10.20.0.10, prefixLength: 24, gateway: 10.20.0.1, macAddress: 'fa:16:3e:12:34:56', localId: 203.0.113.10}}}, status: {atProvider: {warnings: ['tunnels[branch-a].ikeVersion: IKEv1 is deprecated']}}}",
			},
			want: want{
				names: []string{"floating-ip", "gateway", "node-address-pairs", "port", "security-group"},
				status: obj(t, `
floatingIP:
  address: 203.0.113.10
  attached: true
  conditions: [{type: Ready, status: "True", reason: Available, lastTransitionTime: "2026-11-29T10:00:06Z"}]
gateway: {name: branch-vpn-7xk2p-g1, warnings: ['tunnels[branch-a].ikeVersion: IKEv1 is deprecated']}
`),
				results: []string{"SEVERITY_WARNING TARGET_COMPOSITE_AND_CLAIM: the Gateway's configuration is accepted but advised against: tunnels[branch-a].ikeVersion: IKEv1 is deprecated"},
			},
		},
		"GatewayWarningsHeld": {
			reason: "An advisory the composite already holds (status.gateway.warnings, rolled up by the run before) is no warning again: one event when it appears, not one per reconcile of the composite.",
			xr:     xrNAT + "status: {gateway: {warnings: ['tunnels[branch-a].ikeVersion: IKEv1 is deprecated']}}\n",
			observed: map[string]string{
				"port":        "{apiVersion: networking.ipsecgw.io/v1alpha1, kind: Port, metadata: {name: p}}",
				"floating-ip": observedBinding(true),
				"gateway":     "{apiVersion: gateway.ipsecgw.io/v1alpha1, kind: Gateway, metadata: {name: branch-vpn-7xk2p-g1}, spec: {forProvider: {endpoint: {privateAddress: 10.20.0.10, prefixLength: 24, gateway: 10.20.0.1, macAddress: 'fa:16:3e:12:34:56', localId: 203.0.113.10}}}, status: {atProvider: {warnings: ['tunnels[branch-a].ikeVersion: IKEv1 is deprecated', 'tunnels[branch-a].espProposals: modp1024 is weak']}}}",
			},
			want: want{
				names:   []string{"floating-ip", "gateway", "node-address-pairs", "port", "security-group"},
				results: []string{"SEVERITY_WARNING TARGET_COMPOSITE_AND_CLAIM: the Gateway's configuration is accepted but advised against: tunnels[branch-a].espProposals: modp1024 is weak"},
			},
		},
		"TwentySubnetsRouted": {
			reason: "Mode routed with 20 tenant and 20 client subnets: 22 security group rules, 20 allowed address pairs, 20 extra routes, the 20 client subnets as CIDRs of the node address pairs, and the allocated binding is released with the composite (deletionPolicy Delete).",
			xr:     xr20,
			want: want{
				names: []string{"floating-ip", "node-address-pairs", "port", "routes", "security-group"},
				resources: map[string]got{
					"security-group":     {Object: obj(t, sg20), Ready: fnv1.Ready_READY_FALSE},
					"routes":             {Object: obj(t, routes20), Ready: fnv1.Ready_READY_FALSE},
					"node-address-pairs": {Object: obj(t, pairs20), Ready: fnv1.Ready_READY_FALSE},
					"floating-ip": {Object: obj(t, `
apiVersion: networking.ipsecgw.io/v1alpha1
kind: FloatingIPBinding
spec:
  providerConfigRef: {name: default}
  deletionPolicy: Delete
  forProvider: {description: IPsec gateway (provider-ipsec), floatingNetworkId: ext-1, portIdSelector: {matchControllerRef: true}}
`), Ready: fnv1.Ready_READY_FALSE},
				},
			},
		},
		"PortCreating": {
			reason: "A port that Neutron has not made yet (no fixed IP, not Ready) is waited for in silence: no Gateway, no result.",
			xr:     xrNAT,
			observed: map[string]string{
				"port":        "{apiVersion: networking.ipsecgw.io/v1alpha1, kind: Port, metadata: {name: branch-vpn-7xk2p-p9d2x}}",
				"floating-ip": observedBinding(false),
			},
			want: want{
				names: []string{"floating-ip", "node-address-pairs", "port", "security-group"},
			},
		},
		"SubnetWithoutGatewayIP": {
			reason: "A Ready port on a subnet without a gateway IP will never give the Gateway its default route: no Gateway, and a warning to the composite and the claim naming the port, the field and the fix.",
			xr:     xrNAT,
			observed: map[string]string{
				"port":        readyPort("{subnetId: s-1, ipAddress: 10.20.0.10, subnetCidr: 10.20.0.0/24}"),
				"floating-ip": observedBinding(false),
			},
			want: want{
				names:   []string{"floating-ip", "node-address-pairs", "port", "security-group"},
				results: []string{"SEVERITY_WARNING TARGET_COMPOSITE_AND_CLAIM: cannot compose the Gateway: port branch-vpn-7xk2p-p9d2x reports no gateway IP (status.atProvider.fixedIps[0].gatewayIp): give subnet s-1 a gateway_ip"},
			},
		},
		"PortWithoutSubnetCIDR": {
			reason: "A Ready port that reports no IPv4 subnet CIDR gives the Gateway no prefix length: no Gateway, and a warning naming the port, the field and the subnet.",
			xr:     xrNAT,
			observed: map[string]string{
				"port":        readyPort("{subnetId: s-1, ipAddress: 10.20.0.10, gatewayIp: 10.20.0.1}"),
				"floating-ip": observedBinding(false),
			},
			want: want{
				names:   []string{"floating-ip", "node-address-pairs", "port", "security-group"},
				results: []string{"SEVERITY_WARNING TARGET_COMPOSITE_AND_CLAIM: cannot compose the Gateway: port branch-vpn-7xk2p-p9d2x reports no IPv4 subnet CIDR (status.atProvider.fixedIps[0].subnetCidr): put network.fixedIP on an IPv4 subnet (subnet s-1)"},
			},
		},
		"CompositeWithoutClaim": {
			reason: "An XIPsecGateway made directly has no claim namespace to run the Gateway in: its Neutron objects are composed (named after it), the Gateway is not, and a warning says to use a claim.",
			xr:     natXR("", pinnedEndpoint),
			observed: map[string]string{
				"port":        observedPort,
				"floating-ip": observedBinding(true),
			},
			want: want{
				names:   []string{"floating-ip", "node-address-pairs", "port", "security-group"},
				results: []string{"SEVERITY_WARNING TARGET_COMPOSITE_AND_CLAIM: cannot compose the Gateway: XIPsecGateway branch-vpn-7xk2p has no claim (spec.claimRef): create it through an IPsecGateway claim"},
				resources: map[string]got{
					"port": {Object: withExternalName(t, strings.Replace(wantPort, "ipsecgw-tenant-a-branch-vpn", "ipsecgw-branch-vpn-7xk2p", 1), "p-1"), Ready: fnv1.Ready_READY_TRUE},
				},
			},
		},
		"AllocatedLocalIDFromNeutron": {
			reason: "With an allocated floating IP (no address in the binding's spec) the Gateway's local identity is the address Neutron reports for the binding.",
			xr:     natXR(claimA, "{floatingNetworkId: ext-1, ikeSourcePrefix: 0.0.0.0/0}"),
			observed: map[string]string{
				"port": observedPort,
				"floating-ip": `
apiVersion: networking.ipsecgw.io/v1alpha1
kind: FloatingIPBinding
metadata: {name: branch-vpn-7xk2p-f8s1q}
spec: {forProvider: {floatingNetworkId: ext-1}}
status:
  atProvider: {floatingIpAddress: 203.0.113.77, attached: true}
  conditions: ` + readyCondition(true),
			},
			want: want{
				names: []string{"floating-ip", "gateway", "node-address-pairs", "port", "security-group"},
				resources: map[string]got{
					"gateway": {Object: obj(t, wantGateway(true, "203.0.113.77")), Ready: fnv1.Ready_READY_FALSE},
				},
			},
		},
		"AllReady": {
			reason: "Once every composed resource, the Gateway last, reports Ready, every desired resource is READY_TRUE, from which Crossplane makes the composite (and the claim) Ready.",
			xr:     xrNAT,
			observed: map[string]string{
				"security-group":     "{apiVersion: networking.ipsecgw.io/v1alpha1, kind: SecurityGroup, metadata: {name: branch-vpn-7xk2p-s4k1m, annotations: {crossplane.io/external-name: sg-1}}, status: {atProvider: {id: sg-1}, conditions: " + readyCondition(true) + "}}",
				"port":               observedPort,
				"floating-ip":        observedBinding(true),
				"node-address-pairs": observedPairs(true, 2, ""),
				"gateway":            "{apiVersion: gateway.ipsecgw.io/v1alpha1, kind: Gateway, metadata: {name: branch-vpn-7xk2p-g1}, status: {atProvider: {tunnelsUp: 1}, conditions: " + readyCondition(true) + "}}",
			},
			want: want{
				names: []string{"floating-ip", "gateway", "node-address-pairs", "port", "security-group"},
				resources: map[string]got{
					"security-group":     {Object: withExternalName(t, wantSG, "sg-1"), Ready: fnv1.Ready_READY_TRUE},
					"port":               {Object: withExternalName(t, wantPort, "p-1"), Ready: fnv1.Ready_READY_TRUE},
					"floating-ip":        {Object: obj(t, wantPinnedFIP), Ready: fnv1.Ready_READY_TRUE},
					"node-address-pairs": {Object: obj(t, wantPairs), Ready: fnv1.Ready_READY_TRUE},
					"gateway":            {Object: obj(t, wantGateway(true, "203.0.113.10")), Ready: fnv1.Ready_READY_TRUE},
				},
			},
		},
		"PairsNotInPlace": {
			reason: "While a node's port lacks the pairs, the NodeAddressPairs is READY_FALSE (so Crossplane keeps the composite and the claim un-Ready) though everything else is Ready, and the claim's status.nodePorts step says why; the Gateway still runs (active), as the floating IP is attached.",
			xr:     xrNAT,
			observed: map[string]string{
				"port":               observedPort,
				"floating-ip":        observedBinding(true),
				"node-address-pairs": observedPairs(false, 1, unmappedNode),
				"gateway":            "{apiVersion: gateway.ipsecgw.io/v1alpha1, kind: Gateway, metadata: {name: branch-vpn-7xk2p-g1}, status: {conditions: " + readyCondition(true) + "}}",
			},
			want: want{
				names: []string{"floating-ip", "gateway", "node-address-pairs", "port", "security-group"},
				resources: map[string]got{
					"node-address-pairs": {Object: obj(t, wantPairs), Ready: fnv1.Ready_READY_FALSE},
					"gateway":            {Object: obj(t, wantGateway(true, "203.0.113.10")), Ready: fnv1.Ready_READY_TRUE},
				},
				status: obj(t, fipStatus(true)+portStatus+`
nodePorts:
  nodes: 1
  conditions: [{type: Ready, status: "False", reason: Available, message: '`+unmappedNode+`', lastTransitionTime: "2026-11-29T10:00:07Z"}]
gateway:
  name: branch-vpn-7xk2p-g1
  conditions: [{type: Ready, status: "True", reason: Available, lastTransitionTime: "2026-11-29T10:00:06Z"}]
`),
			},
		},
		"NodeSelector": {
			reason: "spec.nodeSelector is the Gateway pod's nodeSelector and the NodeAddressPairs' node selector: the pairs go to exactly the nodes the pod may run on.",
			xr:     strings.Replace(xrNAT, "  providerConfigName: default\n", "  providerConfigName: default\n  nodeSelector: {node-role.kubernetes.io/vpn-gateway: \"\", topology.kubernetes.io/zone: az-1}\n", 1),
			observed: map[string]string{
				"port":        observedPort,
				"floating-ip": observedBinding(true),
			},
			want: want{
				names: []string{"floating-ip", "gateway", "node-address-pairs", "port", "security-group"},
				resources: map[string]got{
					"node-address-pairs": {Object: withForProvider(t, wantPairs, "nodeSelector", gatewayNodes), Ready: fnv1.Ready_READY_FALSE},
					"gateway":            {Object: withForProvider(t, wantGateway(true, "203.0.113.10"), "nodeSelector", gatewayNodes), Ready: fnv1.Ready_READY_FALSE},
				},
			},
		},
		"NodePortsUnmanaged": {
			reason: "With spec.nodePorts Unmanaged no NodeAddressPairs is composed (one composed before is then deleted by Crossplane, and its Delete removes its pairs); the rest is as with AddressPairs.",
			xr:     strings.Replace(xrNAT, "  providerConfigName: default\n", "  providerConfigName: default\n  nodePorts: Unmanaged\n", 1),
			observed: map[string]string{
				"port":               observedPort,
				"floating-ip":        observedBinding(true),
				"node-address-pairs": observedPairs(true, 2, ""),
			},
			want: want{
				names: []string{"floating-ip", "gateway", "port", "security-group"},
				resources: map[string]got{
					"gateway": {Object: obj(t, wantGateway(true, "203.0.113.10")), Ready: fnv1.Ready_READY_FALSE},
				},
			},
		},
		"NotAComposite": {
			reason: "A composite whose spec does not decode is a fatal result naming the step.",
			xr:     "{apiVersion: vpn.ipsecgw.io/v1alpha1, kind: XIPsecGateway, metadata: {name: x}, spec: {tenantSubnets: 7}}",
			want: want{
				names:   []string{},
				results: []string{"SEVERITY_FATAL TARGET_UNSPECIFIED: " + errDecodeXR + ": "},
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			rsp := run(t, tc.xr, tc.observed)
			if diff := cmp.Diff(tc.want.results, resultStrings(rsp, tc.want.results)); diff != "" {
				t.Errorf("%s\nresults: -want +got:\n%s", tc.reason, diff)
			}
			if tc.want.stepsReady != "" {
				if diff := cmp.Diff(tc.want.stepsReady, conditionString(rsp)); diff != "" {
					t.Errorf("%s\ncondition StepsReady: -want +got:\n%s", tc.reason, diff)
				}
			}
			if diff := cmp.Diff(tc.want.compositeReady, rsp.GetDesired().GetComposite().GetReady()); diff != "" {
				t.Errorf("%s\ndesired composite's readiness: -want +got:\n%s", tc.reason, diff)
			}
			names := []string{}
			for n := range rsp.GetDesired().GetResources() {
				names = append(names, n)
			}
			slices.Sort(names)
			if diff := cmp.Diff(tc.want.names, names); diff != "" {
				t.Errorf("%s\ndesired resources: -want +got:\n%s", tc.reason, diff)
			}
			for n, w := range tc.want.resources {
				r := rsp.GetDesired().GetResources()[n]
				g := got{Object: r.GetResource().AsMap(), Ready: r.GetReady()}
				if diff := cmp.Diff(w, g); diff != "" {
					t.Errorf("%s\ndesired %s: -want +got:\n%s", tc.reason, n, diff)
				}
			}
			if tc.want.status != nil {
				st, _ := rsp.GetDesired().GetComposite().GetResource().AsMap()["status"].(map[string]any)
				if st == nil {
					st = map[string]any{}
				}
				if diff := cmp.Diff(tc.want.status, st); diff != "" {
					t.Errorf("%s\ndesired composite status: -want +got:\n%s", tc.reason, diff)
				}
			}
		})
	}
}

// TestSpecMatchesXRD proves the Go types name exactly the fields of the
// generated XRD's spec (and of its endpoint, network and routed), so that
// the function never silently ignores a field the XRD admits, nor reads
// one it does not.
func TestSpecMatchesXRD(t *testing.T) {
	sp := xrdSpec(t)
	cases := map[string]struct {
		reason string
		schema map[string]any
		typ    reflect.Type
		// extra are the fields the Go type has beside the schema's.
		extra []string
	}{
		"spec": {
			reason: "XIPsecGatewaySpec names every field of the XRD's spec and, beside them, only the claimRef Crossplane adds to a claim's composite.",
			schema: sp,
			typ:    reflect.TypeFor[XIPsecGatewaySpec](),
			extra:  []string{"claimRef"},
		},
		"endpoint": {
			reason: "Endpoint names exactly the fields of spec.endpoint.",
			schema: dig(sp, "properties", "endpoint").(map[string]any),
			typ:    reflect.TypeFor[Endpoint](),
		},
		"network": {
			reason: "Network names exactly the fields of spec.network.",
			schema: dig(sp, "properties", "network").(map[string]any),
			typ:    reflect.TypeFor[Network](),
		},
		"routed": {
			reason: "Routed names exactly the fields of spec.routed.",
			schema: dig(sp, "properties", "routed").(map[string]any),
			typ:    reflect.TypeFor[Routed](),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			want := slices.Clone(tc.extra)
			for k := range tc.schema["properties"].(map[string]any) {
				want = append(want, k)
			}
			slices.Sort(want)
			var got []string
			for f := range tc.typ.Fields() {
				n, _, _ := strings.Cut(f.Tag.Get("json"), ",")
				got = append(got, n)
			}
			slices.Sort(got)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("%s\nthe XRD's fields (and the extra ones) -want, the Go type's +got:\n%s", tc.reason, diff)
			}
		})
	}
}

// TestNodePortsMatchXRD proves the values the function tells apart are the
// XRD's enum of spec.nodePorts, AddressPairs its default: a value spelled
// differently in one of them would compose pairs a claim turned off.
func TestNodePortsMatchXRD(t *testing.T) {
	np := dig(xrdSpec(t), "properties", "nodePorts").(map[string]any)
	want := map[string]any{"enum": []any{string(NodePortsAddressPairs), string(NodePortsUnmanaged)}, "default": string(NodePortsAddressPairs)}
	got := map[string]any{"enum": np["enum"], "default": np["default"]}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("spec.nodePorts in the XRD: -want (the function's values) +got:\n%s", diff)
	}
}

// xrdSpec is the schema of the generated XRD's spec.
func xrdSpec(t *testing.T) map[string]any {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "package", "configuration", "zz_generated_definition.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	xrd := map[string]any{}
	if err := yaml.Unmarshal(b, &xrd); err != nil {
		t.Fatal(err)
	}
	v := dig(xrd, "spec", "versions").([]any)[0]
	return dig(v.(map[string]any), "schema", "openAPIV3Schema", "properties", "spec").(map[string]any)
}

// dig walks m by keys.
func dig(m map[string]any, keys ...string) any {
	var v any = m
	for _, k := range keys {
		v = v.(map[string]any)[k]
	}
	return v
}

// TestHideNATPairs proves that the remote subnets of the tunnels' hide NAT
// rules become, in mode nat, allowed address pairs of the gateway's port
// and CIDRs of the node address pairs (the replies reach tenant hosts from
// client addresses), each once, and nothing in mode routed.
func TestHideNATPairs(t *testing.T) {
	rule := func(remotes ...gwv1alpha1.CIDR) gwv1alpha1.HideNAT {
		return gwv1alpha1.HideNAT{Name: "r", TenantSubnets: []gwv1alpha1.CIDR{"10.20.0.0/24"}, RemoteSubnets: remotes, PresentedAddress: ptr.To[gwv1alpha1.IPv4]("100.64.0.20")}
	}
	cases := map[string]struct {
		reason string
		spec   XIPsecGatewaySpec
		want   []string
	}{
		"NoHideNAT": {
			reason: "Mode nat without hide NAT has no pairs beyond the port's own address.",
			spec:   XIPsecGatewaySpec{Mode: gwv1alpha1.ModeNAT, Tunnels: []gwv1alpha1.Tunnel{{Name: "a"}}},
		},
		"EachOnce": {
			reason: "Remote subnets of several rules and tunnels are listed once each, in spec order.",
			spec: XIPsecGatewaySpec{Mode: gwv1alpha1.ModeNAT, Tunnels: []gwv1alpha1.Tunnel{
				{Name: "a", HideNAT: []gwv1alpha1.HideNAT{rule("192.168.10.0/24", "192.168.11.0/24"), rule("192.168.10.0/24")}},
				{Name: "b", HideNAT: []gwv1alpha1.HideNAT{rule("172.16.0.0/16")}},
			}},
			want: []string{"192.168.10.0/24", "192.168.11.0/24", "172.16.0.0/16"},
		},
		"ModeLeftOut": {
			reason: "mode left out is nat.",
			spec:   XIPsecGatewaySpec{Tunnels: []gwv1alpha1.Tunnel{{Name: "a", HideNAT: []gwv1alpha1.HideNAT{rule("192.168.10.0/24")}}}},
			want:   []string{"192.168.10.0/24"},
		},
		"Routed": {
			reason: "In mode routed (which admission refuses hide NAT in) only the client subnets are pairs.",
			spec: XIPsecGatewaySpec{Mode: gwv1alpha1.ModeRouted, Routed: &Routed{ClientSubnets: []string{"192.168.20.0/24"}},
				Tunnels: []gwv1alpha1.Tunnel{{Name: "a", HideNAT: []gwv1alpha1.HideNAT{rule("192.168.10.0/24")}}}},
			want: []string{"192.168.20.0/24"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var pairs, cidrs []string
			for _, p := range port(tc.spec, "gw", nil).Spec.ForProvider.AllowedAddressPairs {
				pairs = append(pairs, p.IPAddress)
			}
			for _, c := range nodePairs(tc.spec, nil).Spec.ForProvider.CIDRs {
				cidrs = append(cidrs, string(c))
			}
			if diff := cmp.Diff(tc.want, pairs); diff != "" {
				t.Errorf("%s\nport's allowed address pairs: -want, +got:\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(tc.want, cidrs); diff != "" {
				t.Errorf("%s\nnode address pairs' CIDRs: -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}
