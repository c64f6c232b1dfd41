//go:build e2e

package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack"
	"github.com/gophercloud/gophercloud/v2/openstack/config"
	"github.com/gophercloud/gophercloud/v2/openstack/config/clouds"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
	"github.com/strongswan/govici/vici"

	"github.com/ipsecgw/provider-ipsec/test/topology"
)

// Addresses of the site (test/topology, cluster/site).
const (
	siteVM = "10.20.0.5"
	// siteGateway is the gateway's fixed IP: the gateway pod's net1, or
	// the stand-in's.
	siteGateway = "10.20.0.10"
	siteClient  = "198.51.100.7"
	siteConn    = "branch-a"
)

// site is the local stack's site (cluster/site) one test brought up, on a
// Keystone + Neutron of its own.
type site struct {
	// env is the environment of the site's and OpenStack's scripts.
	env []string
	// state is the site's STATE, osState its OS_STATE.
	state, osState string
	// network is a Neutron client with the tenant's credentials.
	network *gophercloud.ServiceClient
	// runbook is what cluster/openstack/runbook.py vm-up printed.
	runbook vmUp
}

// TestSiteCutover runs the runbook's cutover and rollback on the site
// alone, with a stand-in for the gateway pod: the client's tunnel is up
// with the VM gateway; the floating IP moves to the stand-in's port and
// the VM's charon stops; the L3 agent's qrouter re-points the floating IP,
// the client's tunnel comes back with the stand-in and the client host's
// connections are carried by it, the client's configuration untouched;
// then back.
func TestSiteCutover(t *testing.T) {
	stackLanes.take(t)
	s := startSite(t)
	ctx := context.Background()
	client := siteCharon(t, s.state, "client")
	before := clientOf(t, s.state)

	// Before: the client's tunnel is up with the VM, which carries the
	// client host's connections to the tenant service.
	sa := client.WaitSA(t, siteConn, 30*time.Second, topology.Up(siteConn))
	siteCharon(t, s.state, "vm").WaitSA(t, siteConn, 10*time.Second, remote(siteClient))
	p := startProbe(t, s.env)
	p.wait(t, siteVM, 20*time.Second)

	// Cutover: the floating IP moves to the stand-in's port (as the
	// binding would attach it after `floating ip unset`), the VM's charon
	// stops.
	mustRun(t, s.env, "cluster/site/site.sh", "standin-up")
	port := s.standinPort(ctx, t)
	moved := s.moveFIP(t, port.ID)
	mustRun(t, s.env, "cluster/site/site.sh", "vm-stop")
	vmStopped := time.Now()
	applied := fipMapped(t, s.env, s.runbook.FloatingIP, siteGateway, 10*time.Second)
	t.Logf("cutover: Neutron update sent -> the qrouter's DNAT re-pointed in %d ms", applied.Sub(moved).Milliseconds())
	standin := siteCharon(t, s.state, "gw")
	initiate(t, standin, "cutover: the stand-in")
	standin.WaitSA(t, siteConn, 30*time.Second, remote(siteClient))
	sa = client.WaitSA(t, siteConn, 10*time.Second, newer(sa))
	t.Logf("cutover: DNAT re-pointed -> tunnel ESTABLISHED with the stand-in in %d ms", time.Since(applied).Milliseconds())
	e := p.wait(t, siteGateway, 20*time.Second)
	t.Logf("cutover: the client host's connections were carried by %s, then by %s after an outage of %d ms", e.Previous, e.Via, e.OutageMS)
	before.untouched(t, s.state, "cutover")

	// Rollback: the floating IP back to the VM's port, the VM's charon
	// started, the stand-in gone (the Deployment at 0 replicas).
	moved = s.moveFIP(t, s.runbook.VMPortID)
	for _, cmd := range []string{"standin-down", "vm-start"} {
		mustRun(t, s.env, "cluster/site/site.sh", cmd)
	}
	applied = fipMapped(t, s.env, s.runbook.FloatingIP, siteVM, 10*time.Second)
	t.Logf("rollback: Neutron update sent -> the qrouter's DNAT re-pointed in %d ms", applied.Sub(moved).Milliseconds())
	vm := siteCharon(t, s.state, "vm")
	waitSNATExpired(t, "rollback", "the VM's DELETE", vmStopped)
	initiate(t, vm, "rollback: the VM")
	vm.WaitSA(t, siteConn, 30*time.Second, remote(siteClient))
	client.WaitSA(t, siteConn, 10*time.Second, newer(sa))
	t.Logf("rollback: DNAT re-pointed -> tunnel ESTABLISHED with the VM in %d ms", time.Since(applied).Milliseconds())
	e = p.wait(t, siteVM, 20*time.Second)
	t.Logf("rollback: carried by %s again after an outage of %d ms", e.Via, e.OutageMS)
	before.untouched(t, s.state, "rollback")
}

