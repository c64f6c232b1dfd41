//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/floatingips"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/security/groups"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/ipsecgw/provider-ipsec/test/docsteps"
)

// providerPackage is the name of the provider's package on the local stack
// (Crossplane's dependency resolution names it after its repository).
const providerPackage = "provider-ipsec"

// TestRecoverProviderDeletion deletes the Provider package while
// IPsecGateways use it, as an operator might by accident, and follows the
// recovery of docs/uninstall.md, its own commands: on the `make dev` stack
// with the pre-staged pinned IPsecGateway and an allocated one of each
// style (a legacy claim and a namespaced IPsecGateway), their steps Ready.
// Before anyone acts, every managed resource being deleted must be orphaned
// by the function. After the recovery every IPsecGateway must be Ready again (claimReady:
// without a node, the Gateway Synced and rendered), its managed resources
// composed anew (new UIDs) with the external names of the ones before, and
// the tenant's Neutron exactly as before: every security group with its
// rules, port with its fixed IPs and allowed address pairs, floating IP
// with its association, the same objects by ID, and one security group and
// one port per IPsecGateway (no twin). It logs how long each part took.
func TestRecoverProviderDeletion(t *testing.T) {
	stackLanes.take(t)
	start := time.Now()
	s := startStack(t)
	doc := docsteps.Read(t, filepath.Join(root, uninstallDoc))
	doc.Require(t, "names", "recover-mrs", "recover-orphan", "recover-check", "recover-release", "recover-providerconfigs", "recover-status")
	styles := composites()
	names := []string{pinned}
	for _, xr := range styles {
		s.applyExample(t, filepath.Join(root, "examples", xr.examples, "allocated-fip.yaml"), "recover-"+xr.examples)
		names = append(names, "recover-"+xr.examples)
	}
	ready := func(what string, timeout time.Duration) time.Duration {
		return eventuallyEvery(t, time.Second, what, timeout, func() (bool, string) {
			for _, xr := range styles {
				if ok, why := claimReady(s.get(t, xr.gvk, tenant, "recover-"+xr.examples)); !ok {
					return false, xr.name + " " + why
				}
			}
			return s.pairsReady(t, styles)
		})
	}
	took := ready("both allocated IPsecGateways Ready", 4*time.Minute)
	t.Logf("the allocated IPsecGateways were Ready %s after their creation", took.Round(100*time.Millisecond))

	before := neutronObjects(t, s.network)
	mrs := s.managedIdentities(t)
	if len(mrs) < 12 {
		t.Fatalf("the stack has %d managed resources of the provider, want those of three IPsecGateways: %v", len(mrs), mrs)
	}
	records := s.records(t, styles, names)
	descriptions := neutronDescriptions(t, s.network)
	t.Logf("before the deletion: %d security groups, %d ports, %d floating IPs in the tenant's Neutron; %d managed resources",
		len(before.SecurityGroups), len(before.Ports), len(before.FloatingIPs), len(mrs))

	// The accident, and the External runtime's part of it: a deleted
	// Provider's Deployment goes, so the provider stops.
	t0 := time.Now()
	s.kubectl(t, "delete", "provider.pkg.crossplane.io", providerPackage, "--wait=false")
	s.stopProvider(t)
	// The function orphans each managed resource that is being deleted,
	// within seconds (Crossplane watches them), before anyone acts.
	var deleting int
	eventually(t, "the managed resources being deleted orphaned by the function", time.Minute, func() (bool, string) {
		deleting = 0
		for id, mr := range s.managedIdentities(t) {
			if mr.deleted == "" {
				continue
			}
			if mr.policies != orphanPolicies {
				return false, id + " is being deleted with management policies " + mr.policies
			}
			deleting++
		}
		return deleting > 0, "no managed resource is being deleted yet"
	})
	t.Logf("the Provider package deleted: %d of %d managed resources being deleted %s later, each orphaned by the function",
		deleting, len(mrs), time.Since(t0).Round(100*time.Millisecond))

	env := append(slices.Clone(s.env), "KUBECONFIG="+filepath.Join(s.state, "kubeconfig"),
		"PATH="+os.Getenv("KUBEBUILDER_ASSETS")+":"+os.Getenv("PATH"),
		"PROVIDER="+providerPackage, "FUNCTION=function-ipsecgw",
		"PROVIDERCONFIGS="+s.providerConfigs(t))
	run := func(names ...string) {
		doc.Run(t, env, root, 10*time.Minute, []string{"names", "recover-mrs"}, names...)
	}

	// 1. Orphan every managed resource.
	run("recover-orphan", "recover-check")
	// 2. The provider back (the package runtime's part: the revision that
	// dependency resolution made runs the provider); the orphaned MRs let
	// go by hand (the provider starts no controller for a kind whose CRD
	// is being deleted); the CRDs back. Should the provider exit while
	// its CRDs are gone, its runtime restarts it.
	s.providerBack(t)
	restarts := s.keepProviderRunning(t)
	run("recover-release")
	// 3. The ProviderConfigs again; the composites compose their managed
	// resources anew, which adopt the Neutron objects.
	run("recover-providerconfigs")
	// The composites' status says Ready from before until they compose
	// again: first every managed resource back, composed anew.
	took = eventuallyEvery(t, time.Second, "every managed resource composed anew", 5*time.Minute, func() (bool, string) {
		now := s.managedIdentities(t)
		for id, b := range mrs {
			a, ok := now[id]
			switch {
			case !ok:
				return false, id + " is not composed again"
			case a.uid == b.uid || a.deleted != "":
				return false, id + " is the one from before the deletion"
			case a.externalName == "":
				return false, id + " has no external name yet"
			}
		}
		return true, ""
	})
	took += ready("every IPsecGateway's steps Ready again", 5*time.Minute)
	t.Logf("the provider's runtime started it again %d times (starts that became ready) while its CRDs were gone or coming back", restarts())
	run("recover-status")
	t.Logf("from the deletion of the Provider package to every IPsecGateway Ready again: %s (%s after the ProviderConfigs)",
		time.Since(t0).Round(100*time.Millisecond), took.Round(100*time.Millisecond))

	after := neutronObjects(t, s.network)
	if diff := cmp.Diff(before, after); diff != "" {
		t.Errorf("the recovery changed the tenant's Neutron objects (-before +after):\n%s", diff)
	}
	t.Logf("after the recovery: %d security groups, %d ports, %d floating IPs, as before", len(after.SecurityGroups), len(after.Ports), len(after.FloatingIPs))
	s.checkAdopted(t, mrs, s.managedIdentities(t))
	if got := s.records(t, styles, names); !cmp.Equal(records, got) {
		t.Errorf("the IPsecGateways' recorded Neutron IDs changed (-before +after):\n%s", cmp.Diff(records, got))
	}
	for _, n := range names {
		twins(t, s.network, "ipsecgw-"+tenant+"-"+n)
	}
	// An adopted object carries the marker of the managed resource that
	// created it (docs/crash-safe-create.md), not its new one's: what the
	// provider makes of that is logged, not judged here.
	if diff := cmp.Diff(descriptions, neutronDescriptions(t, s.network)); diff != "" {
		t.Logf("NOTE: the Neutron descriptions changed in the recovery (-before +after):\n%s", diff)
	}
	t.Logf("the whole test: %s", time.Since(start).Round(time.Second))
}

