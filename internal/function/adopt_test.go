package function

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/crossplane/crossplane-runtime/v2/pkg/fieldpath"
	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"
	"github.com/google/go-cmp/cmp"
)

// allocatedEndpoint is the endpoint of a composite whose floating IP is
// allocated from a pool.
const allocatedEndpoint = "{floatingNetworkId: ext-1, ikeSourcePrefix: 0.0.0.0/0}"

// withStatus is the composite y with the status st (a YAML flow mapping).
func withStatus(y, st string) string { return y + "status: " + st + "\n" }

// namespaced is the composite y as a namespaced IPsecGateway of tenant-a
// named branch-vpn (no claim).
func namespaced(y string) string {
	y = strings.Replace(y, "apiVersion: vpn.ipsecgw.io/v1alpha1\nkind: XIPsecGateway\nmetadata:\n  name: branch-vpn-7xk2p\n",
		"apiVersion: vpn.m.ipsecgw.io/v1alpha1\nkind: IPsecGateway\nmetadata:\n  name: branch-vpn\n  namespace: tenant-a\n", 1)
	return strings.Replace(y, "  providerConfigName: default\n", "  providerConfigRef: {kind: ProviderConfig, name: tenant-a}\n", 1)
}

// mr is a composed resource of kind (of the group of the networking
// managed resources of the composite's scope, ns) as observed: with the
// external name en unless it is empty, being deleted when deleting.
func mr(ns bool, kind, name, en string, deleting bool) string {
	group, where := "networking.ipsecgw.io", ""
	if ns {
		group, where = "networking.m.ipsecgw.io", ", namespace: tenant-a"
	}
	md := "name: " + name + where
	if en != "" {
		md += ", annotations: {crossplane.io/external-name: " + en + "}"
	}
	if deleting {
		md += ", deletionTimestamp: '2026-12-06T10:00:00Z', finalizers: [finalizer.managedresource.crossplane.io]"
	}
	return fmt.Sprintf("{apiVersion: %s/v1alpha1, kind: %s, metadata: {%s}}", group, kind, md)
}

