//go:build integration

package integration

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
	"github.com/go-logr/logr"
	"github.com/gophercloud/gophercloud/v2"
	gopenstack "github.com/gophercloud/gophercloud/v2/openstack"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	netv1alpha1 "github.com/ipsecgw/provider-ipsec/apis/cluster/networking/v1alpha1"
	pcv1alpha1 "github.com/ipsecgw/provider-ipsec/apis/cluster/v1alpha1"
	"github.com/ipsecgw/provider-ipsec/internal/clients/openstack"
	"github.com/ipsecgw/provider-ipsec/test/neutronproxy"
)

// TestCrashSafeCreateKilled kills the provider, a real process (the
// cmd/provider binary) on an API server of its own, at random points of
// creating Neutron objects, and cuts create answers, for ITEST_CRASH_ROUNDS
// rounds (3 by default; hack/crash-rounds.sh runs 50 and prints the
// figures). Its Neutron requests go through a proxy the test starts on
// loopback, registered in Keystone as the endpoint of a region of its own:
// the proxy forwards every request, and for a random share of the create
// POSTs it lets Neutron complete the POST and then either closes the
// connection without the answer (a lost answer) or SIGKILLs the provider
// first (killed between the POST and saving the ID), or it forwards the
// answer and SIGKILLs the provider 0-20 ms later (killed while saving the
// ID); other kills come at random times 0.2-6 s into a round, and once
// during the deletion.
//
// Each round applies what a claim composes (a SecurityGroup, a Port using
// it, an allocated FloatingIPBinding on the Port) and a Network, all at
// once as Crossplane does, waits until all are Ready, and counts the
// Neutron objects carrying each MR's marker: exactly one, the one named by
// its external name. Then it deletes the MRs, which must all be gone within
// the timeout (a twin port would keep the security group in use for ever),
// and counts again: none. The claim is Crossplane's composition of these
// MRs, and its deletion completes when theirs do; what a kill can break is
// all in the provider's creates and deletes, which this drives through the
// same MRs, so the MRs alone prove what the claim would.
func TestCrashSafeCreateKilled(t *testing.T) {
	e := startOpenStack(t)
	rounds := 3
	if v := os.Getenv("ITEST_CRASH_ROUNDS"); v != "" {
		var err error
		if rounds, err = strconv.Atoi(v); err != nil {
			t.Fatalf("ITEST_CRASH_ROUNDS=%q: %v", v, err)
		}
	}
	seed := uint64(time.Now().UnixNano())
	if v := os.Getenv("ITEST_CRASH_SEED"); v != "" {
		seed, _ = strconv.ParseUint(v, 10, 64)
	}
	t.Logf("seed %d (ITEST_CRASH_SEED reproduces the choices)", seed)
	rnd := rand.New(rand.NewPCG(seed, seed))
	sc := neutron(t, e)

	c := newCrashRig(t, e, rnd)
	var total crashFigures
	start := time.Now()
	for r := 1; r <= rounds; r++ {
		f := c.round(t, sc, r)
		total.add(f)
		t.Logf("round %d: %s", r, &f)
		if t.Failed() {
			break
		}
	}
	t.Logf("CRASH-SAFE CREATE: %d rounds in %s (%.1f s/round): %s", rounds, time.Since(start).Round(time.Second),
		time.Since(start).Seconds()/float64(rounds), &total)
}

// crashFigures are what rounds measured.
type crashFigures struct {
	kills, killsAtPOST, killsAfterAnswer, cuts, posts int
	objects, twins, missing                           int
	leftovers                                         int
	ready, deleted                                    time.Duration
}

func (f *crashFigures) add(o crashFigures) {
	f.kills += o.kills
	f.killsAtPOST += o.killsAtPOST
	f.killsAfterAnswer += o.killsAfterAnswer
	f.cuts += o.cuts
	f.posts += o.posts
	f.objects += o.objects
	f.twins += o.twins
	f.missing += o.missing
	f.leftovers += o.leftovers
	f.ready += o.ready
	f.deleted += o.deleted
}

func (f *crashFigures) String() string {
	return fmt.Sprintf("%d create POSTs, %d kills (%d right after Neutron completed a POST, %d 0-20 ms after its answer), %d answers cut; "+
		"%d Neutron objects counted for the MRs at Ready, %d twins among them (each gone within the twin check), %d missing, %d left after deletion; Ready after %s, deleted after %s",
		f.posts, f.kills, f.killsAtPOST, f.killsAfterAnswer, f.cuts, f.objects, f.twins, f.missing, f.leftovers,
		f.ready.Round(100*time.Millisecond), f.deleted.Round(100*time.Millisecond))
}