// orphanPolicies are the management policies of an orphaned managed
// resource, as kubectl prints them.
const orphanPolicies = `["Observe","Create","Update","LateInitialize"]`

// A managedIdentity is what identifies a managed resource of the provider
// and its external object: its UID, its external name, when it was
// deleted ("" while it is not) and its management policies.
type managedIdentity struct {
	uid, externalName, deleted, policies string
}

// managedIdentities returns every managed resource of the provider by
// "CRD namespace/name", listed by CRD as docs/uninstall.md's mrs does:
// while the CRDs are being deleted, `kubectl get managed` fails on a kind
// whose CRD is already gone.
func (s *stack) managedIdentities(t *testing.T) map[string]managedIdentity {
	t.Helper()
	mrs := map[string]managedIdentity{}
	crds := s.kubectl(t, "get", "crd", "-o", `jsonpath={range .items[*]}{.metadata.name} {.spec.names.categories}{"\n"}{end}`)
	for l := range strings.Lines(crds) {
		f := strings.Fields(l)
		if len(f) != 2 || !strings.HasSuffix(f[0], "ipsecgw.io") || !strings.Contains(f[1], `"managed"`) {
			continue
		}
		out, err := s.kubectlCommand("get", f[0], "-A", "-o",
			`jsonpath={range .items[*]}{.metadata.namespace}/{.metadata.name}|{.metadata.uid}|{.metadata.annotations.crossplane\.io/external-name}|{.metadata.deletionTimestamp}|{.spec.managementPolicies}{"\n"}{end}`).Output()
		if err != nil {
			// Its CRD went since the list.
			continue
		}
		for l := range strings.Lines(string(out)) {
			m := strings.Split(strings.TrimSpace(l), "|")
			if len(m) != 5 {
				continue
			}
			mrs[f[0]+" "+m[0]] = managedIdentity{uid: m[1], externalName: m[2], deleted: m[3], policies: m[4]}
		}
	}
	return mrs
}

