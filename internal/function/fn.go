// Package function is the IPsecGateway's composition function: it reads the
// typed XIPsecGateway and composes, in the order of the VM-to-operator
// migration runbook, a SecurityGroup, a Port, a FloatingIPBinding, in mode
// routed a RouterRoutes, a NodeAddressPairs (the gateway's address on the
// nodes' Neutron ports) and the Gateway, and rolls each one's state up to
// the composite's status (the claim's steps).
//
// The managed resources find each other by controller reference
// (securityGroupIdSelector, portIdSelector, nexthopPortSelector with
// matchControllerRef), so nothing is ordered here: each waits for the one it
// references. The NodeAddressPairs reads the gateway port's fixed IP and MAC
// from Neutron through its reference, so it is composed from the first run.
// What the Gateway needs from the port and the binding (its address, MAC,
// subnet, the floating IP and whether it is attached) is read
// from the observed resources of the same run, not from the composite's
// status, which would lag one composite reconcile behind: after a cutover
// the Deployment scales up in the run that sees the binding attached.
package function

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/fieldpath"
	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
	"github.com/crossplane/function-sdk-go/logging"
	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/structpb"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	"github.com/ipsecgw/provider-ipsec/apis"
	gwv1alpha1 "github.com/ipsecgw/provider-ipsec/apis/cluster/gateway/v1alpha1"
	nv1alpha1 "github.com/ipsecgw/provider-ipsec/apis/cluster/networking/v1alpha1"
)

// The composed resources' names in the pipeline (the
// crossplane.io/composition-resource-name annotation), as the
// patch-and-transform Composition named them, so that existing composites
// keep their resources.
const (
	SecurityGroupName = "security-group"
	PortName          = "port"
	FloatingIPName    = "floating-ip"
	RoutesName        = "routes"
	NodePairsName     = "node-address-pairs"
	GatewayName       = "gateway"
)

// description is what every Neutron object the function composes says it is.
const description = "IPsec gateway (provider-ipsec)"

// ttl is how long Crossplane may cache a response of the function.
const ttl = time.Minute

const (
	errDecodeXR       = "cannot decode the composite resource"
	errCompose        = "cannot compose"
	errComposeGateway = "cannot compose the Gateway"
	errStatus         = "cannot set the composite resource's status"
	errSetDesired     = "cannot set the desired state"
	errProviderConfig = "cannot use the ProviderConfig"
)

// advisory starts the warning result of each new advisory of the Gateway
// (its status.atProvider.warnings), so that the claim's events say it when
// it appears, beside its status.gateway.warnings.
const advisory = "the Gateway's configuration is accepted but advised against"

// Why the Gateway cannot be composed, when waiting will not fix it (the
// warnings of a run, after errComposeGateway).
const (
	warnNoClaim      = "XIPsecGateway %s has no claim (spec.claimRef): create it through an IPsecGateway claim"
	warnNoGatewayIP  = "port %s reports no gateway IP (status.atProvider.fixedIps[0].gatewayIp): give subnet %s a gateway_ip"
	warnNoSubnetCIDR = "port %s reports no IPv4 subnet CIDR (status.atProvider.fixedIps[0].subnetCidr): put network.fixedIP on an IPv4 subnet (subnet %s)"
)

// scheme knows the kinds of the provider's managed resources.
var scheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	if err := apis.AddToScheme(s); err != nil {
		panic(err)
	}
	return s
}()

// Observed are the observed composed resources by name.
type Observed map[string]*fieldpath.Paved

// Function composes XIPsecGateways.
type Function struct {
	fnv1.UnimplementedFunctionRunnerServiceServer

	log logging.Logger
}

// New returns a Function that logs to log.
func New(log logging.Logger) *Function { return &Function{log: log} }

