//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/floatingips"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/ipsecgw/provider-ipsec/test/topology"
)

// Argo CD's Applications of examples/gitops on the local stack: the root
// one applied by hand, the platform's, and the one the ApplicationSet
// ipsecgw-tenants makes for tenants/tenant-a.
const (
	argoNS      = "argocd"
	rootApp     = "ipsecgw"
	platformApp = "ipsecgw-platform"
	tenantApp   = "ipsecgw-tenant-a"
	gitopsClaim = "tenants/tenant-a/branch-office.yaml"
)

// Argo CD's kinds.
var (
	applicationGVK    = schema.GroupVersionKind{Group: "argoproj.io", Version: "v1alpha1", Kind: "Application"}
	applicationSetGVK = schema.GroupVersionKind{Group: "argoproj.io", Version: "v1alpha1", Kind: "ApplicationSet"}
)

// TestGitOps drives the pinned-FIP claim from Git with a real Argo CD
// (cluster/local/argocd.sh, ARGOCD=1 cluster/local/dev.sh): the stack's
// repository is examples/gitops with its placeholders substituted, served
// by git daemon; Argo CD's application-controller, applicationset-controller
// and repo-server run out of cluster.
//
//  1. The root Application syncs the AppProjects, the platform Application
//     (Provider, Configuration, DeploymentRuntimeConfig, the provider's
//     RBAC, the ProviderConfig) and the ApplicationSet, whose Application
//     for tenant-a syncs its namespace and the claim: all Synced. The
//     Provider and the Configuration are Argo CD's, from the stack's
//     registry by tag, and Crossplane resolved the Configuration's
//     dependencies (the function installed by it).
//  2. Pre-stage: Argo CD's health for the claim, as the Application's
//     status records it, is Progressing with the floating IP binding's
//     message (the VM's port holds the address).
//  3. Cutover (the runbook's steps): the claim's health turns Healthy once
//     the tunnel is up with the gateway pod.
//  4. A commit that changes the tunnels (a second tunnel, branch-b, to a
//     peer that never answers, startAction respond) reaches the running
//     gateway: the agent reports the new configuration loaded, charon has
//     branch-b, the gateway pod is the same and the client's IKE SAs of
//     branch-a are the same ones. (Editing branch-a itself would make its
//     IKE SA anew: charon initiates a start connection when it is loaded
//     again, docs/live-reload.md.)
//  5. The Applications stay Synced after hard refreshes, with what
//     Crossplane wrote into the claim (the shipped ignoreDifferences).
//  6. Taking tenants/tenant-a out of Git deletes its Application, and with
//     it the claim and its managed resources; the pinned floating IP stays
//     in Neutron.
//
// With NODE=0 (no node, so no gateway pod) it leaves out steps 3 and 4.
// It logs the times from the root Application to each Application Synced
// and Healthy, and from the cutover to the claim Healthy in Argo CD.
func TestGitOps(t *testing.T) {
	stackLanes.take(t)
	env := append([]string{"ARGOCD=1"}, e2ePorts("GIT_PORT", "ARGOCD_REPO_PORT", "ARGOCD_REPO_METRICS_PORT",
		"ARGOCD_CONTROLLER_METRICS_PORT", "ARGOCD_APPSET_METRICS_PORT", "ARGOCD_APPSET_PROBE_PORT", "ARGOCD_APPSET_WEBHOOK_PORT")...)
	s := startStackWith(t, legacyClaim, env...)
	t.Cleanup(func() {
		if t.Failed() {
			logTails(t, s.state, "argocd-controller.log", "argocd-repo-server.log", "argocd-appset.log")
			for _, a := range []string{rootApp, platformApp, tenantApp} {
				out, _ := s.kubectlCommand("-n", argoNS, "get", "application", a, "-o", "jsonpath={.status}").CombinedOutput()
				t.Logf("Application %s status: %s", a, out)
			}
		}
	})

	// 1. Every Application Synced at Git's head; the platform's Healthy.
	// dev.sh waited for the claim, which the tenant's Application made.
	root := s.app(t, rootApp)
	applied := root.GetCreationTimestamp().Time
	head := s.gitHead(t)
	for _, name := range []string{rootApp, platformApp, tenantApp} {
		s.waitApp(t, name, 5*time.Minute, func(a appStatus) bool { return a.sync == "Synced" && a.revision == head })
		finished, err := time.Parse(time.RFC3339, str(s.app(t, name), "status", "operationState", "finishedAt"))
		if err != nil {
			t.Fatalf("Application %s: its sync's finishedAt: %v", name, err)
		}
		t.Logf("Application %s synced %s at %s, %s after the root Application was applied", name,
			str(s.app(t, name), "status", "operationState", "phase"), head[:8], finished.Sub(applied))
	}
	s.waitApp(t, platformApp, 3*time.Minute, func(a appStatus) bool { return a.health == "Healthy" })
	t.Logf("the platform Application Healthy %s after the root Application was applied", time.Since(applied).Round(100*time.Millisecond))
	for _, r := range []struct{ group, kind, name string }{
		{"pkg.crossplane.io", "Provider", "provider-ipsec"},
		{"pkg.crossplane.io", "Configuration", "ipsecgw-configuration"},
	} {
		if st, msg := s.resourceHealth(t, platformApp, r.group, r.kind, "", r.name); st != "Healthy" {
			t.Errorf("the platform Application: %s %s is %s (%s), want Healthy", r.kind, r.name, st, msg)
		}
	}
	// The packages are Argo CD's, from the stack's registry by tag, with
	// dependency resolution: Crossplane installed the function.
	reg := s.registry(t)
	for _, p := range []struct{ kind, name, want string }{
		{"Provider", "provider-ipsec", reg + "/provider-ipsec:v0.1.0"},
		{"Configuration", "ipsecgw-configuration", reg + "/ipsecgw-configuration:v0.1.0"},
		{"Function", "function-ipsecgw", reg + "/function-ipsecgw:v0.1.0"},
	} {
		o := s.get(t, schema.GroupVersionKind{Group: "pkg.crossplane.io", Version: "v1", Kind: p.kind}, "", p.name)
		if o == nil {
			t.Errorf("no %s %s", p.kind, p.name)
			continue
		}
		if got := str(o, "spec", "package"); got != p.want {
			t.Errorf("%s %s installs %s, want %s", p.kind, p.name, got, p.want)
		}
		if skip, _, _ := unstructured.NestedBool(o.Object, "spec", "skipDependencyResolution"); skip {
			t.Errorf("%s %s skips dependency resolution", p.kind, p.name)
		}
		tracked := o.GetAnnotations()["argocd.argoproj.io/tracking-id"] != ""
		if want := p.kind != "Function"; tracked != want {
			t.Errorf("%s %s: tracked by Argo CD %t, want %t (the function comes from the Configuration's dependencies)", p.kind, p.name, tracked, want)
		}
	}
	// Argo CD has no health check for a ProviderConfig: it is there and
	// Synced.
	if pc := s.appResource(t, platformApp, "ipsecgw.io", "ProviderConfig", "", "default"); pc["status"] != "Synced" {
		t.Errorf("the platform Application's ProviderConfig default: %v, want Synced", pc)
	}

	// 2. Pre-stage.
	eventually(t, "pre-stage: Argo CD's health for the claim is Progressing with the floating IP's message", 2*time.Minute, func() (bool, string) {
		st, msg := s.resourceHealth(t, tenantApp, "vpn.ipsecgw.io", "IPsecGateway", tenant, pinned)
		return st == "Progressing" && strings.Contains(msg, "floating IP "+s.runbook.FloatingIP+" is not attached yet") &&
			s.onAnotherPort(msg), st + ": " + msg
	})
	if a := s.appStatus(t, tenantApp); a.health != "Progressing" {
		t.Errorf("pre-stage: Application %s is %s, want Progressing (its claim is)", tenantApp, a.health)
	}

	// 3. and 4. need the node: no gateway pod runs without it.
	if os.Getenv("NODE") == "0" {
		t.Log("NODE=0: no cutover and no commit to a running gateway (steps 3 and 4)")
	} else {
		head = cutoverFromGit(t, s)
	}

	// 5. Synced with what Crossplane wrote into the claim.
	claim := s.get(t, s.xr.gvk, tenant, pinned)
	for _, f := range []string{"resourceRef", "compositionRef", "compositionRevisionRef"} {
		if str(claim, "spec", f) == "" {
			t.Errorf("the claim has no spec.%s: Crossplane did not write what ignoreDifferences leaves alone", f)
		}
	}
	for _, name := range []string{rootApp, platformApp, tenantApp} {
		s.refresh(t, name, "hard")
		if a := s.appStatus(t, name); a.sync != "Synced" || a.revision != head {
			t.Errorf("after a hard refresh Application %s is %s at %s, want Synced at %s; its resources: %s", name, a.sync, a.revision, head, a.outOfSync)
		}
	}

	// 6. The tenant out of Git.
	removed := time.Now()
	mustRun(t, s.env, "cluster/local/argocd.sh", "rm", "tenants/tenant-a", "tenant-a leaves")
	s.annotateUntilDone(t, applicationSetGVK, "ipsecgw-tenants", "argocd.argoproj.io/application-set-refresh", "true")
	eventually(t, "the ApplicationSet deletes Application "+tenantApp+", and it the claim", 5*time.Minute, func() (bool, string) {
		if a := s.get(t, applicationGVK, argoNS, tenantApp); a != nil {
			return false, "the Application exists"
		}
		return s.get(t, s.xr.gvk, tenant, pinned) == nil, "the claim exists"
	})
	s.waitClaimGone(t, pinned, removed)
	f, err := floatingips.Get(context.Background(), s.network, s.runbook.FloatingIPID).Extract()
	if err != nil {
		t.Fatalf("the pinned floating IP after the claim's deletion: %v", err)
	}
	if f.FloatingIP != s.runbook.FloatingIP {
		t.Errorf("the pinned floating IP's address is %s, want %s", f.FloatingIP, s.runbook.FloatingIP)
	}
	if n := s.count(t, neutronName); n != 0 {
		t.Errorf("after deleting the claim %d Neutron ports and security groups named %s remain", n, neutronName)
	}
}