// crashRig is the provider process, its API server and the cutting proxy.
type crashRig struct {
	kube       client.Client
	env        *openStackEnv
	rnd        *rand.Rand
	bin, kcfg  string
	logs       string
	proxy      *cutProxy
	mu         sync.Mutex
	cmd        *exec.Cmd
	exited     chan struct{}
	figures    crashFigures
	killCounts atomic.Int64
}

func newCrashRig(t *testing.T, e *openStackEnv, rnd *rand.Rand) *crashRig {
	t.Helper()
	dir := t.TempDir()
	c := &crashRig{env: e, rnd: rnd, bin: filepath.Join(dir, "provider"), kcfg: filepath.Join(dir, "kubeconfig"), logs: filepath.Join(dir, "provider.log")}
	buildProvider(t, c.bin)

	// An API server of the provider's own, so that it reconciles nothing
	// of the other tests. Its own logs are not wanted.
	ctrllog.SetLogger(logr.Discard())
	c.kube = providerAPIServer(t, &envtest.Environment{CRDDirectoryPaths: []string{crdDir, thirdPartyCRDDir}, ErrorIfCRDPathMissing: true}, "a second envtest", c.kcfg)

	c.proxy = startCutProxy(t, e.Fixtures.NeutronURL, rnd, c.killAt)
	region := "crash-" + strings.TrimPrefix(c.proxy.url[strings.LastIndex(c.proxy.url, ":"):], ":")
	registerEndpoint(t, e, region, c.proxy.url)

	providerCredentials(t, c.kube, e, region)
	t.Cleanup(func() {
		c.stop()
		logTail(t, c.logs, 60)
	})
	return c
}

// buildProvider builds ./cmd/provider into the file bin.
func buildProvider(t *testing.T, bin string) {
	t.Helper()
	build := exec.Command("go", "build", "-o", bin, "./cmd/provider")
	build.Dir = repoRoot
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/provider: %v\n%s", err, out)
	}
}

// providerProcess is the provider binary running as a process of the
// test.
type providerProcess struct {
	cmd *exec.Cmd
	// done is closed once the process has exited, with err its Wait's.
	done chan struct{}
	err  error
}