// RunFunction composes the observed XIPsecGateway of req onto the desired
// state of the steps before it. A composite it cannot read, a composed
// resource it cannot convert and a status it cannot set are fatal results
// (Crossplane then changes nothing). A resource that waits for another is
// simply not composed yet, without a result; a Gateway that cannot be
// composed until someone acts (a subnet without a gateway IP, a composite
// without a claim) is a warning, to the composite and its claim, naming the
// resource, the field and the fix. So is each new advisory the observed
// Gateway reports (status.atProvider.warnings). The ProviderConfig of every
// composed resource is the one the platform pins to the claim's namespace
// (pinProviderConfig; a refused one is fatal), and condition StepsReady on
// the composite and its claim says the first failing step. The composite
// records the external names (Neutron IDs) of its security group, port and
// floating IP, and one of them composed anew gets the recorded one, so that
// it adopts its predecessor's Neutron object; a managed resource being
// deleted while its composite is not is orphaned (adopt.go).
func (f *Function) RunFunction(_ context.Context, req *fnv1.RunFunctionRequest) (*fnv1.RunFunctionResponse, error) {
	rsp := &fnv1.RunFunctionResponse{
		Meta:    &fnv1.ResponseMeta{Tag: req.GetMeta().GetTag(), Ttl: durationpb.New(ttl)},
		Desired: req.GetDesired(),
		Context: req.GetContext(),
	}
	if rsp.Desired == nil {
		rsp.Desired = &fnv1.State{}
	}
	if rsp.Desired.Resources == nil {
		rsp.Desired.Resources = map[string]*fnv1.Resource{}
	}
	if rsp.Desired.Composite == nil {
		rsp.Desired.Composite = &fnv1.Resource{}
	}

	oxr := req.GetObserved().GetComposite().GetResource().AsMap()
	xr, nsPC, err := decode(oxr)
	if err != nil {
		return fatal(rsp, err), nil
	}
	observed := Observed{}
	for n, r := range req.GetObserved().GetResources() {
		observed[n] = fieldpath.Pave(r.GetResource().AsMap())
	}

	// A namespaced XR's managed resources take its spec.providerConfigRef,
	// confined to its namespace by the provider (ResolveConfig); only the
	// legacy claim's ProviderConfig is pinned by the platform.
	if nsPC == nil && !pinProviderConfig(req, rsp, xr, observed) {
		return rsp, nil
	}

	objs, warnings := Compose(xr, observed)
	for _, w := range warnings {
		rsp.Results = append(rsp.Results, &fnv1.Result{
			Severity: fnv1.Severity_SEVERITY_WARNING,
			Message:  errComposeGateway + ": " + w,
			Target:   fnv1.Target_TARGET_COMPOSITE_AND_CLAIM.Enum(),
		})
	}
	pxr := fieldpath.Pave(oxr)
	rsp.Results = append(rsp.Results, advisories(pxr, observed)...)
	st, reason, msg := stepsReady(objs, observed, warnings)
	setStepsReady(rsp, st, reason, msg)
	pinned := xr.Spec.Endpoint.FloatingIP != ""
	for name, o := range objs {
		md := composedMeta{
			Labels:       xr.Metadata.Labels,
			ExternalName: externalName(name, observed[name], pxr, pinned),
			Orphan:       orphaned(observed[name], pxr),
		}
		r, err := desiredResource(o, nsPC, md, observed[name])
		if err != nil {
			return fatal(rsp, errors.Wrapf(err, "%s %s", errCompose, name)), nil
		}
		rsp.Desired.Resources[name] = r
	}

	dxr := rsp.Desired.Composite.GetResource().AsMap()
	p := fieldpath.Pave(dxr)
	fields := Status(observed)
	maps.Copy(fields, record(pxr, observed))
	for path, v := range fields {
		if err := p.SetValue(path, v); err != nil {
			return fatal(rsp, errors.Wrapf(err, "%s: %s", errStatus, path)), nil
		}
	}
	s, err := structpb.NewStruct(dxr)
	if err != nil {
		return fatal(rsp, errors.Wrap(err, errSetDesired)), nil
	}
	rsp.Desired.Composite.Resource = s
	f.log.Debug("Composed", "composite", xr.Metadata.Name, "resources", len(objs))
	return rsp, nil
}