// appStatus is what `argocd app get` shows of an Application, from its
// status.
type appStatus struct {
	sync, health, revision string
	// outOfSync names the resources that are not Synced.
	outOfSync []string
}

// app returns Application name; it fails t when there is none.
func (s *stack) app(t *testing.T, name string) *unstructured.Unstructured {
	t.Helper()
	a := s.get(t, applicationGVK, argoNS, name)
	if a == nil {
		t.Fatalf("no Application %s", name)
	}
	return a
}

// appStatus reads Application name's status.
func (s *stack) appStatus(t *testing.T, name string) appStatus {
	t.Helper()
	a := s.get(t, applicationGVK, argoNS, name)
	if a == nil {
		return appStatus{sync: "(no Application)"}
	}
	st := appStatus{sync: str(a, "status", "sync", "status"), health: str(a, "status", "health", "status"),
		revision: str(a, "status", "sync", "revision")}
	l, _, _ := unstructured.NestedSlice(a.Object, "status", "resources")
	for _, r := range l {
		m, _ := r.(map[string]any)
		if field(m, "status") != "Synced" {
			st.outOfSync = append(st.outOfSync, fmt.Sprintf("%s %s/%s %s", field(m, "kind"), field(m, "namespace"), field(m, "name"), field(m, "status")))
		}
	}
	return st
}

