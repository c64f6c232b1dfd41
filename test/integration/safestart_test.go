//go:build integration

package integration

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
	"github.com/go-logr/logr"
	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/networks"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	netv1alpha1 "github.com/ipsecgw/provider-ipsec/apis/cluster/networking/v1alpha1"
	"github.com/ipsecgw/provider-ipsec/internal/clients/openstack"
)

// networkCRDs are the files of the Networks' CRDs (both scopes): the kind
// TestSafeStart leaves out of the API server at first, as Crossplane does
// with a kind no activation policy names.
var networkCRDs = []string{"networking.ipsecgw.io_networks.yaml", "networking.m.ipsecgw.io_networks.yaml"}

// TestSafeStart runs the provider, a real process (the cmd/provider
// binary), on an API server of its own that has every CRD of the provider's
// package but the Networks', as Crossplane leaves a kind of a package with
// the safe-start capability that no ManagedResourceActivationPolicy names
// (its ManagedResourceDefinition inactive, no CRD). The provider must
// start, become ready and run the controllers of the other kinds, and run
// none for the Networks, without an error; once the Networks' CRDs are
// installed (Crossplane activating them), it must start their controllers
// without a restart, and a Network must be created in the real Neutron,
// become Ready, and be deleted from it. (test/e2e's safeStart checks the
// same with Crossplane's own activation on the local stack.)
func TestSafeStart(t *testing.T) {
	e := startOpenStack(t)
	ctx := context.Background()
	dir := t.TempDir()

	bin := filepath.Join(dir, "provider")
	buildProvider(t, bin)

	// An API server of the provider's own, without the Networks' CRDs.
	ctrllog.SetLogger(logr.Discard())
	files, err := filepath.Glob(filepath.Join(crdDir, "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	files = slices.DeleteFunc(files, func(f string) bool { return slices.Contains(networkCRDs, filepath.Base(f)) })
	kcfg := filepath.Join(dir, "kubeconfig")
	env := &envtest.Environment{CRDInstallOptions: envtest.CRDInstallOptions{Paths: append(files, thirdPartyCRDDir), ErrorIfPathMissing: true}}
	own := providerAPIServer(t, env, "an envtest of the test's own", kcfg)
	pc := providerCredentials(t, own, e, "")

	// The provider, with its metrics and probes on loopback ports of its
	// own; stopped (and its log shown on failure) when the test ends.
	metrics, health := freePort(t), freePort(t)
	logFile := filepath.Join(dir, "provider.log")
	p := runProvider(t, bin, kcfg, logFile, "--debug", "--metrics-bind-address="+metrics, "--health-probe-bind-address="+health)
	alive := func() { p.alive(t) }

	// 1. The Networks inactive: the provider is ready and runs the other
	// kinds' controllers, none of the Networks', and keeps running.
	start := time.Now()
	eventually(t, 60*time.Second, "the provider ready", func() error {
		alive()
		return httpOK(health, "/readyz")
	})
	eventually(t, 30*time.Second, "the SecurityGroup controller", func() error {
		alive()
		return runsController(metrics, "managed/securitygroup.networking.ipsecgw.io")
	})
	t.Logf("safe start: the provider ready and its active kinds' controllers running %s after its start", time.Since(start).Round(100*time.Millisecond))
	time.Sleep(3 * time.Second)
	alive()
	for _, c := range []string{"managed/network.networking.ipsecgw.io", "managed/network.networking.m.ipsecgw.io"} {
		if runsController(metrics, c) == nil {
			t.Errorf("the provider runs %s, the controller of a kind without a CRD", c)
		}
	}
	if b, _ := os.ReadFile(logFile); strings.Contains(string(b), "ERROR") {
		t.Errorf("the provider logged an error with the Networks inactive")
	}

	// 2. The Networks' CRDs installed: their controllers start, a Network
	// is reconciled.
	var add []string
	for _, f := range networkCRDs {
		add = append(add, filepath.Join(crdDir, f))
	}
	start = time.Now()
	if _, err := envtest.InstallCRDs(env.Config, envtest.CRDInstallOptions{Paths: add, ErrorIfPathMissing: true}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 60*time.Second, "the Networks' controllers", func() error {
		alive()
		if err := runsController(metrics, "managed/network.networking.ipsecgw.io"); err != nil {
			return err
		}
		return runsController(metrics, "managed/network.networking.m.ipsecgw.io")
	})
	t.Logf("safe start: the Networks' controllers running %s after their CRDs were installed", time.Since(start).Round(100*time.Millisecond))

	network := &netv1alpha1.Network{ObjectMeta: metav1.ObjectMeta{Name: "safe-start"}}
	network.Spec.ForProvider = netv1alpha1.NetworkParameters{Name: ptr.To("itest-safe-start")}
	network.Spec.ProviderConfigReference = &xpv2.Reference{Name: "openstack"}
	if err := own.Create(ctx, network); err != nil {
		t.Fatal(err)
	}
	sc, err := openstack.NewClients().Network(ctx, own, pc)
	if err != nil {
		t.Fatal(err)
	}
	var id string
	t.Cleanup(func() {
		if id != "" {
			_ = networks.Delete(ctx, sc, id).ExtractErr()
		}
	})
	start = time.Now()
	eventually(t, 60*time.Second, "the Network Ready", func() error {
		alive()
		n := &netv1alpha1.Network{}
		if err := own.Get(ctx, client.ObjectKeyFromObject(network), n); err != nil {
			return err
		}
		id = n.Status.AtProvider.ID
		if c := n.GetCondition(xpv2.TypeReady); c.Status != corev1.ConditionTrue || id == "" {
			return fmt.Errorf("Ready %s %s; Synced %s", c.Status, c.Message, n.GetCondition(xpv2.TypeSynced).Message)
		}
		return nil
	})
	t.Logf("safe start: the Network Ready %s after its creation", time.Since(start).Round(100*time.Millisecond))
	if got, err := networks.Get(ctx, sc, id).Extract(); err != nil || got.Name != "itest-safe-start" {
		t.Errorf("the Network's Neutron network %s: %+v, %v", id, got, err)
	}
	if err := own.Delete(ctx, network); err != nil {
		t.Fatal(err)
	}
	eventually(t, 60*time.Second, "the Network deleted", func() error {
		alive()
		err := own.Get(ctx, client.ObjectKeyFromObject(network), &netv1alpha1.Network{})
		if err == nil {
			return fmt.Errorf("it exists")
		}
		return client.IgnoreNotFound(err)
	})
	if _, err := networks.Get(ctx, sc, id).Extract(); !gophercloud.ResponseCodeIs(err, 404) {
		t.Errorf("the deleted Network's Neutron network %s: %v, want 404", id, err)
	}
}

// freePort returns a loopback address with a port that was free a moment
// ago.
func freePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// httpOK fails unless GET http://addr/path answers 200.
func httpOK(addr, path string) error {
	resp, err := http.Get("http://" + addr + path)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", path, resp.Status)
	}
	return nil
}

// runsController fails unless the provider whose metrics are on addr runs the
// controller named name: controller-runtime publishes its
// max_concurrent_reconciles when it starts.
func runsController(addr, name string) error {
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	want := `controller_runtime_max_concurrent_reconciles{controller="` + name + `"}`
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), want) {
			return nil
		}
	}
	return fmt.Errorf("no controller %s", name)
}