// startSite brings up a Keystone + Neutron with Neutron's real agents and
// the site on a state and ports of their own, the VM's port holding the
// floating IP, and removes all of it when the test ends, also on failure.
func startSite(t *testing.T) *site {
	t.Helper()
	if os.Getuid() != 0 {
		t.Skip("the site needs root (network namespaces, charon, the local Keystone + Neutron)")
	}
	s := &site{state: filepath.Join(root, ".work", "site-e2e"), osState: filepath.Join(root, ".work", "site-e2e-openstack")}
	s.env = append(os.Environ(), "STATE="+s.state, "OS_STATE="+s.osState)
	t.Cleanup(func() {
		if t.Failed() {
			siteLogTails(t, s.state)
		}
		tryScript(t, s.env, "cluster/site/site.sh", "down")
		tryScript(t, s.env, "cluster/openstack/down.sh")
		_ = os.RemoveAll(s.state)
	})
	start := time.Now()
	mustRun(t, append(s.env, "AGENTS=1"), "cluster/openstack/up.sh")
	out := mustRun(t, s.env, "cluster/openstack/runbook.py", "vm-up")
	if err := json.Unmarshal([]byte(out), &s.runbook); err != nil {
		t.Fatalf("runbook.py vm-up printed %q: %v", out, err)
	}
	mustRun(t, s.env, "cluster/site/site.sh", "up")
	t.Logf("Keystone, Neutron and the site up in %s", time.Since(start).Round(100*time.Millisecond))
	ao, eo, tlsConfig, err := clouds.Parse(clouds.WithLocations(filepath.Join(s.osState, "clouds.yaml")), clouds.WithCloudName("tenant-a"))
	if err != nil {
		t.Fatal(err)
	}
	pc, err := config.NewProviderClient(context.Background(), ao, config.WithTLSConfig(tlsConfig))
	if err != nil {
		t.Fatal(err)
	}
	if s.network, err = openstack.NewNetworkV2(pc, eo); err != nil {
		t.Fatal(err)
	}
	return s
}

// siteCharon returns the charon of role (client, vm or gw) of the site on
// state directory state, with a VICI session to it closed when t ends.
func siteCharon(t *testing.T, state, role string) *topology.Charon {
	t.Helper()
	sock := filepath.Join(state, "site", role, "charon.vici")
	sess, err := vici.NewSession(vici.WithSocketPath(sock))
	if err != nil {
		t.Fatalf("cannot connect to the charon of %s: %v", role, err)
	}
	t.Cleanup(func() { _ = sess.Close() })
	return &topology.Charon{Session: sess, NS: role, Dir: filepath.Dir(sock)}
}

// remote says whether an IKE SA is ESTABLISHED with a peer of address a.
func remote(a string) func(topology.IKESA) bool {
	return func(sa topology.IKESA) bool { return sa.State == "ESTABLISHED" && sa.RemoteHost == a }
}

// newer says whether an IKE SA is another one than old, up with its
// CHILD_SA.
func newer(old topology.IKESA) func(topology.IKESA) bool {
	return func(sa topology.IKESA) bool { return sa.UniqueID != old.UniqueID && topology.Up(siteConn)(sa) }
}

