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
	// and ports of the test's own.
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
func startStack(t *testing.T, extra ...string) *stack {
	t.Helper()
	if os.Getuid() != 0 {
		t.Skip("the local Keystone + Neutron need root (cluster/openstack/up.sh)")
	}
	s := &stack{state: e2eSetting("STATE", filepath.Join(root, ".work", "e2e-runbook")),
		xpMetricsPort: e2eSetting("XP_METRICS_PORT", "27080")}
	s.env = append(os.Environ(),
		"STATE="+s.state, "OS_STATE="+e2eSetting("OS_STATE", filepath.Join(root, ".work", "e2e-runbook-openstack")),
		"XP_METRICS_PORT="+s.xpMetricsPort)
	for _, v := range [][2]string{
		{"ETCD_PORT", "23379"}, {"APISERVER_PORT", "27443"}, {"XP_HEALTH_PORT", "27081"},
		{"FN_PORT", "29445"}, {"PROVIDER_METRICS_PORT", "27082"}, {"PROVIDER_HEALTH_PORT", "27083"},
		{"REGISTRY_PORT", "27084"},
		{"OS_KEYSTONE_PORT", "15300"}, {"OS_NEUTRON_PORT", "19996"},
	} {
		s.env = append(s.env, v[0]+"="+e2eSetting(v[0], v[1]))
	}
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
	start := time.Now()
	if out, err := runScript(s.env, "cluster/local/dev.sh"); err != nil {
		t.Fatalf("cluster/local/dev.sh: %v\n%s", err, out)
	}
	t.Logf("make dev's job (stack up, claim pre-staged) took %s", time.Since(start).Round(100*time.Millisecond))

	s.kube = stackClient(t, s.state)
	pc := &v1alpha1.ProviderConfig{}
	var err error
	if err = s.kube.Get(context.Background(), client.ObjectKey{Name: "default"}, pc); err != nil {
		t.Fatal(err)
	}
	if s.network, err = openstack.NewClients().Network(context.Background(), s.kube, pc); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(s.state, "runbook.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &s.runbook); err != nil {
		t.Fatal(err)
	}
	return s
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

// e2eSetting returns the environment variable E2E_<name> when it is set,
// else def: the stack's state directories and ports can be moved, so that
// the e2e can run beside another stack that uses the defaults.
func e2eSetting(name, def string) string {
	if v := os.Getenv("E2E_" + name); v != "" {
		return v
	}
	return def
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

// legacyClaim says whether the stack runs the legacy IPsecGateway claim
// (the default) or, with CLAIM=0 (which dev.sh reads too), the namespaced
// IPsecGateway (vpn.m.ipsecgw.io), which composes the namespaced managed
// resources.
var legacyClaim = os.Getenv("CLAIM") != "0"

// claimGVK is the kind of the IPsecGateway the stack runs (the tests call
// either "the claim"): the legacy claim, or with CLAIM=0 the namespaced
// composite.
var claimGVK = func() schema.GroupVersionKind {
	if legacyClaim {
		return schema.GroupVersionKind{Group: "vpn.ipsecgw.io", Version: "v1alpha1", Kind: "IPsecGateway"}
	}
	return schema.GroupVersionKind{Group: "vpn.m.ipsecgw.io", Version: "v1alpha1", Kind: "IPsecGateway"}
}()

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