// runProvider starts bin with args and the kubeconfig file kcfg, its
// output appended to the file log; it is stopped, and the tail of log shown
// if t failed, when t ends.
func runProvider(t *testing.T, bin, kcfg, log string, args ...string) *providerProcess {
	t.Helper()
	f, err := os.OpenFile(log, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	p := &providerProcess{cmd: exec.Command(bin, args...), done: make(chan struct{})}
	p.cmd.Env = append(os.Environ(), "KUBECONFIG="+kcfg)
	p.cmd.Stdout, p.cmd.Stderr = f, f
	if err := p.cmd.Start(); err != nil {
		_ = f.Close()
		t.Fatal(err)
	}
	go func() {
		p.err = p.cmd.Wait()
		_ = f.Close()
		close(p.done)
	}()
	t.Cleanup(func() {
		p.stop()
		logTail(t, log, 40)
	})
	return p
}

// alive fails t once the provider has exited.
func (p *providerProcess) alive(t *testing.T) {
	t.Helper()
	select {
	case <-p.done:
		t.Fatalf("the provider exited: %v", p.err)
	default:
	}
}

// stop kills the provider and waits until it is gone; idempotent.
func (p *providerProcess) stop() {
	_ = p.cmd.Process.Kill()
	<-p.done
}

// providerAPIServer starts env, an API server for a provider process of
// the test's own (what names it in a failure), stopped when t ends; writes
// the kubeconfig of a user "provider" in system:masters to the file kcfg
// and returns a client of env.
func providerAPIServer(t *testing.T, env *envtest.Environment, what, kcfg string) client.Client {
	t.Helper()
	cfg, err := env.Start()
	if err != nil {
		t.Fatalf("cannot start %s: %v", what, err)
	}
	t.Cleanup(func() {
		if err := env.Stop(); err != nil {
			t.Errorf("stop envtest: %v", err)
		}
	})
	user, err := env.ControlPlane.AddUser(envtest.User{Name: "provider", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	kc, err := user.KubeConfig()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(kcfg, kc, 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := client.New(cfg, client.Options{Scheme: kube.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	// The provider marks what it creates with the identity of its cluster
	// (openstack.SetCluster): so do the test's markers, until t ends.
	var id string
	eventually(t, 30*time.Second, "the identity of "+what, func() (err error) {
		id, err = openstack.ClusterID(context.Background(), c)
		return err
	})
	previous := openstack.SetCluster(id)
	t.Cleanup(func() { openstack.SetCluster(previous) })
	return c
}

// providerCredentials creates through c the namespace crossplane-system,
// e's clouds.yaml in its Secret "clouds" and the ProviderConfig "openstack"
// of cloud tenant-a reading it, in region ("" for the cloud's), and returns
// the ProviderConfig.
func providerCredentials(t *testing.T, c client.Client, e *openStackEnv, region string) *pcv1alpha1.ProviderConfig {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "crossplane-system"}}
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "crossplane-system", Name: "clouds"}, Data: map[string][]byte{"clouds.yaml": e.CloudsYAML}}
	pc := openstackProviderConfig(region)
	for _, o := range []client.Object{ns, s, pc} {
		if err := c.Create(context.Background(), o); err != nil {
			t.Fatal(err)
		}
	}
	return pc
}

// openstackProviderConfig is providerCredentials' ProviderConfig
// "openstack" of cloud tenant-a in region, reading the Secret
// crossplane-system/clouds.
func openstackProviderConfig(region string) *pcv1alpha1.ProviderConfig {
	ref := secretRef("clouds", "clouds.yaml")
	ref.Namespace = "crossplane-system"
	return &pcv1alpha1.ProviderConfig{ObjectMeta: metav1.ObjectMeta{Name: "openstack"},
		Spec: pcv1alpha1.ProviderConfigSpec{Credentials: pcv1alpha1.OpenStackCredentials{SecretRef: ref, Cloud: "tenant-a", Region: region}}}
}

// logTail logs the last n lines of the provider's log file when t failed.
func logTail(t *testing.T, file string, n int) {
	if !t.Failed() {
		return
	}
	if b, err := os.ReadFile(file); err == nil {
		lines := strings.Split(string(b), "\n")
		t.Logf("provider log (last %d lines):\n%s", n, strings.Join(lines[max(0, len(lines)-n):], "\n"))
	}
}

// adminProvider is an authenticated client of the cloud "admin".
func adminProvider(t *testing.T, e *openStackEnv) *gophercloud.ProviderClient {
	t.Helper()
	p, err := neutronproxy.Admin(context.Background(), e.CloudsYAML, "admin")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// adminNeutron is a Neutron client of the cloud "admin".
func adminNeutron(t *testing.T, e *openStackEnv) *gophercloud.ServiceClient {
	t.Helper()
	sc, err := gopenstack.NewNetworkV2(adminProvider(t, e), gophercloud.EndpointOpts{})
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

// registerEndpoint adds region to Keystone with a network endpoint at u,
// as the admin, and removes both when t ends.
func registerEndpoint(t *testing.T, e *openStackEnv, region, u string) {
	t.Helper()
	remove, err := neutronproxy.Register(context.Background(), e.CloudsYAML, "admin", region, u)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = remove(context.Background()) })
}

// start runs the provider process; its output goes to the log file.
func (c *crashRig) start(t *testing.T) {
	t.Helper()
	log, err := os.OpenFile(c.logs, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(c.bin, "--debug", "--metrics-bind-address=0", "--health-probe-bind-address=0", "--openstack-request-timeout="+crashRequestTimeout.String())
	cmd.Env = append(os.Environ(), "KUBECONFIG="+c.kcfg)
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		_ = log.Close()
		close(exited)
	}()
	c.mu.Lock()
	c.cmd, c.exited = cmd, exited
	c.mu.Unlock()
}

// kill SIGKILLs the provider, if it runs, and waits until it is gone; it
// says whether it killed it.
func (c *crashRig) kill() bool {
	c.mu.Lock()
	cmd, exited := c.cmd, c.exited
	c.cmd = nil
	c.mu.Unlock()
	if cmd == nil {
		return false
	}
	_ = cmd.Process.Kill()
	<-exited
	c.killCounts.Add(1)
	return true
}

// killAt is the proxy's kill: right after Neutron completed a create
// POST, before the provider reads the answer, or (afterAnswer) just after
// it read it.
func (c *crashRig) killAt(afterAnswer bool) {
	if c.kill() {
		c.mu.Lock()
		if afterAnswer {
			c.figures.killsAfterAnswer++
		} else {
			c.figures.killsAtPOST++
		}
		c.mu.Unlock()
	}
}

// crashRequestTimeout is the provider's --openstack-request-timeout in
// the kill test: the product's 60 s would make every MR whose create was
// interrupted wait 90 s before its create is concluded to have made
// nothing (openstack.Clients.Settling).
const crashRequestTimeout = 5 * time.Second

// crashTwinCheck bounds how long after every MR is Ready a twin may stay:
// the provider's twin check (openstack.TwinCheckWindows settling times of
// 1.5 request timeouts) and a poll (the provider's default --poll of 1 m)
// after it, with a margin.
const crashTwinCheck = openstack.TwinCheckWindows*crashRequestTimeout*3/2 + time.Minute + 15*time.Second

// stop ends the provider for good (the cleanups); idempotent.
func (c *crashRig) stop() {
	c.proxy.arm(0, 0, 0)
	c.kill()
}

// running says whether the provider process runs.
func (c *crashRig) running() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.cmd != nil
}

// round runs round r and returns its figures.
func (c *crashRig) round(t *testing.T, sc *gophercloud.ServiceClient, r int) crashFigures {
	t.Helper()
	ctx := context.Background()
	c.mu.Lock()
	c.figures = crashFigures{}
	c.mu.Unlock()
	c.killCounts.Store(0)
	posts0, cuts0 := c.proxy.posts.Load(), c.proxy.cuts.Load()
	name := fmt.Sprintf("crash-%d", r)

	sg := gatewaySecurityGroup(name+"-sg", "openstack")
	sg.Spec.ForProvider.Description = ptr.To(fmt.Sprintf("round %d", r))
	port := portMR(name+"-port", netv1alpha1.PortParameters{NetworkID: ptr.To(c.env.Fixtures.TenantNet.ID), Name: ptr.To(name + "-port"),
		SecurityGroupIDRefs: []xpv2.Reference{{Name: sg.Name}}})
	fip := &netv1alpha1.FloatingIPBinding{ObjectMeta: metav1.ObjectMeta{Name: name + "-fip"}}
	fip.Spec.ForProvider = netv1alpha1.FloatingIPBindingParameters{FloatingNetworkID: ptr.To(netv1alpha1.UUID(c.env.Fixtures.ExtNet.ID)),
		PortIDRef: &xpv2.Reference{Name: port.Name}, Description: ptr.To("crash test")}
	fip.Spec.ProviderConfigReference = &xpv2.Reference{Name: "openstack"}
	network := &netv1alpha1.Network{ObjectMeta: metav1.ObjectMeta{Name: name + "-net"}}
	network.Spec.ForProvider = netv1alpha1.NetworkParameters{Name: ptr.To(name + "-net")}
	network.Spec.ProviderConfigReference = &xpv2.Reference{Name: "openstack"}
	type mrOf struct {
		mg client.Object
		c  openstack.Collection
	}
	mrs := []mrOf{{sg, openstack.SecurityGroups}, {port, openstack.Ports}, {fip, openstack.FloatingIPs}, {network, openstack.Networks}}
	t.Cleanup(func() {
		// Whatever a failed round leaves in Neutron, in dependency order.
		// Cleanups run last-registered first, so this one runs before
		// the rig's: the provider is stopped here, or it would create
		// again what is deleted under its MRs.
		c.stop()
		for _, i := range []int{2, 1, 0, 3} {
			for _, id := range createdFor(t, sc, mrs[i].c, mrs[i].mg) {
				_, _ = sc.Delete(context.Background(), sc.ServiceURL(mrs[i].c.Path, id), nil) //nolint:bodyclose // gophercloud reads and closes the body
			}
		}
	})

	// Create with kills: the proxy kills or cuts a share of the POSTs,
	// and a timer kills at a random time; the provider is restarted at
	// once after each kill, up to three kills a round.
	c.proxy.arm(0.2, 0.2, 0.2)
	t0 := time.Now()
	for _, mr := range mrs {
		if err := c.kube.Create(ctx, mr.mg); err != nil {
			t.Fatal(err)
		}
	}
	c.start(t)
	for k := 0; k < 3; k++ {
		wait := time.Duration(200+c.rnd.IntN(5800)) * time.Millisecond
		deadline := time.Now().Add(wait)
		for time.Now().Before(deadline) && c.running() {
			time.Sleep(20 * time.Millisecond)
		}
		if c.running() {
			c.kill()
		}
		c.start(t)
	}
	c.proxy.arm(0, 0.2, 0)
	ready := func() error {
		for _, mr := range mrs {
			if err := c.kube.Get(ctx, client.ObjectKeyFromObject(mr.mg), mr.mg); err != nil {
				return err
			}
			cond := mr.mg.(interface {
				GetCondition(xpv2.ConditionType) xpv2.Condition
			})
			if rc := cond.GetCondition(xpv2.TypeReady); rc.Status != corev1.ConditionTrue {
				s := cond.GetCondition(xpv2.TypeSynced)
				return fmt.Errorf("%s: Ready=%s; Synced=%s: %s", mr.mg.GetName(), rc.Status, s.Status, s.Message)
			}
		}
		return nil
	}
	c.eventually(t, 180*time.Second, "round "+strconv.Itoa(r)+": every MR Ready", ready)
	f := crashFigures{ready: time.Since(t0)}

	// Exactly one Neutron object per MR, the one its external name names;
	// by name too, for kinds that have one, so that a twin without the
	// marker would count. A create Neutron completed after the provider
	// concluded it made nothing leaves a twin until the provider's twin
	// check deletes it (openstack.SweepTwins): counted at Ready, it must
	// be gone within that check's time and a poll.
	counted := false
	c.eventually(t, crashTwinCheck, "round "+strconv.Itoa(r)+": exactly one Neutron object per MR", func() error {
		var errs []error
		for _, mr := range mrs {
			if err := c.kube.Get(ctx, client.ObjectKeyFromObject(mr.mg), mr.mg); err != nil {
				return err
			}
			ids := createdFor(t, sc, mr.c, mr.mg)
			twins := len(ids) - 1
			if mr.c != openstack.FloatingIPs {
				if named := namedIn(t, sc, mr.c, neutronName(mr.mg)); len(named) != len(ids) {
					errs = append(errs, fmt.Errorf("%d Neutron %ss named %q, %d carrying the marker of %s", len(named), mr.c.Kind, neutronName(mr.mg), len(ids), mr.mg.GetName()))
					twins = max(twins, len(named)-1)
				}
			}
			if !counted {
				f.objects += len(ids)
				f.twins += max(0, twins)
			}
			switch {
			case len(ids) == 0:
				if !counted {
					f.missing++
				}
				errs = append(errs, fmt.Errorf("no Neutron %s carries the marker of %s", mr.c.Kind, mr.mg.GetName()))
			case len(ids) > 1:
				errs = append(errs, fmt.Errorf("%d Neutron %ss carry the marker of %s: %v", len(ids), mr.c.Kind, mr.mg.GetName(), ids))
			case ids[0] != meta.GetExternalName(mr.mg):
				errs = append(errs, fmt.Errorf("the %s of %s is %s, its external name %q", mr.c.Kind, mr.mg.GetName(), ids[0], meta.GetExternalName(mr.mg)))
			}
		}
		counted = true
		return errors.Join(errs...)
	})

	// Delete, with one kill on the way; every deletion completes.
	t1 := time.Now()
	for _, mr := range mrs {
		if err := c.kube.Delete(ctx, mr.mg); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(time.Duration(200+c.rnd.IntN(2800)) * time.Millisecond)
	c.kill()
	c.start(t)
	c.eventually(t, 180*time.Second, "round "+strconv.Itoa(r)+": every MR deleted", func() error {
		for _, mr := range mrs {
			err := c.kube.Get(ctx, client.ObjectKeyFromObject(mr.mg), mr.mg)
			if err == nil {
				return fmt.Errorf("%s still exists (finalizers %v)", mr.mg.GetName(), mr.mg.GetFinalizers())
			}
			if client.IgnoreNotFound(err) != nil {
				return err
			}
		}
		return nil
	})
	f.deleted = time.Since(t1)
	for _, mr := range mrs {
		if ids := createdFor(t, sc, mr.c, mr.mg); len(ids) > 0 {
			f.leftovers += len(ids)
			t.Errorf("round %d: %s %v of %s left after its deletion", r, mr.c.Kind, ids, mr.mg.GetName())
		}
	}
	c.kill()
	c.mu.Lock()
	f.killsAtPOST, f.killsAfterAnswer = c.figures.killsAtPOST, c.figures.killsAfterAnswer
	c.mu.Unlock()
	// The kills counted include the final stop of the round's provider.
	f.kills = int(c.killCounts.Load()) - 1
	f.posts, f.cuts = int(c.proxy.posts.Load()-posts0), int(c.proxy.cuts.Load()-cuts0)
	return f
}

// neutronName is the name an MR gives its Neutron object: the MR's own in
// this test.
func neutronName(mg client.Object) string {
	if sg, ok := mg.(*netv1alpha1.SecurityGroup); ok {
		return sg.Spec.ForProvider.Name
	}
	return mg.GetName()
}

// namedIn returns the IDs of the objects of c named name.
func namedIn(t *testing.T, sc *gophercloud.ServiceClient, c openstack.Collection, name string) []string {
	t.Helper()
	var body map[string][]struct{ ID string }
	if _, err := sc.Get(context.Background(), sc.ServiceURL(c.Path)+"?"+url.Values{"name": {name}, "fields": {"id"}}.Encode(), &body, nil); err != nil { //nolint:bodyclose // gophercloud reads and closes the body
		t.Errorf("list %s named %s: %v", c.Path, name, err)
		return nil
	}
	var ids []string
	for _, o := range body[c.Key] {
		ids = append(ids, o.ID)
	}
	return ids
}

// eventually is the package's eventually, restarting the provider should
// the proxy have killed it in the meantime.
func (c *crashRig) eventually(t *testing.T, timeout time.Duration, what string, cond func() error) {
	t.Helper()
	eventually(t, timeout, what, func() error {
		if !c.running() {
			c.start(t)
		}
		return cond()
	})
}

// cutProxy lets Neutron complete a random share of the create POSTs that
// pass a neutronproxy.Proxy before it closes the client's connection
// without the answer, killing the provider first for some; for another
// share it kills the provider just after the answer.
type cutProxy struct {
	url                string
	rnd                *rand.Rand
	mu                 sync.Mutex
	pKill, pCut, pLate float64
	kill               func(afterAnswer bool)
	posts, cuts        atomic.Int64
}

func startCutProxy(t *testing.T, neutronURL string, rnd *rand.Rand, kill func(afterAnswer bool)) *cutProxy {
	t.Helper()
	p := &cutProxy{rnd: rnd, kill: kill}
	proxy, err := neutronproxy.Start(neutronURL, p.intercept)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = proxy.Close() })
	p.url = proxy.URL
	return p
}