func TestAdoption(t *testing.T) {
	allocated := natXR(claimA, allocatedEndpoint)
	recorded := "{securityGroup: {id: sg-1}, port: {id: p-1}, floatingIP: {id: fip-1}}"
	type want struct {
		// names maps a composed resource to its desired external name;
		// absent: none desired.
		names map[string]string
		// ids is the composite's desired status.<step>.id by step.
		ids map[string]string
		// apiVersion is that of each resource named in names; empty: not
		// checked.
		apiVersion string
		// orphaned are the resources composed orphaned: management
		// policies without Delete and, cluster-scoped, deletionPolicy
		// Orphan.
		orphaned []string
	}
	cases := map[string]struct {
		reason   string
		xr       string
		observed map[string]string
		want     want
	}{
		"NewComposite": {
			reason: "A new composite records nothing and its resources get no external name: the provider creates their objects and names them.",
			xr:     allocated,
			want:   want{names: map[string]string{}, ids: map[string]string{}},
		},
		"Created": {
			reason: "Each observed resource keeps its own external name, stated by the function from now on, and the composite records it; the Gateway, the RouterRoutes and the NodeAddressPairs are not Neutron objects found by an ID: nothing is stated for them.",
			xr:     allocated,
			observed: map[string]string{
				"security-group":     mr(false, "SecurityGroup", "sg", "sg-1", false),
				"port":               mr(false, "Port", "p", "p-1", false),
				"floating-ip":        mr(false, "FloatingIPBinding", "f", "fip-1", false),
				"node-address-pairs": mr(false, "NodeAddressPairs", "n", "p-1", false),
			},
			want: want{
				names: map[string]string{"security-group": "sg-1", "port": "p-1", "floating-ip": "fip-1"},
				ids:   map[string]string{"securityGroup": "sg-1", "port": "p-1", "floatingIP": "fip-1"},
			},
		},
		"BeingDeleted": {
			reason: "Resources being deleted while their composite is not (their CRDs deleted with the Provider package) are composed orphaned, so that the provider lets them go without deleting their Neutron objects, and still say their external names, which the composite records.",
			xr:     allocated,
			observed: map[string]string{
				"security-group":     mr(false, "SecurityGroup", "sg", "sg-1", true),
				"port":               mr(false, "Port", "p", "p-1", true),
				"floating-ip":        mr(false, "FloatingIPBinding", "f", "fip-1", true),
				"node-address-pairs": mr(false, "NodeAddressPairs", "n", "p-1", true),
			},
			want: want{
				names:    map[string]string{"security-group": "sg-1", "port": "p-1", "floating-ip": "fip-1"},
				ids:      map[string]string{"securityGroup": "sg-1", "port": "p-1", "floatingIP": "fip-1"},
				orphaned: []string{"floating-ip", "node-address-pairs", "port", "security-group"},
			},
		},
		"CompositeBeingDeleted": {
			reason: "The resources of a composite being deleted are deleted as their policies say: none is orphaned.",
			xr:     strings.Replace(allocated, "  name: branch-vpn-7xk2p\n", "  name: branch-vpn-7xk2p\n  deletionTimestamp: '2026-12-06T10:00:00Z'\n", 1),
			observed: map[string]string{
				"security-group": mr(false, "SecurityGroup", "sg", "sg-1", true),
				"port":           mr(false, "Port", "p", "p-1", true),
				"floating-ip":    mr(false, "FloatingIPBinding", "f", "fip-1", true),
			},
			want: want{
				names: map[string]string{"security-group": "sg-1", "port": "p-1", "floating-ip": "fip-1"},
				ids:   map[string]string{"securityGroup": "sg-1", "port": "p-1", "floatingIP": "fip-1"},
			},
		},
		"NamespacedBeingDeleted": {
			reason: "A namespaced IPsecGateway's resources being deleted are composed with management policies without Delete (they have no deletionPolicy); only those being deleted.",
			xr:     namespaced(allocated),
			observed: map[string]string{
				"security-group": mr(true, "SecurityGroup", "sg", "sg-1", true),
				"port":           mr(true, "Port", "p", "p-1", false),
				"floating-ip":    mr(true, "FloatingIPBinding", "f", "fip-1", true),
			},
			want: want{
				names:      map[string]string{"security-group": "sg-1", "port": "p-1", "floating-ip": "fip-1"},
				ids:        map[string]string{"securityGroup": "sg-1", "port": "p-1", "floatingIP": "fip-1"},
				apiVersion: "networking.m.ipsecgw.io/v1alpha1",
				orphaned:   []string{"floating-ip", "security-group"},
			},
		},
		"ComposedAnew": {
			reason: "Resources that are gone (their CRDs deleted with the Provider package) are composed anew with the external names the composite recorded, so that they adopt the Neutron objects instead of making a second of each; the record stays.",
			xr:     withStatus(allocated, recorded),
			want: want{
				names: map[string]string{"security-group": "sg-1", "port": "p-1", "floating-ip": "fip-1"},
				ids:   map[string]string{"securityGroup": "sg-1", "port": "p-1", "floatingIP": "fip-1"},
			},
		},
		"ComposedAnewPinned": {
			reason: "A pinned floating IP's binding composed anew gets no recorded ID: the provider finds the customer's floating IP by its address and never allocates one; the security group and the port are adopted as ever, and the record stays.",
			xr:     withStatus(xrNAT, recorded),
			want: want{
				names: map[string]string{"security-group": "sg-1", "port": "p-1"},
				ids:   map[string]string{"securityGroup": "sg-1", "port": "p-1", "floatingIP": "fip-1"},
			},
		},
		"SomeComposedAnew": {
			reason: "Only the resources that are gone get the record: the port that is still there keeps its own.",
			xr:     withStatus(allocated, recorded),
			observed: map[string]string{
				"port": mr(false, "Port", "p", "p-1", false),
			},
			want: want{
				names: map[string]string{"security-group": "sg-1", "port": "p-1", "floating-ip": "fip-1"},
				ids:   map[string]string{"securityGroup": "sg-1", "port": "p-1", "floatingIP": "fip-1"},
			},
		},
		"ObservedWins": {
			reason: "A resource's own external name wins over the record (the provider found its object anew): it is stated as it is, never overwritten with an older one, and becomes the record.",
			xr:     withStatus(allocated, recorded),
			observed: map[string]string{
				"security-group": mr(false, "SecurityGroup", "sg", "sg-2", false),
				"port":           mr(false, "Port", "p", "p-2", false),
				"floating-ip":    mr(false, "FloatingIPBinding", "f", "fip-2", false),
			},
			want: want{
				names: map[string]string{"security-group": "sg-2", "port": "p-2", "floating-ip": "fip-2"},
				ids:   map[string]string{"securityGroup": "sg-2", "port": "p-2", "floatingIP": "fip-2"},
			},
		},
		"BeingCreated": {
			reason: "A resource that exists without an external name is being created: it gets none (the provider's create may be under way, and the ID it writes is the right one), and its empty name never replaces the record.",
			xr:     withStatus(allocated, recorded),
			observed: map[string]string{
				"security-group": mr(false, "SecurityGroup", "sg", "", false),
				"port":           mr(false, "Port", "p", "", false),
				"floating-ip":    mr(false, "FloatingIPBinding", "f", "", false),
			},
			want: want{
				names: map[string]string{},
				ids:   map[string]string{"securityGroup": "sg-1", "port": "p-1", "floatingIP": "fip-1"},
			},
		},
		"NamespacedComposedAnew": {
			reason: "A namespaced IPsecGateway's resources, namespaced twins, are composed anew with its record just as the legacy composite's.",
			xr:     namespaced(withStatus(allocated, recorded)),
			want: want{
				names:      map[string]string{"security-group": "sg-1", "port": "p-1", "floating-ip": "fip-1"},
				ids:        map[string]string{"securityGroup": "sg-1", "port": "p-1", "floatingIP": "fip-1"},
				apiVersion: "networking.m.ipsecgw.io/v1alpha1",
			},
		},
		"NamespacedCreated": {
			reason: "A namespaced IPsecGateway records its resources' external names.",
			xr:     namespaced(allocated),
			observed: map[string]string{
				"security-group": mr(true, "SecurityGroup", "sg", "sg-1", false),
				"port":           mr(true, "Port", "p", "p-1", false),
				"floating-ip":    mr(true, "FloatingIPBinding", "f", "fip-1", false),
			},
			want: want{
				names:      map[string]string{"security-group": "sg-1", "port": "p-1", "floating-ip": "fip-1"},
				ids:        map[string]string{"securityGroup": "sg-1", "port": "p-1", "floatingIP": "fip-1"},
				apiVersion: "networking.m.ipsecgw.io/v1alpha1",
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			rsp := run(t, tc.xr, tc.observed)
			for _, r := range rsp.GetResults() {
				if r.GetSeverity() == fnv1.Severity_SEVERITY_FATAL {
					t.Fatalf("%s\nfatal result: %s", tc.reason, r.GetMessage())
				}
			}
			names := map[string]string{}
			for n, r := range rsp.GetDesired().GetResources() {
				m := r.GetResource().AsMap()
				md, _ := m["metadata"].(map[string]any)
				an, _ := md["annotations"].(map[string]any)
				if en, ok := an["crossplane.io/external-name"].(string); ok {
					names[n] = en
					if want := tc.want.apiVersion; want != "" && m["apiVersion"] != want {
						t.Errorf("%s\ndesired %s: apiVersion %v, want %s", tc.reason, n, m["apiVersion"], want)
					}
				}
				if len(an) > 1 || (len(an) == 1 && names[n] == "") {
					t.Errorf("%s\ndesired %s: annotations %v, want at most the external name", tc.reason, n, an)
				}
			}
			if diff := cmp.Diff(tc.want.names, names); diff != "" {
				t.Errorf("%s\ndesired external names: -want +got:\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(tc.want.orphaned, orphans(rsp)); diff != "" {
				t.Errorf("%s\ncomposed orphaned: -want +got:\n%s", tc.reason, diff)
			}
			st, _ := rsp.GetDesired().GetComposite().GetResource().AsMap()["status"].(map[string]any)
			ids := map[string]string{}
			for _, step := range []string{"securityGroup", "port", "floatingIP"} {
				s, _ := st[step].(map[string]any)
				if id, ok := s["id"].(string); ok {
					ids[step] = id
				}
			}
			if diff := cmp.Diff(tc.want.ids, ids); diff != "" {
				t.Errorf("%s\ndesired status.<step>.id: -want +got:\n%s", tc.reason, diff)
			}
		})
	}
}

// orphans are the names of the desired resources of rsp composed orphaned:
// management policies without Delete and, cluster-scoped (any but
// networking.m and gateway.m), deletionPolicy Orphan.
func orphans(rsp *fnv1.RunFunctionResponse) []string {
	var out []string
	for n, r := range rsp.GetDesired().GetResources() {
		p := fieldpath.Pave(r.GetResource().AsMap())
		var mp []string
		_ = p.GetValueInto("spec.managementPolicies", &mp)
		dp, _ := p.GetString("spec.deletionPolicy")
		av, _ := p.GetString("apiVersion")
		if cmp.Equal(mp, []string{"Observe", "Create", "Update", "LateInitialize"}) && (strings.Contains(av, ".m.") || dp == "Orphan") {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out
}

// pave is r's object paved, nil for nil.
func pave(r *fnv1.Resource) *fieldpath.Paved {
	if r == nil {
		return nil
	}
	return fieldpath.Pave(r.GetResource().AsMap())
}

func TestExternalName(t *testing.T) {
	xr := res(t, withStatus(xrNAT, "{securityGroup: {id: sg-1}, port: {id: ''}, floatingIP: {id: fip-1}}"))
	type args struct {
		name     string
		observed string
		pinned   bool
	}
	cases := map[string]struct {
		reason string
		args   args
		want   string
	}{
		"Own": {
			reason: "An observed resource's own external name is desired.",
			args:   args{name: SecurityGroupName, observed: mr(false, "SecurityGroup", "sg", "sg-2", false)},
			want:   "sg-2",
		},
		"Recorded": {
			reason: "A resource that does not exist gets the recorded one.",
			args:   args{name: SecurityGroupName},
			want:   "sg-1",
		},
		"RecordedEmpty": {
			reason: "An empty record is no external name.",
			args:   args{name: PortName},
		},
		"NoneYet": {
			reason: "An observed resource without one gets none, whatever the record.",
			args:   args{name: SecurityGroupName, observed: mr(false, "SecurityGroup", "sg", "", false)},
		},
		"AllocatedFloatingIP": {
			reason: "An allocated floating IP's binding that does not exist gets the recorded ID.",
			args:   args{name: FloatingIPName},
			want:   "fip-1",
		},
		"PinnedFloatingIP": {
			reason: "A pinned floating IP's binding that does not exist gets none: the provider looks its address up.",
			args:   args{name: FloatingIPName, pinned: true},
		},
		"PinnedFloatingIPOwn": {
			reason: "A pinned floating IP's binding that exists keeps its own: once stated, an external name is stated in every run.",
			args:   args{name: FloatingIPName, observed: mr(false, "FloatingIPBinding", "f", "fip-2", false), pinned: true},
			want:   "fip-2",
		},
		"NotNeutron": {
			reason: "Nothing is stated for a resource whose object is not found by a Neutron ID (the Gateway).",
			args:   args{name: GatewayName, observed: "{apiVersion: gateway.ipsecgw.io/v1alpha1, kind: Gateway, metadata: {name: g, annotations: {crossplane.io/external-name: g}}}"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var o *fnv1.Resource
			if tc.args.observed != "" {
				o = res(t, tc.args.observed)
			}
			got := externalName(tc.args.name, pave(o), pave(xr), tc.args.pinned)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\nexternalName(...): -want +got:\n%s", tc.reason, diff)
			}
		})
	}
}