// fatal adds err as a fatal result to rsp: Crossplane changes nothing.
func fatal(rsp *fnv1.RunFunctionResponse, err error) *fnv1.RunFunctionResponse {
	rsp.Results = append(rsp.Results, &fnv1.Result{Severity: fnv1.Severity_SEVERITY_FATAL, Message: err.Error()})
	return rsp
}

// Compose returns the managed resources of xr by name: SecurityGroup, Port
// and FloatingIPBinding always, RouterRoutes in mode routed, NodeAddressPairs
// unless spec.nodePorts is Unmanaged, and the Gateway once the port's
// address and the floating IP are known (observed, or already in the Gateway
// composed before). The warnings say why the Gateway cannot be composed when
// that needs a fix rather than time.
func Compose(xr *XIPsecGateway, observed Observed) (map[string]runtime.Object, []string) {
	s := xr.Spec
	pc := &xpv2.Reference{Name: s.ProviderConfigName}
	if s.ProviderConfigName == "" {
		pc = nil
	}
	name := neutronName(xr)
	objs := map[string]runtime.Object{
		SecurityGroupName: securityGroup(s, name, pc),
		PortName:          port(s, name, pc),
		FloatingIPName:    floatingIP(s, pc),
	}
	if s.Mode == gwv1alpha1.ModeRouted && s.Routed != nil {
		objs[RoutesName] = routes(s.Routed, pc)
	}
	if s.NodePorts != NodePortsUnmanaged {
		objs[NodePairsName] = nodePairs(s, pc)
	}
	gw, warnings := gateway(xr, pc, observed)
	if gw != nil {
		objs[GatewayName] = gw
	}
	return objs, warnings
}

// neutronName names the composite's Neutron objects after its claim, so
// that an operator finds them in Neutron: ipsecgw-<namespace>-<name>; a
// composite without a claim after itself.
func neutronName(xr *XIPsecGateway) string {
	if c := xr.owner(); c != nil {
		return fmt.Sprintf("ipsecgw-%s-%s", c.Namespace, c.Name)
	}
	return "ipsecgw-" + xr.Metadata.Name
}

// securityGroup lets IKE and NAT-T in from endpoint.ikeSourcePrefix, and
// everything from each tenant subnet.
func securityGroup(s XIPsecGatewaySpec, name string, pc *xpv2.Reference) *nv1alpha1.SecurityGroup {
	var ike *nv1alpha1.CIDR
	if s.Endpoint.IKESourcePrefix != "" {
		ike = ptr.To(nv1alpha1.CIDR(s.Endpoint.IKESourcePrefix))
	}
	rules := make([]nv1alpha1.SecurityGroupRule, 0, 2+len(s.TenantSubnets))
	rules = append(rules,
		nv1alpha1.SecurityGroupRule{Direction: "ingress", Protocol: ptr.To("udp"), PortRangeMin: ptr.To[int32](500), PortRangeMax: ptr.To[int32](500), RemoteIPPrefix: ike, Description: ptr.To("IKE")},
		nv1alpha1.SecurityGroupRule{Direction: "ingress", Protocol: ptr.To("udp"), PortRangeMin: ptr.To[int32](4500), PortRangeMax: ptr.To[int32](4500), RemoteIPPrefix: ike, Description: ptr.To("IKE and ESP in UDP (NAT-T)")},
	)
	for _, t := range s.TenantSubnets {
		rules = append(rules, nv1alpha1.SecurityGroupRule{Direction: "ingress", RemoteIPPrefix: ptr.To(nv1alpha1.CIDR(t))})
	}
	return &nv1alpha1.SecurityGroup{Spec: nv1alpha1.SecurityGroupSpec{
		ClusterManagedResourceSpec: xpv2.ClusterManagedResourceSpec{ProviderConfigReference: pc},
		ForProvider: nv1alpha1.SecurityGroupParameters{
			Name:        name,
			Description: ptr.To(description),
			Rules:       rules,
		},
	}}
}