// A clientSite is what the client site of a site is made of: its charon's
// pid and every file of its configuration, by path below its directory.
type clientSite struct {
	pid   string
	files map[string]string
}

// clientOf reads the client site of the site on state directory state.
func clientOf(t *testing.T, state string) clientSite {
	t.Helper()
	pid, err := os.ReadFile(filepath.Join(state, "site", "client", "charon.pid"))
	if err != nil {
		t.Fatalf("the client's charon: %v", err)
	}
	return clientSite{pid: string(pid), files: clientConf(t, state)}
}

// untouched fails t when the client site of the site on state directory
// state is not as c: a cutover or rollback must neither restart nor
// reconfigure the client.
func (c clientSite) untouched(t *testing.T, state, when string) {
	t.Helper()
	if diff := cmp.Diff(c, clientOf(t, state), cmp.AllowUnexported(clientSite{})); diff != "" {
		t.Errorf("%s: the client's charon was restarted or its configuration files changed: -before, +after:\n%s", when, diff)
	}
}

// clientConf returns every file of the client site's configuration (its
// charon's directory but for the log, output and socket), by path below
// it, of the site on state directory state.
func clientConf(t *testing.T, state string) map[string]string {
	t.Helper()
	dir := filepath.Join(state, "site", "client")
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() || strings.HasPrefix(d.Name(), "charon.") {
			return err
		}
		b, err := os.ReadFile(p)
		out[strings.TrimPrefix(p, dir+"/")] = string(b)
		return err
	})
	if err != nil || len(out) == 0 {
		t.Fatalf("cannot read the client's configuration in %s (%d files): %v", dir, len(out), err)
	}
	return out
}

// moveFIP moves the site's floating IP to port as the runbook does
// (floating ip unset, then set) and returns when the second update was
// sent; it logs how long Neutron took to answer it.
func (s *site) moveFIP(t *testing.T, port string) time.Time {
	t.Helper()
	setFIPPort(t, s.network, s.runbook.FloatingIPID, "")
	sent := time.Now()
	setFIPPort(t, s.network, s.runbook.FloatingIPID, port)
	t.Logf("floating ip set --port %s: Neutron answered in %d ms", port, time.Since(sent).Milliseconds())
	return sent
}

// standinPort returns the stand-in's port at siteGateway, which the site
// made (it plugged the stand-in into it).
func (s *site) standinPort(ctx context.Context, t *testing.T) *ports.Port {
	t.Helper()
	pages, err := ports.List(s.network, ports.ListOpts{Name: "gateway-standin"}).AllPages(ctx)
	if err != nil {
		t.Fatal(err)
	}
	found, err := ports.ExtractPorts(pages)
	if err != nil || len(found) != 1 {
		t.Fatalf("the site's port gateway-standin: %d found, %v", len(found), err)
	}
	return &found[0]
}

// fipMapped waits until the qrouter DNATs floating IP fip to fixed (the
// rule first seen in site.sh status, with environment env) and returns
// when it was seen.
func fipMapped(t *testing.T, env []string, fip, fixed string, timeout time.Duration) time.Time {
	t.Helper()
	var at time.Time
	rule := "-d " + fip + "/32 -j DNAT --to-destination " + fixed + "\n"
	eventually(t, "the qrouter DNATs "+fip+" to "+fixed, timeout, func() (bool, string) {
		out, err := runScript(env, "cluster/site/site.sh", "status")
		at = time.Now()
		return err == nil && strings.Contains(out, rule), "site.sh status:\n" + out
	})
	return at
}