// waitApp waits until ok holds for Application name's status and returns
// how long that took.
func (s *stack) waitApp(t *testing.T, name string, timeout time.Duration, ok func(appStatus) bool) time.Duration {
	t.Helper()
	return eventually(t, "Application "+name, timeout, func() (bool, string) {
		a := s.appStatus(t, name)
		return ok(a), fmt.Sprintf("%+v", a)
	})
}

// resourceHealth returns the health status and message that Application
// app records for one of its resources (status.resources: the controller
// runs with --persist-resource-health).
func (s *stack) resourceHealth(t *testing.T, app, group, kind, ns, name string) (status, message string) {
	t.Helper()
	r := s.appResource(t, app, group, kind, ns, name)
	if r == nil {
		return "", fmt.Sprintf("Application %s has no %s %s", app, kind, name)
	}
	h, _ := r["health"].(map[string]any)
	return field(h, "status"), field(h, "message")
}

// appResource returns the entry of Application app's status.resources for
// the resource of group and kind named ns/name ("" ns: cluster-scoped),
// nil when there is none.
func (s *stack) appResource(t *testing.T, app, group, kind, ns, name string) map[string]any {
	t.Helper()
	a := s.get(t, applicationGVK, argoNS, app)
	if a == nil {
		return nil
	}
	l, _, _ := unstructured.NestedSlice(a.Object, "status", "resources")
	for _, r := range l {
		m, _ := r.(map[string]any)
		if field(m, "group") == group && field(m, "kind") == kind && field(m, "namespace") == ns && field(m, "name") == name {
			return m
		}
	}
	return nil
}