// port is the gateway's unbound ("VIP-style") port on the tenant subnet,
// in the composite's security group; in mode routed the client subnets are
// its allowed address pairs, in mode nat the remote subnets of hide NAT.
func port(s XIPsecGatewaySpec, name string, pc *xpv2.Reference) *nv1alpha1.Port {
	fixed := nv1alpha1.FixedIP{SubnetID: ptr.To(nv1alpha1.UUID(s.Network.SubnetID))}
	if s.Network.FixedIP != "" {
		fixed.IPAddress = ptr.To(nv1alpha1.IPAddress(s.Network.FixedIP))
	}
	p := &nv1alpha1.Port{Spec: nv1alpha1.PortSpec{
		ClusterManagedResourceSpec: xpv2.ClusterManagedResourceSpec{ProviderConfigReference: pc},
		ForProvider: nv1alpha1.PortParameters{
			NetworkID:   ptr.To(s.Network.NetworkID),
			Name:        ptr.To(name),
			Description: ptr.To(description),
			// Neutron's default, stated: left unset the provider
			// late-initializes it, and that extra generation of the port
			// costs the composite watch events at creation (its circuit
			// breaker counts them).
			PortSecurityEnabled:     ptr.To(true),
			FixedIPs:                []nv1alpha1.FixedIP{fixed},
			SecurityGroupIDSelector: &xpv2.Selector{MatchControllerRef: ptr.To(true)},
		},
	}}
	if s.Mode == gwv1alpha1.ModeRouted && s.Routed != nil {
		for _, c := range s.Routed.ClientSubnets {
			p.Spec.ForProvider.AllowedAddressPairs = append(p.Spec.ForProvider.AllowedAddressPairs, nv1alpha1.AddressPair{IPAddress: c})
		}
	}
	for _, c := range hiddenRemotes(s) {
		p.Spec.ForProvider.AllowedAddressPairs = append(p.Spec.ForProvider.AllowedAddressPairs, nv1alpha1.AddressPair{IPAddress: c})
	}
	return p
}

// hiddenRemotes are, in mode nat, the remote subnets of the tunnels' hide
// NAT rules, each once, in the spec's order: the replies of a hide NAT's
// connections reach a tenant host on the tenant network from the client
// host's own address, which port security lets out of the gateway's port
// (and the nodes' ports) only as an allowed address pair, as mode routed's
// client subnets.
func hiddenRemotes(s XIPsecGatewaySpec) []string {
	if s.Mode == gwv1alpha1.ModeRouted {
		return nil
	}
	var out []string
	for _, t := range s.Tunnels {
		for _, h := range t.HideNAT {
			for _, r := range h.RemoteSubnets {
				if !slices.Contains(out, string(r)) {
					out = append(out, string(r))
				}
			}
		}
	}
	return out
}

// floatingIP is the floating IP on the port. Pinned (endpoint.floatingIP):
// the customer's address, attached once no other port holds it, never
// released (deletionPolicy Orphan; the provider would only disassociate it
// anyway). Allocated (endpoint.floatingNetworkId): released with the
// composite.
func floatingIP(s XIPsecGatewaySpec, pc *xpv2.Reference) *nv1alpha1.FloatingIPBinding {
	b := &nv1alpha1.FloatingIPBinding{Spec: nv1alpha1.FloatingIPBindingSpec{
		ClusterManagedResourceSpec: xpv2.ClusterManagedResourceSpec{ProviderConfigReference: pc, DeletionPolicy: xpv2.DeletionDelete},
		ForProvider: nv1alpha1.FloatingIPBindingParameters{
			Description:    ptr.To(description),
			PortIDSelector: &xpv2.Selector{MatchControllerRef: ptr.To(true)},
		},
	}}
	if s.Endpoint.FloatingIP != "" {
		b.Spec.DeletionPolicy = xpv2.DeletionOrphan
		b.Spec.ForProvider.FloatingIPAddress = ptr.To(nv1alpha1.IPAddress(s.Endpoint.FloatingIP))
	}
	if s.Endpoint.FloatingNetworkID != "" {
		b.Spec.ForProvider.FloatingNetworkID = ptr.To(nv1alpha1.UUID(s.Endpoint.FloatingNetworkID))
	}
	return b
}