// checkAdopted fails unless the managed resources after are those of
// before by name, each composed anew (another UID) with the external name
// it had before, and no two share an external name.
func (s *stack) checkAdopted(t *testing.T, before, after map[string]managedIdentity) {
	t.Helper()
	owner := map[string]string{}
	for id, b := range before {
		a, ok := after[id]
		switch {
		case !ok:
			t.Errorf("%s was not composed again", id)
			continue
		case a.uid == b.uid:
			t.Errorf("%s has the UID it had before the deletion: not composed anew", id)
		case a.externalName != b.externalName:
			t.Errorf("%s has external name %q, %q before the deletion", id, a.externalName, b.externalName)
		case a.deleted != "":
			t.Errorf("%s is being deleted", id)
		case a.policies != b.policies:
			t.Errorf("%s has management policies %s, %s before the deletion", id, a.policies, b.policies)
		}
		// The NodeAddressPairs' external name is its port's ID; a
		// RouterRoutes' its router's.
		if k := strings.SplitN(id, ".", 2)[0]; k == "securitygroups" || k == "ports" || k == "floatingipbindings" {
			if o, dup := owner[a.externalName]; dup {
				t.Errorf("%s and %s both have external name %s", o, id, a.externalName)
			}
			owner[a.externalName] = id
		}
	}
	for id := range after {
		if _, ok := before[id]; !ok {
			t.Errorf("%s is new: the composites composed a managed resource they did not have before", id)
		}
	}
}

// records returns the Neutron IDs each IPsecGateway named in names (of the
// styles) records in its status: status.<step>.id by "style name step".
func (s *stack) records(t *testing.T, styles []composite, names []string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, xr := range styles {
		for _, n := range names {
			c := s.get(t, xr.gvk, tenant, n)
			if c == nil {
				continue
			}
			for _, step := range []string{"securityGroup", "port", "floatingIP"} {
				out[xr.name+" "+n+" "+step] = str(c, "status", step, "id")
			}
		}
	}
	return out
}

// twins fails unless the tenant's Neutron has exactly one security group
// and one port named name.
func twins(t *testing.T, network *gophercloud.ServiceClient, name string) {
	t.Helper()
	if n := len(allPages(t, groups.List(network, groups.ListOpts{Name: name}), groups.ExtractGroups)); n != 1 {
		t.Errorf("%d security groups named %s, want 1", n, name)
	}
	if n := len(allPages(t, ports.List(network, ports.ListOpts{Name: name}), ports.ExtractPorts)); n != 1 {
		t.Errorf("%d ports named %s, want 1", n, name)
	}
}

// neutronDescriptions returns the descriptions of the tenant's security
// groups, ports and floating IPs by kind and name (a floating IP's address).
func neutronDescriptions(t *testing.T, network *gophercloud.ServiceClient) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, g := range allPages(t, groups.List(network, groups.ListOpts{}), groups.ExtractGroups) {
		out["security group "+g.Name+" "+g.ID] = g.Description
	}
	for _, p := range allPages(t, ports.List(network, ports.ListOpts{}), ports.ExtractPorts) {
		out["port "+p.Name+" "+p.ID] = p.Description
	}
	for _, f := range allPages(t, floatingips.List(network, floatingips.ListOpts{}), floatingips.ExtractFloatingIPs) {
		out["floating IP "+f.FloatingIP+" "+f.ID] = f.Description
	}
	return out
}

// pairsReady says whether every NodeAddressPairs of the styles is Ready,
// and if not, which one is not: the node ports' allowed address pairs are
// part of what is compared.
func (s *stack) pairsReady(t *testing.T, styles []composite) (bool, string) {
	t.Helper()
	for _, xr := range styles {
		l := &unstructured.UnstructuredList{}
		l.SetGroupVersionKind(schema.GroupVersionKind{Group: xr.networking, Version: "v1alpha1", Kind: "NodeAddressPairsList"})
		if err := s.kube.List(context.Background(), l); err != nil {
			return false, err.Error()
		}
		for i := range l.Items {
			if st, msg := condition(&l.Items[i], "Ready", "status", "conditions"); st != "True" {
				return false, "NodeAddressPairs " + l.Items[i].GetName() + ": Ready " + st + " " + msg
			}
		}
	}
	return true, ""
}

