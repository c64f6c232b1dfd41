//go:build e2e

package e2e

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ipsecgw/provider-ipsec/apis/cluster/v1alpha1"
	"github.com/ipsecgw/provider-ipsec/internal/clients/openstack"
)

// root is the repository's top directory.
var root, _ = filepath.Abs(filepath.Join("..", ".."))

// stack is the local stack one test brought up.
type stack struct {
	// env is the environment of the stack's scripts: state directories
	// of the test's own (the stack chooses free ports in them).
	env []string
	// state is the local stack's state directory.
	state string
	// xpMetricsPort is the port of Crossplane's metrics on loopback.
	xpMetricsPort string
	kube          client.Client
	// network is a Neutron client with the credentials of the
	// ProviderConfig "default", the tenant's.
	network *gophercloud.ServiceClient
	// runbook is what cluster/openstack/runbook.py vm-up printed.
	runbook vmUp
	// xr is the style of the IPsecGateway dev.sh applied last, the one the
	// tests call "the claim".
	xr composite
	// gatewayGone is when the gateway pod of the last runbook on the stack
	// was gone (TestLiveRunbook's rollback), zero before.
	gatewayGone time.Time
}

// vmUp is what cluster/openstack/runbook.py vm-up prints: the runbook's VM
// gateway port, its floating IP and the networks of the local Neutron.
type vmUp struct {
	VMPortID     string `json:"vm_port_id"`
	FloatingIP   string `json:"floating_ip"`
	FloatingIPID string `json:"floating_ip_id"`
	NetworkID    string `json:"network_id"`
	SubnetID     string `json:"subnet_id"`
	ExtNetID     string `json:"ext_net_id"`
}

// startStack runs cluster/local/dev.sh (the main job) on the test's own
// state and ports, with the settings extra (NAME=VALUE) added to its
// environment, and stops all of it when the test ends, also on failure.
// Each test's stack has state directories of its own (stateDir), so that
// the tests that bring one up run in parallel (go test's -parallel, the
// machine's cores by default).
func startStack(t *testing.T, extra ...string) *stack {
	t.Helper()
	return startStackWith(t, stackComposite(), extra...)
}

// startStackWith is startStack with the IPsecGateway of style xr
// pre-staged, whatever CLAIM says (TestGitOps: Argo CD syncs the legacy
// claim of examples/gitops).
func startStackWith(t *testing.T, xr composite, extra ...string) *stack {
	t.Helper()
	if os.Getuid() != 0 {
		t.Skip("the local Keystone + Neutron need root (cluster/openstack/up.sh)")
	}
	s := &stack{state: stateDir(t, "STATE", "e2e")}
	osState := stateDir(t, "OS_STATE", "e2e-openstack")
	s.env = append(os.Environ(), "STATE="+s.state, "OS_STATE="+osState)
	s.env = append(s.env, e2ePorts("ETCD_PORT", "APISERVER_PORT", "XP_METRICS_PORT", "XP_HEALTH_PORT", "FN_PORT",
		"PROVIDER_METRICS_PORT", "PROVIDER_HEALTH_PORT", "REGISTRY_PORT", "OS_KEYSTONE_PORT", "OS_NEUTRON_PORT")...)
	s.env = append(s.env, extra...)
	t.Cleanup(func() {
		if t.Failed() {
			// The bindings' spec and status: what a cutover or rollback
			// that did not come saw.
			if out, err := s.kubectlCommand("get", "floatingipbindings.networking.ipsecgw.io,floatingipbindings.networking.m.ipsecgw.io", "-A", "-o", "yaml").CombinedOutput(); err == nil {
				t.Logf("floating IP bindings:\n%s", out)
			}
			if b, err := os.ReadFile(filepath.Join(s.state, "provider.log")); err == nil {
				lines := strings.Split(string(b), "\n")
				t.Logf("provider log (last 40 lines):\n%s", strings.Join(lines[max(0, len(lines)-40):], "\n"))
			}
		}
		tryScript(t, s.env, "cluster/local/down.sh")
		tryScript(t, s.env, "cluster/openstack/down.sh")
		failedBringUp(t, s.state+".failed", true)
		failedBringUp(t, s.state+".argocd-failed", true)
		failedBringUp(t, osState+".failed", false)
		// cluster/openstack/up.sh's lock beside its state directory.
		if _, err := os.Stat(osState + ".lock"); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s.lock survived cluster/openstack/down.sh (%v)", osState, err)
		}
		// The node's and the site's network namespaces are named after the
		// state directory (cluster/node/lib.sh, cluster/site/site.sh).
		id := fmt.Sprintf("%x", sha256.Sum256([]byte(s.state)))[:8]
		left, _ := os.ReadDir("/run/netns")
		for _, e := range left {
			if strings.Contains(e.Name(), "-"+id) {
				t.Errorf("network namespace %s survived cluster/local/down.sh", e.Name())
			}
		}
	})
	s.devJob(t, xr)
	s.xpMetricsPort = stackPorts(t, s.state)["XP_METRICS_PORT"]
	s.kube = stackClient(t, s.state)
	pc := &v1alpha1.ProviderConfig{}
	var err error
	if err = s.kube.Get(context.Background(), client.ObjectKey{Name: "default"}, pc); err != nil {
		t.Fatal(err)
	}
	if s.network, err = openstack.NewClients().Network(context.Background(), s.kube, pc); err != nil {
		t.Fatal(err)
	}
	return s
}