// routes is mode routed's extra route per client subnet on the tenant's
// router, nexthop the port's fixed IP.
func routes(r *Routed, pc *xpv2.Reference) *nv1alpha1.RouterRoutes {
	rr := &nv1alpha1.RouterRoutes{Spec: nv1alpha1.RouterRoutesSpec{
		ClusterManagedResourceSpec: xpv2.ClusterManagedResourceSpec{ProviderConfigReference: pc},
		ForProvider: nv1alpha1.RouterRoutesParameters{
			RouterID:            nv1alpha1.UUID(r.RouterID),
			NexthopPortSelector: &xpv2.Selector{MatchControllerRef: ptr.To(true)},
			Routes:              make([]nv1alpha1.Route, 0, len(r.ClientSubnets)),
		},
	}}
	for _, c := range r.ClientSubnets {
		rr.Spec.ForProvider.Routes = append(rr.Spec.ForProvider.Routes, nv1alpha1.Route{Destination: nv1alpha1.CIDR(c)})
	}
	return rr
}

// nodePairs keeps the gateway's address on the Neutron ports of the nodes
// its pod may run on (spec.nodeSelector, the Gateway's too), so that a cloud with
// port security on lets the pod's frames out: the controller takes the
// fixed IP and MAC from the Port it selects (the composite's, by controller
// reference) and, in mode routed, adds the client subnets with that MAC (in
// mode nat the remote subnets of hide NAT).
// Removed with the composite, it removes the pairs it added and only those.
func nodePairs(s XIPsecGatewaySpec, pc *xpv2.Reference) *nv1alpha1.NodeAddressPairs {
	np := &nv1alpha1.NodeAddressPairs{Spec: nv1alpha1.NodeAddressPairsSpec{
		ClusterManagedResourceSpec: xpv2.ClusterManagedResourceSpec{ProviderConfigReference: pc},
		ForProvider: nv1alpha1.NodeAddressPairsParameters{
			PortIDSelector: &xpv2.Selector{MatchControllerRef: ptr.To(true)},
			NodeSelector:   s.NodeSelector,
		},
	}}
	if s.Mode == gwv1alpha1.ModeRouted && s.Routed != nil {
		for _, c := range s.Routed.ClientSubnets {
			np.Spec.ForProvider.CIDRs = append(np.Spec.ForProvider.CIDRs, nv1alpha1.CIDR(c))
		}
	}
	for _, c := range hiddenRemotes(s) {
		np.Spec.ForProvider.CIDRs = append(np.Spec.ForProvider.CIDRs, nv1alpha1.CIDR(c))
	}
	return np
}