// field returns m[k] as a string, "" when it is absent.
func field(m map[string]any, k string) string {
	if v, ok := m[k]; ok && v != nil {
		return fmt.Sprint(v)
	}
	return ""
}

// refresh asks Argo CD to compare Application name with Git again (kind
// normal) or with its manifest cache dropped (hard), as `argocd app get
// --refresh` / `--hard-refresh` do, and waits until it has.
func (s *stack) refresh(t *testing.T, name, kind string) {
	t.Helper()
	s.annotateUntilDone(t, applicationGVK, name, "argocd.argoproj.io/refresh", kind)
}

// annotateUntilDone sets annotation key to value on Argo CD's object name
// of kind gvk, as Argo CD's webhook handler does to make a controller look
// at Git now, and waits until the controller has done so and removed it.
func (s *stack) annotateUntilDone(t *testing.T, gvk schema.GroupVersionKind, name, key, value string) {
	t.Helper()
	o := s.get(t, gvk, argoNS, name)
	if o == nil {
		t.Fatalf("no %s %s", gvk.Kind, name)
	}
	ann := o.GetAnnotations()
	if ann == nil {
		ann = map[string]string{}
	}
	ann[key] = value
	o.SetAnnotations(ann)
	if err := s.kube.Update(context.Background(), o); err != nil {
		t.Fatalf("annotate %s %s: %v", gvk.Kind, name, err)
	}
	eventually(t, "Argo CD refreshes "+gvk.Kind+" "+name, 2*time.Minute, func() (bool, string) {
		o := s.get(t, gvk, argoNS, name)
		if o == nil {
			return true, ""
		}
		_, pending := o.GetAnnotations()[key]
		return !pending, "annotation " + key + " is still there"
	})
}

// gitHead returns the commit the stack's repository's main is at.
func (s *stack) gitHead(t *testing.T) string {
	t.Helper()
	return strings.TrimSpace(mustRun(t, s.env, "cluster/local/argocd.sh", "head"))
}

// editGit rewrites file path of the work tree of the stack's repository
// with edit; argocd.sh commit commits and pushes it.
func (s *stack) editGit(t *testing.T, path string, edit func(string) string) {
	t.Helper()
	p := filepath.Join(s.state, "argocd", "gitops", path)
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	changed := edit(string(b))
	if changed == string(b) {
		t.Fatalf("the edit of %s changed nothing", path)
	}
	if err := os.WriteFile(p, []byte(changed), 0o644); err != nil {
		t.Fatal(err)
	}
}

// branchB is the tunnel step 4 of TestGitOps commits to the claim in Git:
// to a peer that never answers, which charon only responds to.
const branchB = `  - name: branch-b
    peer:
      address: 198.51.100.8
    ikeVersion: 2
    startAction: respond
    ikeProposals: [aes256-sha256-modp2048]
    espProposals: [aes256gcm16]
    preSharedKeySecretRef:
      name: branch-office-psk
      key: psk
    trafficSelectors:
    - local: 100.64.0.0/24
      remote: 192.168.20.0/24
`

// logTails logs the last 40 lines of each of the stack's logs names.
func logTails(t *testing.T, state string, names ...string) {
	for _, n := range names {
		if b, err := os.ReadFile(filepath.Join(state, n)); err == nil {
			lines := strings.Split(string(b), "\n")
			t.Logf("%s (last 40 lines):\n%s", n, strings.Join(lines[max(0, len(lines)-40):], "\n"))
		}
	}
}