// stopProvider stops the provider's process: the External runtime's part
// of a deleted Provider package (a package runtime deletes its Deployment).
func (s *stack) stopProvider(t *testing.T) {
	t.Helper()
	stop := exec.Command("bash", "-c", "source cluster/local/lib.sh && stop provider")
	stop.Env, stop.Dir = s.env, root
	if out, err := stop.CombinedOutput(); err != nil {
		t.Fatalf("stop the provider: %v\n%s", err, out)
	}
}

// providerBack plays the External runtime of the Provider that Crossplane's
// dependency resolution made anew (the Configuration depends on it) and
// starts the provider's process, as a package runtime starts its
// Deployment. Its revision cannot be Healthy yet (the CRDs it must take
// over are being deleted), so the test waits for no more.
func (s *stack) providerBack(t *testing.T) {
	t.Helper()
	t0 := time.Now()
	var ref string
	eventually(t, "the Provider package made again by dependency resolution", time.Minute, func() (bool, string) {
		out, err := s.kubectlCommand("get", "provider.pkg.crossplane.io", providerPackage, "-o", "jsonpath={.spec.package}").Output()
		ref = strings.TrimSpace(string(out))
		return err == nil && ref != "", fmt.Sprint(err)
	})
	mustRun(t, s.env, "cluster/local/external-runtime.sh", "provider", providerPackage, ref, filepath.Join(s.state, "xp", "provider"))
	s.startProvider(t)
	t.Logf("the provider's new revision's runtime played and its process started in %s", time.Since(t0).Round(100*time.Millisecond))
}

// keepProviderRunning restarts the provider's process whenever it has
// exited, every 5 s, as a package runtime's Deployment restarts its pod
// (which exits seconds after it starts while any of its CRDs is gone, or
// is not served yet), until the function it returns is called; that
// function returns how many times it started the provider. The test's
// cleanup stops it too.
func (s *stack) keepProviderRunning(t *testing.T) func() int {
	t.Helper()
	stop, done := make(chan struct{}), make(chan int)
	go func() {
		n := 0
		for {
			select {
			case <-stop:
				done <- n
				return
			case <-time.After(5 * time.Second):
			}
			running := exec.Command("bash", "-c", "source cluster/local/lib.sh && running provider")
			running.Env, running.Dir = s.env, root
			if running.Run() == nil {
				continue
			}
			if _, err := runScript(s.env, "cluster/local/provider.sh"); err == nil {
				n++
			}
		}
	}()
	var once sync.Once
	starts := 0
	halt := func() int {
		once.Do(func() {
			close(stop)
			starts = <-done
		})
		return starts
	}
	t.Cleanup(func() { halt() })
	return halt
}

// startProvider starts the provider's process when it does not run (it
// exits while its CRDs are gone, and its runtime restarts it). A start
// that fails is logged: the step that waits for the provider says the
// rest.
func (s *stack) startProvider(t *testing.T) {
	t.Helper()
	if out, err := runScript(s.env, "cluster/local/provider.sh"); err != nil {
		t.Logf("cluster/local/provider.sh: %v\n%s", err, out)
	}
}

// providerConfigs writes the stack's ProviderConfigs (dev.sh applies them:
// the cluster-scoped default and tenant-a's own) to a file of the test's
// and returns its path: what a platform team keeps in Git.
func (s *stack) providerConfigs(t *testing.T) string {
	t.Helper()
	var docs []string
	for _, f := range []string{"examples/providerconfig/providerconfig.yaml", "examples/namespaced/providerconfig.yaml"} {
		b, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			t.Fatal(err)
		}
		for d := range strings.SplitSeq(string(b), "\n---\n") {
			if strings.Contains(d, "\nkind: ProviderConfig\n") {
				docs = append(docs, d)
			}
		}
	}
	if len(docs) != 2 {
		t.Fatalf("%d ProviderConfigs in the examples, want 2", len(docs))
	}
	p := filepath.Join(t.TempDir(), "providerconfigs.yaml")
	if err := os.WriteFile(p, []byte(strings.Join(docs, "\n---\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}