// gateway is the strongSwan gateway in the claim's namespace. It needs the
// port's address, MAC, gateway and prefix length, and the floating IP (its
// local identity): with a pinned floating IP that is the spec's, so the
// configuration renders at the runbook's pre-stage, before the binding is
// attached. It is nil until they are known, unless a Gateway was composed
// before: then what the port or the binding does not report in this run
// (such as while the provider restarts) is kept from it, never dropped,
// which would delete the gateway. It runs (active) only while the floating
// IP is attached. When it is nil because of something that waiting will not
// fix (a Ready port without a gateway IP or subnet CIDR, a composite without
// a claim), the warnings say what and how to fix it.
func gateway(xr *XIPsecGateway, pc *xpv2.Reference, observed Observed) (*gwv1alpha1.Gateway, []string) {
	s := xr.Spec
	p, b := observed[PortName], observed[FloatingIPName]
	ep := gwv1alpha1.Endpoint{
		PrivateAddress: gwv1alpha1.IPv4(str(p, "status.atProvider.fixedIps[0].ipAddress")),
		Gateway:        gwv1alpha1.IPv4(str(p, "status.atProvider.fixedIps[0].gatewayIp")),
		MACAddress:     str(p, "status.atProvider.macAddress"),
		LocalID:        gwv1alpha1.IPv4(floatingAddress(b)),
	}
	if pfx, err := netip.ParsePrefix(str(p, "status.atProvider.fixedIps[0].subnetCidr")); err == nil && pfx.Addr().Is4() {
		ep.PrefixLength = int32(pfx.Bits()) //nolint:gosec // at most 32
	}
	if old := observed[GatewayName]; old != nil {
		prev := gwv1alpha1.Endpoint{}
		_ = old.GetValueInto("spec.forProvider.endpoint", &prev)
		ep = keep(ep, prev)
	}
	if w := blocked(xr, p, ep); len(w) > 0 || ep.PrivateAddress == "" || ep.Gateway == "" || ep.MACAddress == "" || ep.LocalID == "" || ep.PrefixLength == 0 {
		return nil, w
	}
	attached := false
	if b != nil {
		attached, _ = b.GetBool("status.atProvider.attached")
	}
	return &gwv1alpha1.Gateway{Spec: gwv1alpha1.GatewaySpec{
		ClusterManagedResourceSpec: xpv2.ClusterManagedResourceSpec{ProviderConfigReference: pc},
		ForProvider: gwv1alpha1.GatewayParameters{
			Namespace: xr.owner().Namespace, // not nil: blocked checks it
			GatewayConfig: gwv1alpha1.GatewayConfig{
				Active:           ptr.To(attached),
				Replicas:         s.Replicas,
				DataPlane:        s.DataPlane,
				TCPMSS:           s.TCPMSS,
				Endpoint:         ep,
				Tunnels:          s.Tunnels,
				Mode:             s.Mode,
				TenantSubnets:    s.TenantSubnets,
				Exposures:        s.Exposures,
				ReverseExposures: s.ReverseExposures,
				NodeSelector:     s.NodeSelector,
			}},
	}}, nil
}

// blocked says what keeps the Gateway of xr with the endpoint ep from being
// composed that waiting will not fix: a composite without a claim (the
// Gateway runs in the claim's namespace), or a Ready port p whose endpoint
// still lacks the gateway IP or the prefix length. A port not made yet is
// no reason: it is waited for.
func blocked(xr *XIPsecGateway, p *fieldpath.Paved, ep gwv1alpha1.Endpoint) []string {
	var w []string
	if c := xr.owner(); c == nil || c.Namespace == "" {
		w = append(w, fmt.Sprintf(warnNoClaim, xr.Metadata.Name))
	}
	if ready(p) != fnv1.Ready_READY_TRUE {
		return w
	}
	name := str(p, "metadata.name")
	subnet := cmp.Or(str(p, "status.atProvider.fixedIps[0].subnetId"), xr.Spec.Network.SubnetID)
	if ep.Gateway == "" {
		w = append(w, fmt.Sprintf(warnNoGatewayIP, name, subnet))
	}
	if ep.PrefixLength == 0 {
		w = append(w, fmt.Sprintf(warnNoSubnetCIDR, name, subnet))
	}
	return w
}