// cutoverFromGit runs steps 3 and 4 of TestGitOps on s and returns the
// commit it pushed.
func cutoverFromGit(t *testing.T, s *stack) string {
	t.Helper()
	peer := siteCharon(t, s.state, "client")
	// 3. Cutover, as the runbook's steps.
	vmSA := peer.WaitSA(t, siteConn, 30*time.Second, topology.Up(siteConn))
	cutover := time.Now()
	s.setFIPPort(t, "")
	mustRun(t, s.env, "cluster/site/site.sh", "vm-stop")
	s.labelClaim(t)
	s.waitAttached(t, "cutover")
	gw := str(s.get(t, s.xr.gvk, tenant, pinned), "status", "gateway", "name")
	pod := s.readyPod(t, gw, 2*time.Minute)
	peer.WaitSA(t, siteConn, 2*time.Minute, newer(vmSA))
	took := eventually(t, "cutover: Argo CD's health for the claim is Healthy", 3*time.Minute, func() (bool, string) {
		st, msg := s.resourceHealth(t, tenantApp, "vpn.ipsecgw.io", "IPsecGateway", tenant, pinned)
		return st == "Healthy", st + ": " + msg
	})
	_, msg := s.resourceHealth(t, tenantApp, "vpn.ipsecgw.io", "IPsecGateway", tenant, pinned)
	t.Logf("cutover: the claim Healthy in Argo CD %s after the floating IP was unset on the VM's port (%s): %q",
		time.Since(cutover).Round(100*time.Millisecond), took.Round(100*time.Millisecond), msg)
	if !strings.Contains(msg, "tunnels 1/1 up") {
		t.Errorf("cutover: the claim's health message %q does not say its tunnel is up", msg)
	}
	s.waitApp(t, tenantApp, time.Minute, func(a appStatus) bool { return a.health == "Healthy" })

	// 4. A commit that changes the tunnels: a second one, branch-b.
	steady := steadySAs(t, peer, 2*time.Minute)
	before := s.renderedHash(t, gw)
	eventually(t, "the gateway's configuration loaded before the commit", time.Minute, func() (bool, string) {
		return s.loadedHash(t, gw) == before, "loaded " + s.loadedHash(t, gw) + ", rendered " + before
	})
	s.editGit(t, gitopsClaim, func(y string) string {
		i := strings.Index(y, "  exposures:\n")
		return y[:i] + branchB + y[i:]
	})
	commit := mustRun(t, s.env, "cluster/local/argocd.sh", "commit", "tenant-a: tunnel branch-b")
	head := strings.TrimSpace(commit)
	committed := time.Now()
	// What a Git webhook would do: ask Argo CD to look at Git now.
	s.refresh(t, tenantApp, "normal")
	s.waitApp(t, tenantApp, 3*time.Minute, func(a appStatus) bool { return a.sync == "Synced" && a.revision == head })
	synced := time.Since(committed)
	var now string
	eventually(t, "the commit's tunnel reaches the gateway's ConfigMap", 2*time.Minute, func() (bool, string) {
		now = s.renderedHash(t, gw)
		return now != before, "the ConfigMap is unchanged"
	})
	rendered := time.Since(committed)
	eventually(t, "the agent reports the commit's configuration loaded", time.Minute, func() (bool, string) {
		return s.loadedHash(t, gw) == now, "loaded " + s.loadedHash(t, gw) + ", rendered " + now
	})
	t.Logf("commit %s: the Application Synced at it %s after the push, the gateway's ConfigMap %s, loaded by the agent %s",
		head[:8], synced.Round(100*time.Millisecond), rendered.Round(100*time.Millisecond), time.Since(committed).Round(100*time.Millisecond))
	if conns := s.kubectl(t, "-n", tenant, "exec", pod.Name, "-c", "strongswan", "--", "swanctl", "--list-conns"); !strings.Contains(conns, "branch-b:") {
		t.Errorf("the commit's tunnel branch-b is not loaded in the running charon:\n%s", conns)
	}
	if l := s.pods(t, gw); len(l) != 1 || l[0].UID != pod.UID {
		t.Errorf("the commit replaced the gateway pod %s (UID %s): %d pods after, it must be loaded live", pod.Name, pod.UID, len(l))
	}
	peer.WaitSA(t, siteConn, 30*time.Second, topology.Up(siteConn))
	if after := clientSAs(t, peer); saIDs(after) != saIDs(steady) {
		t.Errorf("the commit changed the client's IKE SAs of branch-a %s to %s: they must stay", saList(steady), saList(after))
	}
	eventually(t, "the claim shows the commit's configuration loaded", 3*time.Minute, func() (bool, string) {
		c := s.get(t, s.xr.gvk, tenant, pinned)
		h, l := str(c, "status", "gateway", "configHash"), str(c, "status", "gateway", "loadedConfigHash")
		return h == now && l == now, "configHash " + h + ", loadedConfigHash " + l + ", want " + now
	})
	return head
}
