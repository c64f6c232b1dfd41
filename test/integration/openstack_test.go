//go:build integration

package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	"github.com/gophercloud/gophercloud/v2"
	corev1 "k8s.io/api/core/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ipsecgw/provider-ipsec/apis/cluster/v1alpha1"
	"github.com/ipsecgw/provider-ipsec/internal/clients/openstack"
)

// openStackEnv is a real Keystone and Neutron API started by
// cluster/openstack/up.sh for these tests, with its fixtures.
type openStackEnv struct {
	// State is the scripts' OS_STATE; down.sh removes it.
	State string
	// KeystonePort and NeutronPort are the loopback ports of its
	// Keystone and Neutron.
	KeystonePort, NeutronPort int
	// ProviderConfig names the ProviderConfig of tenant-a's password
	// on this Keystone and Neutron.
	ProviderConfig string
	Fixtures       struct {
		NeutronURL string  `json:"neutron_url"`
		Project    fixture `json:"project"`
		ExtNet     fixture `json:"ext_net"`
		ExtSubnet  fixture `json:"ext_subnet"`
		TenantNet  fixture `json:"tenant_net"`
		TenantSub  fixture `json:"tenant_subnet"`
		Router     fixture `json:"router"`
	}
	// CloudsYAML is the clouds.yaml document with clouds tenant-a
	// (password), tenant-a-appcred and admin.
	CloudsYAML []byte
	// Clients is the provider's OpenStack client cache, counting every
	// request it sends in Requests.
	Clients  *openstack.Clients
	Requests atomic.Int64
}

// fixture is one object of fixtures.json: its ID and, for a subnet, CIDR.
type fixture struct {
	ID   string `json:"id"`
	CIDR string `json:"cidr"`
}

var (
	osOnce sync.Once
	osEnv  *openStackEnv
	osErr  error
	// osSkip is why OpenStack tests skip, if they do.
	osSkip string
)

// stopOpenStack stops what startOpenStack and startAgents started;
// TestMain calls it.
func stopOpenStack() {
	if agentsEnv != nil {
		agentsRouters = loggedRouters(agentsEnv.State)
	}
	for _, e := range []*openStackEnv{agentsEnv, osEnv} {
		if e != nil {
			e.stop()
		}
	}
}

// stop runs down.sh for e, saying on stderr when it fails.
func (e *openStackEnv) stop() {
	cmd := exec.Command(filepath.Join(repoRoot, "cluster", "openstack", "down.sh"))
	cmd.Env = e.env()
	if out, err := cmd.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "cluster/openstack/down.sh: %v\n%s", err, out)
	}
}

var repoRoot = filepath.Join("..", "..")

// openStackState returns the state directory of upOpenStack's instance
// name on neutronPort, .work/<name>-<port>, absolute (repoRoot becomes
// absolute too): what cluster/openstack names the instance's namespaces
// after.
func openStackState(name string, neutronPort int) (string, error) {
	root, err := filepath.Abs(repoRoot)
	if err != nil {
		return "", err
	}
	repoRoot = root
	return filepath.Join(root, ".work", name+"-"+strconv.Itoa(neutronPort)), nil
}

func (e *openStackEnv) env() []string {
	return append(os.Environ(), "OS_STATE="+e.State,
		"OS_KEYSTONE_PORT="+strconv.Itoa(e.KeystonePort), "OS_NEUTRON_PORT="+strconv.Itoa(e.NeutronPort))
}

// itestPort is the port the environment variable k names, def when unset
// or not a number.
func itestPort(k string, def int) int {
	if p, err := strconv.Atoi(os.Getenv(k)); err == nil {
		return p
	}
	return def
}

// upOpenStack starts Keystone and Neutron (cluster/openstack/up.sh, with
// the extra environment env) in state directory .work/<name>-<Neutron's
// port> on the given ports, and loads its fixtures.
func upOpenStack(name string, keystonePort, neutronPort int, env ...string) (*openStackEnv, error) {
	state, err := openStackState(name, neutronPort)
	if err != nil {
		return nil, err
	}
	e := &openStackEnv{State: state, KeystonePort: keystonePort, NeutronPort: neutronPort}
	cmd := exec.Command(filepath.Join(repoRoot, "cluster", "openstack", "up.sh"))
	cmd.Env = append(e.env(), env...)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return e, fmt.Errorf("cluster/openstack/up.sh: %w", err)
	}
	return e, e.load()
}

// startOpenStack starts Keystone and Neutron once for the package, on
// ports of their own (ITEST_KEYSTONE_PORT, ITEST_NEUTRON_PORT; default
// 15000 and 19696, so that a developer's make openstack-up is untouched),
// and creates the ProviderConfigs default (password) and appcred
// (application credential). It skips t when not root.
func startOpenStack(t *testing.T) *openStackEnv {
	t.Helper()
	osOnce.Do(func() {
		if os.Geteuid() != 0 {
			osSkip = "the real Keystone and Neutron need root to install and start: run the tests as root"
			return
		}
		if osEnv, osErr = upOpenStack("itest-openstack", itestPort("ITEST_KEYSTONE_PORT", 15000), itestPort("ITEST_NEUTRON_PORT", 19696)); osErr != nil {
			return
		}
		osErr = osEnv.providerConfigs()
	})
	switch {
	case osSkip != "":
		t.Skip(osSkip)
	case osErr != nil:
		t.Fatalf("cannot start OpenStack: %v", osErr)
	}
	return osEnv
}