// keep fills each field of ep that is unknown with prev's.
func keep(ep, prev gwv1alpha1.Endpoint) gwv1alpha1.Endpoint {
	if ep.PrivateAddress == "" {
		ep.PrivateAddress = prev.PrivateAddress
	}
	if ep.Gateway == "" {
		ep.Gateway = prev.Gateway
	}
	if ep.MACAddress == "" {
		ep.MACAddress = prev.MACAddress
	}
	if ep.LocalID == "" {
		ep.LocalID = prev.LocalID
	}
	if ep.PrefixLength == 0 {
		ep.PrefixLength = prev.PrefixLength
	}
	return ep
}

// floatingAddress is the binding's floating IP: the one Neutron reports,
// else the pinned one of its spec (known before it is attached).
func floatingAddress(b *fieldpath.Paved) string {
	if a := str(b, "status.atProvider.floatingIpAddress"); a != "" {
		return a
	}
	return str(b, "spec.forProvider.floatingIpAddress")
}

// A rollUp copies the value at From of a composed resource to the
// composite's status at To, when the resource has one.
type rollUp struct{ From, To string }

// conditions is where a resource's conditions are.
const conditions = "status.conditions"

// rollUps are the runbook's steps on the composite's (and so the claim's)
// status, by composed resource.
var rollUps = map[string][]rollUp{
	// The IDs (status.securityGroup.id, status.port.id,
	// status.floatingIP.id) are the external names the composite records
	// (record).
	SecurityGroupName: {
		{conditions, "status.securityGroup.conditions"},
	},
	PortName: {
		{"status.atProvider.fixedIps[0].ipAddress", "status.port.privateIP"},
		{"status.atProvider.fixedIps[0].subnetCidr", "status.port.subnetCIDR"},
		{"status.atProvider.fixedIps[0].gatewayIp", "status.port.gatewayIP"},
		{"status.atProvider.macAddress", "status.port.macAddress"},
		{conditions, "status.port.conditions"},
	},
	FloatingIPName: {
		{"spec.forProvider.floatingIpAddress", "status.floatingIP.address"},
		// Neutron's word over the spec's, for an allocated one the only.
		{"status.atProvider.floatingIpAddress", "status.floatingIP.address"},
		{"status.atProvider.attached", "status.floatingIP.attached"},
		{conditions, "status.floatingIP.conditions"},
	},
	RoutesName: {
		{conditions, "status.routing.conditions"},
	},
	NodePairsName: {
		{"status.atProvider.nodes", "status.nodePorts.nodes"},
		{conditions, "status.nodePorts.conditions"},
	},
	GatewayName: {
		{"metadata.name", "status.gateway.name"},
		{"status.atProvider.configHash", "status.gateway.configHash"},
		{"status.atProvider.loadedConfigHash", "status.gateway.loadedConfigHash"},
		{"status.atProvider.replicas", "status.gateway.replicas"},
		{"status.atProvider.tunnelsUp", "status.gateway.tunnelsUp"},
		{"status.atProvider.warnings", "status.gateway.warnings"},
		{"status.atProvider.bytesIn", "status.gateway.bytesIn"},
		{"status.atProvider.bytesOut", "status.gateway.bytesOut"},
		{"status.atProvider.leader", "status.gateway.leader"},
		{"status.atProvider.tunnels", "status.tunnels"},
		{conditions, "status.gateway.conditions"},
	},
}

// rollUpOrder is the order in which the roll-ups of a resource apply: a
// later one to the same path wins.
var rollUpOrder = []string{SecurityGroupName, PortName, FloatingIPName, RoutesName, NodePairsName, GatewayName}

// Status returns the composite's status fields by path (such as
// status.port.privateIP): each step's facts and conditions from the
// observed composed resources. A value a resource does not have is left
// out.
func Status(observed Observed) map[string]any {
	out := map[string]any{}
	for _, n := range rollUpOrder {
		o := observed[n]
		if o == nil {
			continue
		}
		for _, r := range rollUps[n] {
			if v, err := o.GetValue(r.From); err == nil && v != nil {
				out[r.To] = v
			}
		}
	}
	return out
}