// failedBringUps removes the directory dir in which a failed bring-up
// (cluster/lib.sh's on_failure: the stack's, Argo CD's, OpenStack's) kept
// its logs beside the state directories, which cluster/local/down.sh
// leaves: a test leaves no file behind. The test's log says which logs were
// there and, with show, the last lines of each (not OpenStack's, which may
// carry tokens).
func failedBringUp(t *testing.T, dir string, show bool) {
	t.Helper()
	if _, err := os.Stat(dir); err != nil {
		return
	}
	logs, _ := filepath.Glob(filepath.Join(dir, "*.log"))
	t.Logf("a failed bring-up kept its logs in %s: %v", dir, logs)
	for _, l := range logs {
		if b, err := os.ReadFile(l); err == nil && show {
			lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
			t.Logf("%s (last 20 lines):\n%s", filepath.Base(l), strings.Join(lines[max(0, len(lines)-20):], "\n"))
		}
	}
	if err := os.RemoveAll(dir); err != nil {
		t.Errorf("remove %s: %v", dir, err)
	}
}

// devJob runs cluster/local/dev.sh (`make dev`'s job, up to the pre-stage)
// with the pinned example of style xr on the stack: the first run brings
// the stack up; a later one leaves what runs as it is and starts the
// runbook over with xr's example, the floating IP on the VM's port and
// the VM's charon running (an IPsecGateway of the other style that pins
// the address must have been deleted).
func (s *stack) devJob(t *testing.T, xr composite) {
	t.Helper()
	start := time.Now()
	if out, err := runScript(append(slices.Clone(s.env), "CLAIM="+xr.claim), "cluster/local/dev.sh"); err != nil {
		t.Fatalf("CLAIM=%s cluster/local/dev.sh: %v\n%s", xr.claim, err, out)
	}
	s.xr = xr
	t.Logf("make dev's job (the %s pre-staged) took %s", xr.name, time.Since(start).Round(100*time.Millisecond))
	b, err := os.ReadFile(filepath.Join(s.state, "runbook.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &s.runbook); err != nil {
		t.Fatal(err)
	}
}

// stackClient is a client of the API server of the stack in state, as its
// admin, that knows the kinds of client-go and of the ProviderConfig.
func stackClient(t *testing.T, state string) client.Client {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", filepath.Join(state, "kubeconfig"))
	if err != nil {
		t.Fatal(err)
	}
	// The scale benchmark lists hundreds of claims every second.
	cfg.QPS, cfg.Burst = 50, 100
	sch := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(sch); err != nil {
		t.Fatal(err)
	}
	if err := v1alpha1.SchemeBuilder.AddToScheme(sch); err != nil {
		t.Fatal(err)
	}
	c, err := client.New(cfg, client.Options{Scheme: sch})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// stateDir is the state directory of t's stack of the kind base
// ("e2e", "e2e-openstack", ...): <E2E_name>-<test> when E2E_<name> is set,
// else .work/<base>-<test> in the checkout. The test's name in it keeps
// the stacks of tests running in parallel apart: their ports (chosen in
// ranges made from the state directory) and their node's and site's
// network namespaces and cgroups (named after it).
func stateDir(t *testing.T, name, base string) string {
	suffix := "-" + strings.ToLower(strings.TrimPrefix(t.Name(), "Test"))
	return e2eSetting(name, filepath.Join(root, ".work", base)) + suffix
}

// e2eSetting returns the environment variable E2E_<name> when it is set,
// else def: the stack's state directories and ports can be moved, so that
// the e2e can run beside another stack that uses the defaults.
func e2eSetting(name, def string) string {
	if v := os.Getenv("E2E_" + name); v != "" {
		return v
	}
	return def
}

// e2ePorts returns NAME=PORT for each of the stack's port settings names
// that is set as E2E_<NAME>; the others the stack chooses itself, free
// ports in a range made from its state directory (cluster/lib.sh's
// choose_ports), so that a second checkout's e2e runs beside this one's.
func e2ePorts(names ...string) []string {
	var env []string
	for _, n := range names {
		if v := os.Getenv("E2E_" + n); v != "" {
			env = append(env, n+"="+v)
		}
	}
	return env
}

// stackPorts returns the ports that the stack in state chose, by setting
// name (choose_ports' files: $STATE/ports and, with Argo CD,
// $STATE/argocd-ports, NAME=PORT lines).
func stackPorts(t *testing.T, state string) map[string]string {
	t.Helper()
	ports := map[string]string{}
	for _, f := range []string{"ports", "argocd-ports"} {
		b, err := os.ReadFile(filepath.Join(state, f))
		if errors.Is(err, os.ErrNotExist) && f != "ports" {
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		for l := range strings.Lines(string(b)) {
			k, v, _ := strings.Cut(strings.TrimSpace(l), "=")
			ports[k] = v
		}
	}
	return ports
}

// runScript runs a repository script with environment env and returns
// its standard output, and its error output too when it fails.
func runScript(env []string, script string, args ...string) (string, error) {
	cmd := exec.Command(filepath.Join(root, script), args...)
	cmd.Env = env
	out, err := cmd.Output()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return string(out) + string(ee.Stderr), err
	}
	return string(out), err
}

// mustRun runs a repository script with environment env and stops the test
// when it fails.
func mustRun(t *testing.T, env []string, script string, args ...string) string {
	t.Helper()
	out, err := runScript(env, script, args...)
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", script, strings.Join(args, " "), err, out)
	}
	return out
}

// tryScript runs a repository script with environment env and reports its
// failure without stopping the test (for cleanups).
func tryScript(t *testing.T, env []string, script string, args ...string) {
	if out, err := runScript(env, script, args...); err != nil {
		t.Errorf("%s %s: %v\n%s", script, strings.Join(args, " "), err, out)
	}
}

// eventually polls cond every 200 ms until it returns true, and fails the
// test after timeout with what cond last said. It returns the time taken.
func eventually(t *testing.T, what string, timeout time.Duration, cond func() (bool, string)) time.Duration {
	t.Helper()
	return eventuallyEvery(t, 200*time.Millisecond, what, timeout, cond)
}

// eventuallyEvery is eventually with cond tried every interval.
func eventuallyEvery(t *testing.T, interval time.Duration, what string, timeout time.Duration, cond func() (bool, string)) time.Duration {
	t.Helper()
	start := time.Now()
	var last string
	for time.Since(start) < timeout {
		var ok bool
		if ok, last = cond(); ok {
			return time.Since(start)
		}
		time.Sleep(interval)
	}
	t.Fatalf("%s: not after %s; last: %s", what, timeout, last)
	return 0
}

// composite is one style of IPsecGateway, the object a tenant writes and
// the tests call "the claim": dev.sh applies one (its CLAIM) as the
// runbook's pinned example.
type composite struct {
	// name names the style in subtests and logs.
	name string
	// claim is dev.sh's CLAIM that applies it.
	claim string
	// examples is the folder of its examples under examples/.
	examples string
	// gvk is the kind the tenant writes.
	gvk schema.GroupVersionKind
	// crd is the composite's CRD, which names Crossplane's controller of
	// it.
	crd string
	// networking and gateway are the groups of the managed resources it
	// is composed of, composedIn their namespace ("": cluster-scoped).
	networking, gateway, composedIn string
	// nameLabel is the label with which Crossplane marks each managed
	// resource composed for it with its name.
	nameLabel string
}

var (
	// namespacedXR is the namespaced IPsecGateway (vpn.m.ipsecgw.io, no
	// claim), composed of the namespaced managed resources: dev.sh's
	// default.
	namespacedXR = composite{name: "namespaced IPsecGateway", claim: "0", examples: "xr",
		gvk: schema.GroupVersionKind{Group: "vpn.m.ipsecgw.io", Version: "v1alpha1", Kind: "IPsecGateway"},
		crd: "ipsecgateways.vpn.m.ipsecgw.io", networking: "networking.m.ipsecgw.io", gateway: "gateway.m.ipsecgw.io", composedIn: tenant,
		nameLabel: "crossplane.io/composite"}
	// legacyClaim is the IPsecGateway claim of the legacy XRD
	// (vpn.ipsecgw.io), whose cluster-scoped composite is composed of the
	// cluster-scoped managed resources: dev.sh's CLAIM=1.
	legacyClaim = composite{name: "legacy claim", claim: "1", examples: "claim",
		gvk: schema.GroupVersionKind{Group: "vpn.ipsecgw.io", Version: "v1alpha1", Kind: "IPsecGateway"},
		crd: "xipsecgateways.vpn.ipsecgw.io", networking: "networking.ipsecgw.io", gateway: "gateway.ipsecgw.io",
		nameLabel: "crossplane.io/claim-name"}
)

// composites are the styles of IPsecGateway, the one the environment's
// CLAIM selects (stackComposite, which startStack's dev.sh applies) first.
func composites() []composite {
	if stackComposite() == legacyClaim {
		return []composite{legacyClaim, namespacedXR}
	}
	return []composite{namespacedXR, legacyClaim}
}

// stackComposite is the style the environment's CLAIM selects, as dev.sh
// reads it: 1 the legacy claim, else the namespaced IPsecGateway.
func stackComposite() composite {
	if os.Getenv("CLAIM") == legacyClaim.claim {
		return legacyClaim
	}
	return namespacedXR
}

// managedKinds are the kinds the Composition may compose for c.
func (c composite) managedKinds() []schema.GroupVersionKind {
	return []schema.GroupVersionKind{
		{Group: c.networking, Version: "v1alpha1", Kind: "SecurityGroup"},
		{Group: c.networking, Version: "v1alpha1", Kind: "Port"},
		{Group: c.networking, Version: "v1alpha1", Kind: "FloatingIPBinding"},
		{Group: c.networking, Version: "v1alpha1", Kind: "RouterRoutes"},
		{Group: c.networking, Version: "v1alpha1", Kind: "NodeAddressPairs"},
		{Group: c.gateway, Version: "v1alpha1", Kind: "Gateway"},
	}
}

// composedGateway returns the Gateway named gw composed for the stack's
// IPsecGateway, nil when there is none.
func (s *stack) composedGateway(t *testing.T, gw string) *unstructured.Unstructured {
	t.Helper()
	return s.get(t, schema.GroupVersionKind{Group: s.xr.gateway, Version: "v1alpha1", Kind: "Gateway"}, s.xr.composedIn, gw)
}

// composedBy selects the managed resources composed for the IPsecGateway
// of style c named name.
func (c composite) composedBy(name string) client.MatchingLabels {
	return client.MatchingLabels{c.nameLabel: name}
}

// get reads an object into an unstructured of gvk; it returns nil when
// it does not exist.
func (s *stack) get(t *testing.T, gvk schema.GroupVersionKind, ns, name string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	if err := s.kube.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, u); err != nil {
		if client.IgnoreNotFound(err) == nil {
			return nil
		}
		t.Fatalf("get %s %s/%s: %v", gvk.Kind, ns, name, err)
	}
	return u
}

// str returns the string at path in u, "" when there is none.
func str(u *unstructured.Unstructured, path ...string) string {
	v, _, _ := unstructured.NestedFieldNoCopy(u.Object, path...)
	if v == nil {
		return ""
	}
	return fmt.Sprint(v)
}

// condition returns the status and message of the condition of type typ in
// the conditions list at path in u.
func condition(u *unstructured.Unstructured, typ string, path ...string) (status, message string) {
	l, _, _ := unstructured.NestedSlice(u.Object, path...)
	for _, c := range l {
		m, _ := c.(map[string]any)
		if m["type"] == typ {
			return fmt.Sprint(m["status"]), fmt.Sprint(m["message"])
		}
	}
	return "", ""
}