// waitSNATExpired waits until 35 s after the last IKE packets of what
// (at last) before the next gateway on that fixed IP initiates (step is
// the runbook's step, for the log). Those packets left after the floating
// IP had (the runbook's order: the VM's IKE DELETEs at vm-stop, a gateway
// pod's until its end at a rollback), SNATed by the qrouter to the
// router's own address; conntrack keeps such a flow (e.g. VM:4500 ->
// client:4500) for its UDP timeout, 30 s, and a flow of the same
// addresses and ports started within it leaves with the router's address,
// for which the client has no peer config (AUTH_FAILED; measured
// 2026-12-01). A real cloud does the same to a rollback within 30 s of
// the cutover: the tests wait it out. A zero last waits for nothing.
func waitSNATExpired(t *testing.T, step, what string, last time.Time) {
	t.Helper()
	if wait := time.Until(last.Add(35 * time.Second)); wait > 0 {
		t.Logf("%s: waiting %s for the qrouter's conntrack entries of %s to expire", step, wait.Round(100*time.Millisecond), what)
		time.Sleep(wait)
	}
}

// initiate starts the tunnel from c, as the gateway pod (always on) and the
// runbook's rollback (docs/runbook.md: initiate from the VM) do: behind the
// real qrouter the client's own retries stay on a conntrack entry made
// while the floating IP was on no port (docs/neutron-agents.md), and only
// a flow the new end starts gets through. A failure is logged; the waits
// for the SAs that follow judge.
func initiate(t *testing.T, c *topology.Charon, who string) {
	t.Helper()
	if out, err := c.Swanctl(context.Background(), "--initiate", "--child", siteConn, "--timeout", "30"); err != nil {
		t.Logf("%s's initiation: %v\n%s", who, err, out)
	}
}

// siteLogTails logs the end of each log of the site on state directory
// state.
func siteLogTails(t *testing.T, state string) {
	logs, _ := filepath.Glob(filepath.Join(state, "site", "*", "charon.log"))
	for _, f := range append(logs, filepath.Join(state, "site.log")) {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
		t.Logf("%s (last 30 lines):\n%s", f, strings.Join(lines[max(0, len(lines)-30):], "\n"))
	}
}

// A probeEvent is one line of site.sh probe -json.
type probeEvent struct {
	Time     time.Time `json:"time"`
	Via      string    `json:"via"`
	Previous string    `json:"previous"`
	OutageMS int64     `json:"outage_ms"`
	Error    string    `json:"error"`
}

// A probe is site.sh probe -json running in the client host.
type probe struct {
	mu     sync.Mutex
	events []probeEvent
	seen   int // events a wait has returned or passed
}

// startProbe starts site.sh probe -json with environment env (the site's
// STATE) and stops it when t ends.
func startProbe(t *testing.T, env []string) *probe {
	t.Helper()
	cmd := exec.Command(filepath.Join(root, "cluster/site/site.sh"), "probe", "-json")
	cmd.Env = env
	// A test binary killed by its timeout runs no cleanup: the probe must
	// not outlive it (it would keep the node lock's descriptor open).
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	// What the probe measures (its period, so its resolution) and its
	// counts, for the test's log.
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &probe{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			var e probeEvent
			if json.Unmarshal(sc.Bytes(), &e) == nil {
				p.mu.Lock()
				p.events = append(p.events, e)
				p.mu.Unlock()
			}
		}
	}()
	t.Cleanup(func() {
		// site.sh execs the site's probe: the process is the probe's.
		_ = cmd.Process.Signal(syscall.SIGTERM)
		<-done
		_ = cmd.Wait()
		p.mu.Lock()
		defer p.mu.Unlock()
		t.Logf("%sprobe events: %+v", stderr.String(), p.events)
	})
	return p
}

// wait returns the first event, after those an earlier wait looked at,
// of an answer carried by via; it fails t after timeout.
func (p *probe) wait(t *testing.T, via string, timeout time.Duration) probeEvent {
	t.Helper()
	var found probeEvent
	eventually(t, "the probe's connections carried by "+via, timeout, func() (bool, string) {
		p.mu.Lock()
		defer p.mu.Unlock()
		for ; p.seen < len(p.events); p.seen++ {
			if p.events[p.seen].Via == via {
				found = p.events[p.seen]
				p.seen++
				return true, ""
			}
		}
		if len(p.events) == 0 {
			return false, "no event yet"
		}
		last := p.events[len(p.events)-1]
		return false, "last event: via " + last.Via + " " + last.Error
	})
	return found
}