func (e *openStackEnv) load() error {
	b, err := os.ReadFile(filepath.Join(e.State, "fixtures.json"))
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, &e.Fixtures); err != nil {
		return fmt.Errorf("fixtures.json: %w", err)
	}
	if e.CloudsYAML, err = os.ReadFile(filepath.Join(e.State, "clouds.yaml")); err != nil {
		return err
	}
	e.Clients = openstack.NewClients()
	e.Clients.Transport = func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(r *http.Request) (*http.Response, error) {
			e.Requests.Add(1)
			resp, err := rt.RoundTrip(r)
			if os.Getenv("ITEST_TRACE") != "" && err == nil {
				fmt.Fprintf(os.Stderr, "openstack: %s %s -> %d\n", r.Method, r.URL, resp.StatusCode)
			}
			return resp, err
		})
	}
	return nil
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// providerConfigs creates the credentials Secret openstack-clouds and two
// ProviderConfigs, openstack (password) and openstack-appcred.
func (e *openStackEnv) providerConfigs() error {
	return e.providerConfigsNamed("openstack-clouds", "openstack", map[string]string{"openstack-appcred": "tenant-a-appcred"})
}

// providerConfigsNamed creates the credentials Secret secret in
// crossplane-system, the ProviderConfig pc of tenant-a's password (which
// becomes e.ProviderConfig) and one per name in more using its cloud.
func (e *openStackEnv) providerConfigsNamed(secret, pc string, more map[string]string) error {
	e.ProviderConfig = pc
	pcs := map[string]string{pc: "tenant-a"}
	maps.Copy(pcs, more)
	ctx := context.Background()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "crossplane-system"}}
	if err := kube.Create(ctx, ns); err != nil && !kerrors.IsAlreadyExists(err) {
		return err
	}
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "crossplane-system", Name: secret},
		Data: map[string][]byte{"clouds.yaml": e.CloudsYAML}}
	if err := kube.Create(ctx, s); err != nil {
		return err
	}
	ref := secretRef(secret, "clouds.yaml")
	ref.Namespace = "crossplane-system"
	for name, cloud := range pcs {
		pc := &v1alpha1.ProviderConfig{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1alpha1.ProviderConfigSpec{
			Credentials: v1alpha1.OpenStackCredentials{SecretRef: ref, Cloud: cloud},
		}}
		if err := kube.Create(ctx, pc); err != nil {
			return err
		}
	}
	return nil
}

// ownNetwork returns a Neutron client of the ProviderConfig "openstack"
// whose requests, and only those, the returned counter counts: a
// measurement taken with it is not disturbed by the controllers' polls.
func ownNetwork(t *testing.T) (*gophercloud.ServiceClient, *atomic.Int64) {
	t.Helper()
	n := &atomic.Int64{}
	c := openstack.NewClients()
	c.Transport = func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(r *http.Request) (*http.Response, error) {
			n.Add(1)
			return rt.RoundTrip(r)
		})
	}
	pc := &v1alpha1.ProviderConfig{}
	if err := kube.Get(context.Background(), client.ObjectKey{Name: "openstack"}, pc); err != nil {
		t.Fatal(err)
	}
	sc, err := c.Network(context.Background(), kube, pc)
	if err != nil {
		t.Fatal(err)
	}
	n.Store(0)
	return sc, n
}

// createdFor returns the IDs of every Neutron object of c that carries
// mg's marker in its description (openstack.Mark): what the provider
// created for mg, twins included.
func createdFor(t *testing.T, sc *gophercloud.ServiceClient, c openstack.Collection, mg client.Object) []string {
	t.Helper()
	return idsWhere(t, sc, c, func(desc string) bool {
		_, marked := openstack.Unmark(mg, desc)
		return marked
	})
}

// idsWhere returns the IDs of the Neutron objects of c whose description
// keep says to keep (one list of their IDs and descriptions); none, with
// t failed, when the list fails.
func idsWhere(t *testing.T, sc *gophercloud.ServiceClient, c openstack.Collection, keep func(desc string) bool) []string {
	t.Helper()
	var body map[string][]struct{ ID, Description string }
	if _, err := sc.Get(context.Background(), sc.ServiceURL(c.Path)+"?fields=id&fields=description", &body, nil); err != nil { //nolint:bodyclose // gophercloud reads and closes the body
		t.Errorf("list %s: %v", c.Path, err)
		return nil
	}
	var ids []string
	for _, o := range body[c.Key] {
		if keep(o.Description) {
			ids = append(ids, o.ID)
		}
	}
	return ids
}

// leaveCreatePending writes on mg what a provider killed during Create
// leaves: the external-create-pending annotation newer than any outcome,
// and no external name.
func leaveCreatePending(t *testing.T, mg client.Object) {
	t.Helper()
	eventually(t, 10*time.Second, "mark "+mg.GetName()+" as killed during Create", func() error {
		if err := kube.Get(context.Background(), client.ObjectKeyFromObject(mg), mg); err != nil {
			return err
		}
		meta.SetExternalCreatePending(mg, time.Now())
		return kube.Update(context.Background(), mg)
	})
}