// ready is a composed resource's readiness: True once it reports Ready.
func ready(o *fieldpath.Paved) fnv1.Ready {
	if o == nil {
		return fnv1.Ready_READY_FALSE
	}
	cs := []xpv2.Condition{}
	if err := o.GetValueInto(conditions, &cs); err != nil {
		return fnv1.Ready_READY_FALSE
	}
	for _, c := range cs {
		if c.Type == xpv2.TypeReady && c.Status == "True" {
			return fnv1.Ready_READY_TRUE
		}
	}
	return fnv1.Ready_READY_FALSE
}

// str is the string at path of o, empty when o or the value is absent.
func str(o *fieldpath.Paved, path string) string {
	if o == nil {
		return ""
	}
	s, _ := o.GetString(path)
	return s
}

// composedMeta is what the function states of a composed resource beside
// what Compose made of it.
type composedMeta struct {
	// Labels are the composite's labels (so that a label edit on the
	// claim, the runbook's `kubectl label ... cutover=$(date +%s)`,
	// reaches every managed resource and a failing step retries at once
	// instead of after its backoff).
	Labels map[string]string
	// ExternalName is its external name, none when empty (externalName).
	ExternalName string
	// Orphan says to leave its external object when it goes: management
	// policies without Delete and, cluster-scoped, deletionPolicy Orphan
	// (orphaned).
	Orphan bool
}

// desiredObject converts a typed managed resource to the object of a
// desired composed resource with md. It states only what the function has an
// opinion on, as server-side apply reads it: no status, no null and no
// empty object (such as the exposures of a composite that has none, or a
// creation timestamp).
func desiredObject(o runtime.Object, md composedMeta) (map[string]any, error) {
	if md.Orphan {
		if mg, ok := o.(interface {
			SetManagementPolicies(xpv2.ManagementPolicies)
		}); ok {
			mg.SetManagementPolicies(orphan)
		}
		if mg, ok := o.(interface{ SetDeletionPolicy(xpv2.DeletionPolicy) }); ok {
			mg.SetDeletionPolicy(xpv2.DeletionOrphan)
		}
	}
	gvks, _, err := scheme.ObjectKinds(o)
	if err != nil {
		return nil, err
	}
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o)
	if err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{Object: m}
	u.SetGroupVersionKind(gvks[0])
	delete(m, "status")
	prune(m)
	if len(md.Labels) > 0 {
		u.SetLabels(md.Labels)
	}
	if md.ExternalName != "" {
		u.SetAnnotations(map[string]string{meta.AnnotationKeyExternalName: md.ExternalName})
	}
	return m, nil
}

// prune removes every null value and every object that is or becomes
// empty from the objects in m, at any depth; lists stay, empty or not.
func prune(m map[string]any) {
	for k, v := range m {
		switch v := v.(type) {
		case nil:
			delete(m, k)
		case map[string]any:
			prune(v)
			if len(v) == 0 {
				delete(m, k)
			}
		case []any:
			for _, e := range v {
				if em, ok := e.(map[string]any); ok {
					prune(em)
				}
			}
		}
	}
}

// convert decodes the object in into the typed out.
func convert(in map[string]any, out any) error {
	b, err := json.Marshal(in)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, out)
}

// desiredResource is the desired resource of composed object o: in the
// composite's scope (nsPC, the namespaced composite's ProviderConfig
// reference; nil for the claim's), with md, ready as its observed state
// says.
func desiredResource(o runtime.Object, nsPC *xpv2.ProviderConfigReference, md composedMeta, observed *fieldpath.Paved) (*fnv1.Resource, error) {
	o, err := inScope(o, nsPC)
	if err != nil {
		return nil, err
	}
	m, err := desiredObject(o, md)
	if err != nil {
		return nil, err
	}
	s, err := structpb.NewStruct(m)
	if err != nil {
		return nil, err
	}
	return &fnv1.Resource{Resource: s, Ready: ready(observed)}, nil
}
