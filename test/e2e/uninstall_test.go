//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/floatingips"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/security/groups"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
	"github.com/gophercloud/gophercloud/v2/pagination"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/ipsecgw/provider-ipsec/test/docsteps"
)

// uninstallDoc is the uninstall procedure whose sh blocks TestUninstall
// runs.
const uninstallDoc = "docs/uninstall.md"

// TestUninstall follows the uninstall procedure of docs/uninstall.md on the
// `make dev` stack, its own commands: with the pre-staged pinned IPsecGateway, an
// allocated claim and an allocated namespaced IPsecGateway (their floating
// IPs attached), it orphans every managed resource, deletes the claims and
// the IPsecGateway, then the Configuration, the provider and the function.
// Every security group, port and floating IP of the tenant's Neutron must
// be as before (rules, fixed IPs, allowed address pairs, associations); no
// managed resource and no CRD of the provider may be left; the gateways'
// Deployments stay. It logs how long each step took.
func TestUninstall(t *testing.T) {
	stackLanes.take(t)
	s := startStack(t)
	doc := docsteps.Read(t, filepath.Join(root, uninstallDoc))
	doc.Require(t, "names", "orphan", "check", "delete", "packages")
	styles := composites()
	// Two allocated ones beside the pre-staged pinned claim, one of each
	// kind, so that both kinds of managed resources are orphaned.
	for _, xr := range styles {
		s.applyExample(t, filepath.Join(root, "examples", xr.examples, "allocated-fip.yaml"), "uninstall-"+xr.examples)
		eventually(t, "the "+xr.name+"'s floating IP attached", 3*time.Minute, func() (bool, string) {
			c := s.get(t, xr.gvk, tenant, "uninstall-"+xr.examples)
			at := str(c, "status", "floatingIP", "attached")
			return at == "true" && str(c, "status", "gateway", "name") != "", "attached " + at
		})
	}
	// The node ports' allowed address pairs are part of what is compared:
	// every NodeAddressPairs must have written its pair (seen: the
	// allocated namespaced one's pair came after the snapshot).
	eventually(t, "every NodeAddressPairs Ready", 2*time.Minute, func() (bool, string) { return s.pairsReady(t, styles) })
	deployments := s.gatewayDeployments(t)
	if len(deployments) != 3 {
		t.Fatalf("the gateways' Deployments before the uninstall: %v, want 3", deployments)
	}
	before := neutronObjects(t, s.network)
	t.Logf("before the uninstall: %d security groups, %d ports, %d floating IPs in the tenant's Neutron", len(before.SecurityGroups), len(before.Ports), len(before.FloatingIPs))
	mrs := s.managed(t)
	if len(mrs) < 12 {
		t.Fatalf("the stack has %d managed resources of the provider, want those of three IPsecGateways: %v", len(mrs), mrs)
	}

	env := append(slices.Clone(s.env), "KUBECONFIG="+filepath.Join(s.state, "kubeconfig"),
		"PATH="+os.Getenv("KUBEBUILDER_ASSETS")+":"+os.Getenv("PATH"),
		// The local stack's packages are at its registry's root.
		"PROVIDER=provider-ipsec", "FUNCTION=function-ipsecgw")
	// Each step ends within minutes, or hangs on a finalizer.
	run := func(names ...string) { doc.Run(t, env, root, 5*time.Minute, []string{"names"}, names...) }

	// 1. Orphan, and the patch survives the composites' reconciles.
	run("orphan", "check")
	s.nudgeAll(t, styles)
	orphaned := s.managed(t)
	for _, mr := range orphaned {
		if p := fmt.Sprint(mr.policies); p != "[Observe Create Update LateInitialize]" {
			t.Errorf("%s has management policies %s after its composite reconciled, want those of step orphan", mr.id, p)
		}
	}
	if len(orphaned) != len(mrs) {
		t.Errorf("%d managed resources after orphaning, %d before", len(orphaned), len(mrs))
	}
	// 2. The claims and the namespaced IPsecGateway.
	run("delete")
	if left := s.managed(t); len(left) != 0 {
		t.Errorf("managed resources left after deleting the claims: %v", left)
	}
	for _, xr := range styles {
		if c := s.get(t, xr.gvk, tenant, "uninstall-"+xr.examples); c != nil {
			t.Errorf("the %s uninstall-%s exists after its deletion", xr.name, xr.examples)
		}
	}
	// 3. The packages; the External runtime's part: stop the provider.
	run("packages")
	s.stopProvider(t)
	crds := &unstructured.UnstructuredList{}
	crds.SetGroupVersionKind(schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinitionList"})
	if err := s.kube.List(context.Background(), crds); err != nil {
		t.Fatal(err)
	}
	for _, c := range crds.Items {
		if strings.HasSuffix(c.GetName(), "ipsecgw.io") {
			t.Errorf("CRD %s is left after the packages' deletion", c.GetName())
		}
	}

	after := neutronObjects(t, s.network)
	if diff := cmp.Diff(before, after); diff != "" {
		t.Errorf("the uninstall changed the tenant's Neutron objects (-before +after):\n%s", diff)
	}
	t.Logf("after the uninstall: %d security groups, %d ports, %d floating IPs, as before", len(after.SecurityGroups), len(after.Ports), len(after.FloatingIPs))
	if got := s.gatewayDeployments(t); !slices.Equal(got, deployments) {
		t.Errorf("the gateways' Deployments after the uninstall: %v, want %v (orphaned, as before)", got, deployments)
	}
}

// applyExample creates the IPsecGateway of the example file as name, with
// the local Neutron's IDs put in, its data plane Libipsec when the stack
// has a node (as dev.sh does).
func (s *stack) applyExample(t *testing.T, file, name string) {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	y := strings.NewReplacer("00000000-0000-4000-8000-00000000aaaa", s.runbook.NetworkID,
		"00000000-0000-4000-8000-00000000bbbb", s.runbook.SubnetID,
		"00000000-0000-4000-8000-00000000cccc", s.runbook.ExtNetID).Replace(string(b))
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(y), &u.Object); err != nil {
		t.Fatal(err)
	}
	u.SetName(name)
	if os.Getenv("NODE") != "0" {
		if err := unstructured.SetNestedField(u.Object, "Libipsec", "spec", "dataPlane"); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.kube.Create(context.Background(), u); err != nil {
		t.Fatal(err)
	}
}

// nudgeAll labels every IPsecGateway of the styles, so that Crossplane
// reconciles each composite (and applies what the function composes) at
// once, and waits 10 s for those reconciles.
func (s *stack) nudgeAll(t *testing.T, styles []composite) {
	t.Helper()
	for _, xr := range styles {
		s.kubectl(t, "label", strings.ToLower(xr.gvk.Kind)+"s."+xr.gvk.Group, "--all", "-A", "uninstall="+fmt.Sprint(time.Now().UnixNano()), "--overwrite")
	}
	// The label's watch event starts each composite's reconcile at once,
	// which applies the function's resources within a second or two: a
	// field the function owned would be back by then.
	time.Sleep(10 * time.Second)
}

// A managedResource is one managed resource of the provider: kind, scope
// and name, and its management policies.
type managedResource struct {
	id       string
	policies []string
}

// managed returns every managed resource of the provider (kubectl get
// managed), sorted.
func (s *stack) managed(t *testing.T) []managedResource {
	t.Helper()
	out := s.kubectl(t, "get", "managed", "-A", "-o",
		`jsonpath={range .items[*]}{.apiVersion}/{.kind} {.metadata.namespace}/{.metadata.name} {.spec.managementPolicies}{"\n"}{end}`)
	var mrs []managedResource
	for l := range strings.Lines(out) {
		f := strings.Fields(l)
		if len(f) < 2 || !strings.Contains(f[0], "ipsecgw.io/") {
			continue
		}
		mr := managedResource{id: f[0] + " " + f[1]}
		if len(f) == 3 {
			var p []string
			if err := yaml.Unmarshal([]byte(f[2]), &p); err != nil {
				t.Fatalf("the management policies of %s: %v", mr.id, err)
			}
			mr.policies = p
		}
		mrs = append(mrs, mr)
	}
	sort.Slice(mrs, func(i, j int) bool { return mrs[i].id < mrs[j].id })
	return mrs
}

// gatewayDeployments returns the names of the gateways' Deployments in
// the tenant's namespace, sorted.
func (s *stack) gatewayDeployments(t *testing.T) []string {
	t.Helper()
	l := &appsv1.DeploymentList{}
	if err := s.kube.List(context.Background(), l, client.InNamespace(tenant), client.HasLabels{"gateway.ipsecgw.io/name"}); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, d := range l.Items {
		names = append(names, d.Name)
	}
	slices.Sort(names)
	return names
}

// neutronState is what the tenant's Neutron holds that an uninstall must
// leave: each security group with its rules, port with its fixed IPs,
// allowed address pairs and security groups, floating IP with its port,
// by ID.
type neutronState struct {
	SecurityGroups map[string]string
	Ports          map[string]string
	FloatingIPs    map[string]string
}

// neutronObjects lists the security groups, ports and floating IPs network
// shows.
func neutronObjects(t *testing.T, network *gophercloud.ServiceClient) neutronState {
	t.Helper()
	st := neutronState{SecurityGroups: map[string]string{}, Ports: map[string]string{}, FloatingIPs: map[string]string{}}
	for _, g := range allPages(t, groups.List(network, groups.ListOpts{}), groups.ExtractGroups) {
		rules := make([]string, 0, len(g.Rules))
		for _, r := range g.Rules {
			rules = append(rules, fmt.Sprintf("%s %s %s %d-%d %s", r.Direction, r.EtherType, r.Protocol, r.PortRangeMin, r.PortRangeMax, r.RemoteIPPrefix))
		}
		slices.Sort(rules)
		st.SecurityGroups[g.ID] = g.Name + " " + strings.Join(rules, "; ")
	}
	for _, p := range allPages(t, ports.List(network, ports.ListOpts{}), ports.ExtractPorts) {
		st.Ports[p.ID] = fmt.Sprintf("%s %s %v pairs %v groups %v", p.Name, p.MACAddress, p.FixedIPs, p.AllowedAddressPairs, p.SecurityGroups)
	}
	for _, f := range allPages(t, floatingips.List(network, floatingips.ListOpts{}), floatingips.ExtractFloatingIPs) {
		st.FloatingIPs[f.ID] = f.FloatingIP + " on " + f.PortID
	}
	return st
}

// allPages returns every item of the pages p lists, extracted by extract.
func allPages[T any](t *testing.T, p pagination.Pager, extract func(pagination.Page) ([]T, error)) []T {
	t.Helper()
	pages, err := p.AllPages(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	l, err := extract(pages)
	if err != nil {
		t.Fatal(err)
	}
	return l
}