// intercept is the proxy's handler: next forwards to Neutron.
func (p *cutProxy) intercept(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || !createPath(r.URL.Path) {
			next.ServeHTTP(w, r)
			return
		}
		p.posts.Add(1)
		p.mu.Lock()
		x, delay, pKill, pCut, pLate := p.rnd.Float64(), time.Duration(p.rnd.IntN(20))*time.Millisecond, p.pKill, p.pCut, p.pLate
		p.mu.Unlock()
		if x >= pKill+pCut {
			next.ServeHTTP(w, r)
			if x < pKill+pCut+pLate {
				go func() {
					time.Sleep(delay)
					p.kill(true)
				}()
			}
			return
		}
		// Neutron completes the POST (whose answer goes nowhere, not even
		// when the kill below ends the provider's connection first); the
		// answer never reaches the provider.
		next.ServeHTTP(httptest.NewRecorder(), r.WithContext(context.WithoutCancel(r.Context())))
		if x < pKill {
			p.kill(false)
		}
		p.cuts.Add(1)
		if conn, _, err := http.NewResponseController(w).Hijack(); err == nil {
			_ = conn.Close()
		}
	})
}

// arm sets the shares of create POSTs after which the provider is killed
// before the answer, whose answer is cut, and after whose answer the
// provider is killed.
func (p *cutProxy) arm(pKill, pCut, pLate float64) {
	p.mu.Lock()
	p.pKill, p.pCut, p.pLate = pKill, pCut, pLate
	p.mu.Unlock()
}

// createPath says whether path is the create of a kind the provider makes.
func createPath(path string) bool {
	switch strings.TrimSuffix(path, "/") {
	case "/v2.0/security-groups", "/v2.0/ports", "/v2.0/floatingips", "/v2.0/networks":
		return true
	}
	return false
}
