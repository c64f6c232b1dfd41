//go:build integration

package integration

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/strongswan/govici/vici"
	"sigs.k8s.io/yaml"

	"github.com/ipsecgw/provider-ipsec/apis/cluster/gateway/v1alpha1"
	"github.com/ipsecgw/provider-ipsec/internal/agent/apply"
	"github.com/ipsecgw/provider-ipsec/internal/agent/nat"
	"github.com/ipsecgw/provider-ipsec/internal/agent/status"
	"github.com/ipsecgw/provider-ipsec/internal/render"
	"github.com/ipsecgw/provider-ipsec/internal/swanctl"
	"github.com/ipsecgw/provider-ipsec/test/topology"
)

// needRoot skips t unless it runs as root with charon installed.
func needRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("the agent's loaders run charon and nft in namespaces of their own: run the tests as root")
	}
	if _, err := os.Stat(apply.CharonBinary); err != nil {
		t.Skipf("%s is missing: apt-get install strongswan-charon strongswan-swanctl", apply.CharonBinary)
	}
}

// goldenSet reads a golden gateway's swanctl.conf and secrets.conf.
func goldenSet(t *testing.T, name string) (conf, secrets []byte) {
	t.Helper()
	dir := filepath.Join(goldenDir, name)
	conf, err := os.ReadFile(filepath.Join(dir, "swanctl.conf"))
	if err != nil {
		t.Fatal(err)
	}
	secrets, err = os.ReadFile(filepath.Join(dir, "secrets.conf"))
	if err != nil {
		t.Fatal(err)
	}
	return conf, secrets
}

// edit parses a document, lets fn change it and formats it again.
func edit(t *testing.T, doc []byte, fn func(d *swanctl.Section)) []byte {
	t.Helper()
	d, err := swanctl.Parse(doc)
	if err != nil {
		t.Fatal(err)
	}
	fn(d)
	out, err := d.Format()
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// setting replaces the value of key in s, or appends it.
func setting(s *swanctl.Section, key, value string) {
	for i := range s.Settings {
		if s.Settings[i].Key == key {
			s.Settings[i].Value = value
			return
		}
	}
	s.Set(key, value)
}

// rename renames the subsection old of s to name and returns it.
func rename(t *testing.T, s *swanctl.Section, old, name string) *swanctl.Section {
	t.Helper()
	sub := s.Lookup(old)
	if sub == nil {
		t.Fatalf("no section %s", old)
	}
	sub.Name = name
	return sub
}

// getConns returns the sorted names of the connections c holds.
func getConns(t *testing.T, c apply.Caller) []string {
	t.Helper()
	m, err := c.Call(context.Background(), "get-conns", nil)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := m.Get("conns").([]string)
	slices.Sort(got)
	return got
}

// remoteTS returns the remote traffic selectors charon lists for a child of
// conn (list-conns shows no IKE proposals in strongSwan 5.9). Each attempt
// streams on a session of its own and is retried when conn is missing:
// govici v0.8.0 can end a stream before yielding its last event (it selects
// between the event and the response at random), and would then hand that
// event to the session's next request.
func remoteTS(t *testing.T, sock, conn, child string) []string {
	t.Helper()
	for range 20 {
		s, err := vici.NewSession(vici.WithSocketPath(sock))
		if err != nil {
			t.Fatal(err)
		}
		in := vici.NewMessage()
		_ = in.Set("ike", conn)
		var ts []string
		found := false
		for m, err := range (&status.Streamer{Session: s}).CallStreaming(context.Background(), "list-conns", "list-conn", in) {
			if err != nil {
				break
			}
			c, ok := m.Get(conn).(*vici.Message)
			if !ok {
				continue
			}
			found = true
			if children, ok := c.Get("children").(*vici.Message); ok {
				if ch, ok := children.Get(child).(*vici.Message); ok {
					switch v := ch.Get("remote-ts").(type) {
					case []string:
						ts = v
					case string:
						ts = []string{v}
					}
				}
			}
		}
		_ = s.Close()
		if found {
			return ts
		}
	}
	t.Fatalf("charon did not list connection %s in 20 list-conns", conn)
	return nil
}

// isolatedValidator returns the real validator with its charon in a network
// namespace of its own, for tests without a topology: nothing of it is
// bound in the host's namespace.
func isolatedValidator(t *testing.T) apply.CharonValidator {
	return apply.CharonValidator{TempDir: t.TempDir(), Command: []string{"unshare", "--net", "--", apply.CharonBinary}}
}

// gatewayValidator returns the real validator with its charon in the
// topology's gateway namespace, beside the live charon, as the agent runs
// it in the gateway pod.
func gatewayValidator(t *testing.T, tp *topology.Topology) apply.CharonValidator {
	return apply.CharonValidator{TempDir: t.TempDir(), Command: []string{"nsenter", "--net=/run/netns/" + tp.Gateway.NS, "--", apply.CharonBinary}}
}

// switchable is a Caller whose session can be replaced, as the agent's is
// when charon restarts.
type switchable struct {
	mu sync.Mutex
	c  apply.Caller
}

func (s *switchable) Call(ctx context.Context, cmd string, in *vici.Message) (*vici.Message, error) {
	s.mu.Lock()
	c := s.c
	s.mu.Unlock()
	return c.Call(ctx, cmd, in)
}

func (s *switchable) set(c apply.Caller) {
	s.mu.Lock()
	s.c = c
	s.mu.Unlock()
}

// TestAgentApplyValidatorGolden validates every golden gateway's rendered
// set with the real validation charon (started, loaded and stopped per
// set) and reports the time each took.
func TestAgentApplyValidatorGolden(t *testing.T) {
	needRoot(t)
	dirs, err := os.ReadDir(goldenDir)
	if err != nil {
		t.Fatal(err)
	}
	v := isolatedValidator(t)
	for _, d := range dirs {
		t.Run(d.Name(), func(t *testing.T) {
			conf, secrets := goldenSet(t, d.Name())
			s, err := apply.Convert(conf, secrets)
			if err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			if err := v.Validate(context.Background(), s); err != nil {
				t.Fatalf("the validation charon refuses a golden set: %v", err)
			}
			t.Logf("validated %d connections and %d secrets in %s", len(s.Conns), len(s.Shared), time.Since(start).Round(time.Millisecond))
		})
	}
	if left, _ := os.ReadDir(v.TempDir); len(left) != 0 {
		t.Errorf("the validator left %d entries in its temporary directory", len(left))
	}
}

// TestAgentApplyLive applies sets to a real charon through the Applier with
// the real validator: a golden set, then a set with one connection changed,
// one removed and one added, then an invalid set that must change nothing;
// finally Reapply loads the last good set into a fresh charon.
func TestAgentApplyLive(t *testing.T) {
	needRoot(t)
	ctx := context.Background()
	live := topology.StartValidator(t)
	sock := filepath.Join(live.Dir, "charon.vici")
	caller := &switchable{c: live.Session}
	a := apply.New(caller, apply.WithValidator(isolatedValidator(t)))

	confA, secretsA := goldenSet(t, "several-tunnels")
	// The golden set's children, named by the renderer after their pairs.
	a1 := render.ChildName("branch-a", netip.MustParsePrefix("100.64.0.0/24"), netip.MustParsePrefix("192.168.10.0/24"))
	bPair := [2]netip.Prefix{netip.MustParsePrefix("100.64.1.0/24"), netip.MustParsePrefix("192.168.20.0/24")}
	res, err := a.Apply(ctx, confA, secretsA)
	if err != nil {
		t.Fatalf("Apply(several-tunnels): %v", err)
	}
	want := apply.Result{Loaded: []string{"branch-a", "branch-b", "hq"}, Secrets: []string{"ike-branch-a", "ike-branch-b", "ike-hq"}}
	if diff := cmp.Diff(want, res, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("Apply(several-tunnels): -want, +got:\n%s", diff)
	}
	if diff := cmp.Diff([]string{"branch-a", "branch-b", "hq"}, getConns(t, live.Session)); diff != "" {
		t.Errorf("get-conns after the first Apply: -want, +got:\n%s", diff)
	}

	// Set B: branch-a changed, branch-b gone, branch-c new (branch-b's
	// section under a new name and peer).
	confB := edit(t, confA, func(d *swanctl.Section) {
		setting(d.Lookup("connections.branch-a"), "proposals", "aes128-sha256-modp3072")
		setting(d.Lookup("connections.branch-a.children."+a1), "remote_ts", "192.168.10.0/24,192.168.11.0/24")
		c := rename(t, d.Lookup("connections"), "branch-b", "branch-c")
		setting(c, "remote_addrs", "198.51.100.30")
		setting(c.Lookup("remote"), "id", "198.51.100.30")
		rename(t, c.Lookup("children"), render.ChildName("branch-b", bPair[0], bPair[1]), render.ChildName("branch-c", bPair[0], bPair[1]))
	})
	secretsB := edit(t, secretsA, func(d *swanctl.Section) {
		s := rename(t, d.Lookup("secrets"), "ike-branch-b", "ike-branch-c")
		setting(s, "id-remote", "198.51.100.30")
	})
	start := time.Now()
	res, err = a.Apply(ctx, confB, secretsB)
	if err != nil {
		t.Fatalf("Apply(set B): %v", err)
	}
	t.Logf("validated and applied set B in %s", time.Since(start).Round(time.Millisecond))
	want = apply.Result{Loaded: []string{"branch-a", "branch-c"}, Unloaded: []string{"branch-b"}, Unchanged: []string{"hq"},
		Secrets: []string{"ike-branch-a", "ike-branch-c", "ike-hq"}, SecretsUnloaded: []string{"ike-branch-b"}}
	if diff := cmp.Diff(want, res, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("Apply(set B): -want, +got:\n%s", diff)
	}
	wantConns := []string{"branch-a", "branch-c", "hq"}
	if diff := cmp.Diff(wantConns, getConns(t, live.Session)); diff != "" {
		t.Errorf("get-conns after set B: -want, +got:\n%s", diff)
	}
	changedTS := []string{"192.168.10.0/24", "192.168.11.0/24"}
	if got := remoteTS(t, sock, "branch-a", a1); !slices.Equal(got, changedTS) {
		t.Errorf("charon lists %s with remote-ts %v, want the changed %v", a1, got, changedTS)
	}

	// An invalid set, written past the renderer: a DH group charon does
	// not know in hq, and branch-a changed again. Nothing may change.
	confBad := edit(t, confB, func(d *swanctl.Section) {
		setting(d.Lookup("connections.hq"), "proposals", "aes256-sha384-modp2047")
		setting(d.Lookup("connections.branch-a.children."+a1), "remote_ts", "192.168.10.0/24")
	})
	_, err = a.Apply(ctx, confBad, secretsB)
	var invalid *apply.InvalidError
	switch {
	case err == nil:
		t.Fatal("Apply(invalid set): no error")
	case !errors.As(err, &invalid):
		t.Errorf("Apply(invalid set): error %v is not an InvalidError", err)
	case !strings.Contains(err.Error(), "connection hq"):
		t.Errorf("Apply(invalid set): error %q does not name connection hq", err)
	}
	t.Logf("invalid set refused: %v", err)
	for _, psk := range []string{"psk-branch-a", "psk-hq", "70736b"} {
		if err != nil && strings.Contains(err.Error(), psk) {
			t.Errorf("Apply(invalid set): the error holds a secret: %v", err)
		}
	}
	if diff := cmp.Diff(wantConns, getConns(t, live.Session)); diff != "" {
		t.Errorf("get-conns after the invalid set: -want, +got:\n%s", diff)
	}
	if got := remoteTS(t, sock, "branch-a", a1); !slices.Equal(got, changedTS) {
		t.Errorf("the invalid set changed branch-a on the live charon: remote-ts %v, want %v", got, changedTS)
	}

	// charon "restarts": a fresh one gets the last good set.
	fresh := topology.StartValidator(t)
	caller.set(fresh.Session)
	res, err = a.Reapply(ctx)
	if err != nil {
		t.Fatalf("Reapply: %v", err)
	}
	want = apply.Result{Loaded: wantConns, Secrets: []string{"ike-branch-a", "ike-branch-c", "ike-hq"}}
	if diff := cmp.Diff(want, res, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("Reapply: -want, +got:\n%s", diff)
	}
	if diff := cmp.Diff(wantConns, getConns(t, fresh.Session)); diff != "" {
		t.Errorf("get-conns of the fresh charon after Reapply: -want, +got:\n%s", diff)
	}
}

// netns starts a process in a new network namespace for t and returns the
// path of that namespace; the process ends, and the namespace with it, when
// t ends.
func netns(t *testing.T) string {
	t.Helper()
	cmd := exec.Command("unshare", "--net", "sleep", "infinity")
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatalf("unshare --net: %v", err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	ns := filepath.Join("/proc", strconv.Itoa(cmd.Process.Pid), "ns", "net")
	// unshare execs sleep once the namespace exists.
	self, _ := os.Readlink("/proc/self/ns/net")
	for deadline := time.Now().Add(5 * time.Second); ; {
		if l, err := os.Readlink(ns); err == nil && l != self {
			return ns
		}
		if time.Now().After(deadline) {
			t.Fatal("the new network namespace did not appear")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestAgentApplyNAT applies golden NAT scripts with the agent's nat.Applier
// in a new network namespace that also holds another table: after several
// applies (one skipped as unchanged) the namespace holds table ip ipsecgw
// once, with the last script's rules, and the other table as it was.
func TestAgentApplyNAT(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("nft in a network namespace of the test's own needs root")
	}
	if _, err := exec.LookPath("nft"); err != nil {
		t.Skip("nft is missing: apt-get install nftables")
	}
	ctx := context.Background()
	ns := netns(t)
	nft := func(args ...string) string {
		t.Helper()
		out, err := exec.Command("nsenter", append([]string{"--net=" + ns, "nft"}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("nft %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	nft("add table inet ipa-other")
	nft("add chain inet ipa-other input { type filter hook input priority 0; policy accept; }")
	nft("add rule inet ipa-other input tcp dport 22 accept")
	other := nft("list table inet ipa-other")

	read := func(name string) []byte {
		b, err := os.ReadFile(filepath.Join(goldenDir, name, "nat.nft"))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	plain, exposures := read("single-tunnel"), read("nat-exposures")
	a := nat.New(nat.WithCommand("nsenter", "--net="+ns, "nft"))
	for i, step := range []struct {
		script      []byte
		wantApplied bool
	}{{plain, true}, {exposures, true}, {exposures, false}, {plain, true}, {exposures, true}} {
		start := time.Now()
		applied, err := a.Apply(ctx, step.script)
		if err != nil {
			t.Fatalf("step %d: Apply: %v", i, err)
		}
		if applied != step.wantApplied {
			t.Errorf("step %d: Apply applied = %v, want %v", i, applied, step.wantApplied)
		}
		t.Logf("step %d: applied=%v in %s", i, applied, time.Since(start).Round(time.Millisecond))
	}
	tables := strings.Split(strings.TrimSpace(nft("list tables")), "\n")
	slices.Sort(tables)
	if diff := cmp.Diff([]string{"table inet ipa-other", "table ip ipsecgw"}, tables); diff != "" {
		t.Errorf("nft list tables: -want, +got:\n%s", diff)
	}
	got := nft("list table ip ipsecgw")
	for _, target := range []string{"dnat to 10.96.0.1:8443", "dnat to 10.20.0.53:53", "dnat to 192.168.10.5:5432"} {
		if n := strings.Count(got, target); n != 1 {
			t.Errorf("table ip ipsecgw holds %q %d times, want once:\n%s", target, n, got)
		}
	}
	if diff := cmp.Diff(other, nft("list table inet ipa-other")); diff != "" {
		t.Errorf("the other table changed: -before, +after:\n%s", diff)
	}
}

// liveGateway is the gateway spec of TestAgentApplyAddsPairLive: one tunnel
// to the harness's first peer, one CHILD_SA per subnet pair; pairs are
// appended as "{local: ..., remote: ...}".
const liveGateway = `namespace: ipa
endpoint:
  privateAddress: %s
  prefixLength: %d
  gateway: %s
  macAddress: %s
  localId: %s
tunnels:
  - name: site
    peer: {address: %s}
    ikeVersion: 2
    ikeProposals: [aes256-sha256-modp2048]
    espProposals: [aes256-sha256]
    preSharedKeySecretRef: {name: vpn-psk, key: site}
    childSALayout: PerSubnetPair
    trafficSelectors:
%s`

// TestAgentApplyAddsPairLive adds subnet pairs to a running tunnel through
// the Applier: the gateway's connection is reloaded live, the CHILD_SA
// that was up keeps its SPIs (it was not torn down or rekeyed), and the new
// pairs' CHILD_SAs come up next to it. Removing the middle one of three
// pairs closes only its CHILD_SA: the others keep their names (the renderer
// names a child after its pair) and so their SPIs. Removing the tunnel
// closes its IKE SA.
func TestAgentApplyAddsPairLive(t *testing.T) {
	tp := topology.Start(t, topology.Options{})
	ctx := context.Background()
	peer := tp.Peers[0]
	// More tenant subnets behind the gateway, for the new pairs: libipsec
	// needs a local address inside each CHILD_SA's local selector.
	second, third := netip.MustParsePrefix("10.30.1.0/24"), netip.MustParsePrefix("10.30.2.0/24")
	tp.MustExec(tp.Gateway.NS, "ip", "addr", "add", "10.30.1.1/24", "dev", topology.TenantInterface)
	tp.MustExec(tp.Gateway.NS, "ip", "addr", "add", "10.30.2.1/24", "dev", topology.TenantInterface)
	pairA, pairB, pairC := [2]netip.Prefix{topology.TenantSubnet, peer.Subnet}, [2]netip.Prefix{second, peer.Subnet}, [2]netip.Prefix{third, peer.Subnet}
	name := func(p [2]netip.Prefix) string { return render.ChildName("site", p[0], p[1]) }
	childA, childB, childC := name(pairA), name(pairB), name(pairC)

	render1 := func(pairs ...[2]netip.Prefix) (conf, secrets []byte) {
		t.Helper()
		var ts strings.Builder
		for _, p := range pairs {
			fmt.Fprintf(&ts, "      - {local: %s, remote: %s}\n", p[0], p[1])
		}
		spec := fmt.Sprintf(liveGateway, topology.PrivateAddress, topology.PrivatePrefixLength, topology.Router,
			topology.MACAddress, topology.FloatingIP, peer.Address, ts.String())
		in := render.Input{PSKs: map[string][]byte{"site": []byte("ipa-live-psk")}}
		if err := yaml.UnmarshalStrict([]byte(spec), &in.Spec); err != nil {
			t.Fatal(err)
		}
		files, err := render.Render(in)
		if err != nil {
			t.Fatal(err)
		}
		return files.SwanctlConf, files.Secrets
	}
	sheet := topology.ClientSheet{
		Name: "gw", LocalAddress: peer.Address.String(), RemoteAddress: topology.FloatingIP.String(),
		PSK: "ipa-live-psk", IKEProposals: []string{"aes256-sha256-modp2048"}, ESPProposals: []string{"aes256-sha256"},
		StartAction: "start",
		Children:    []topology.ClientChild{{Name: "gw-1", LocalTS: []string{peer.Subnet.String()}, RemoteTS: []string{topology.TenantSubnet.String()}}},
	}

	// The Applier gets a session of its own (a session per call site).
	a := apply.New(tp.Gateway.Dial(t), apply.WithValidator(gatewayValidator(t, tp)))
	conf, secrets := render1(pairA)
	if _, err := a.Apply(ctx, conf, secrets); err != nil {
		t.Fatalf("Apply(one pair): %v", err)
	}
	start := time.Now()
	if err := peer.LoadSheet(ctx, sheet); err != nil {
		t.Fatal(err)
	}
	before := tp.Gateway.WaitSA(t, "site", 20*time.Second, topology.Up(childA))
	t.Logf("tunnel up in %s", time.Since(start).Round(time.Millisecond))
	spis := func(sa topology.IKESA, child string) string {
		c, _ := sa.Child(child)
		return c.UniqueID + "/" + c.SPIIn + "/" + c.SPIOut
	}
	wasA := spis(before, childA)

	// Add two pairs on the gateway through the Applier, then on the peer.
	conf, secrets = render1(pairA, pairB, pairC)
	res, err := a.Apply(ctx, conf, secrets)
	if err != nil {
		t.Fatalf("Apply(three pairs): %v", err)
	}
	if diff := cmp.Diff([]string{"site"}, res.Loaded); diff != "" {
		t.Errorf("Apply(three pairs) loaded: -want, +got:\n%s", diff)
	}
	sheet.Children = append(sheet.Children,
		topology.ClientChild{Name: "gw-2", LocalTS: []string{peer.Subnet.String()}, RemoteTS: []string{second.String()}},
		topology.ClientChild{Name: "gw-3", LocalTS: []string{peer.Subnet.String()}, RemoteTS: []string{third.String()}})
	start = time.Now()
	if err := peer.LoadSheet(ctx, sheet); err != nil {
		t.Fatal(err)
	}
	after := tp.Gateway.WaitSA(t, "site", 20*time.Second, topology.Up(childA, childB, childC))
	t.Logf("new CHILD_SAs up %s after the peer's reload", time.Since(start).Round(time.Millisecond))
	if after.UniqueID != before.UniqueID {
		t.Errorf("the IKE SA was replaced: uniqueid %s, was %s", after.UniqueID, before.UniqueID)
	}
	if got := spis(after, childA); got != wasA {
		t.Errorf("the existing CHILD_SA %s changed across the reload: uniqueid/spi-in/spi-out %s, were %s", childA, got, wasA)
	}
	if n := len(after.ChildSAs); n != 3 {
		t.Errorf("the IKE SA has %d CHILD_SAs, want 3: %+v", n, after.ChildSAs)
	}
	wasC := spis(after, childC)

	// Remove the middle pair: charon would keep the removed child's
	// CHILD_SA up by itself; the Applier terminates it, and the children
	// of the first and last pairs stay with their SPIs.
	conf, secrets = render1(pairA, pairC)
	res, err = a.Apply(ctx, conf, secrets)
	if err != nil {
		t.Fatalf("Apply(first and last pairs): %v", err)
	}
	if diff := cmp.Diff([]string{"site/" + childB}, res.Terminated); diff != "" {
		t.Errorf("Apply(first and last pairs) terminated: -want, +got:\n%s", diff)
	}
	left := tp.Gateway.WaitSA(t, "site", 10*time.Second, func(sa topology.IKESA) bool {
		_, hasB := sa.Child(childB)
		return !hasB
	})
	if left.UniqueID != before.UniqueID {
		t.Errorf("removing a pair replaced the IKE SA: uniqueid %s, was %s", left.UniqueID, before.UniqueID)
	}
	for child, was := range map[string]string{childA: wasA, childC: wasC} {
		if got := spis(left, child); got != was || !topology.Up(child)(left) {
			t.Errorf("the remaining CHILD_SA %s changed when the middle pair was removed: uniqueid/spi-in/spi-out %s, were %s (IKE SA %+v)", child, got, was, left)
		}
	}

	// Remove the tunnel: its IKE SA is closed too.
	res, err = a.Apply(ctx, nil, nil)
	if err != nil {
		t.Fatalf("Apply(no tunnel): %v", err)
	}
	if diff := cmp.Diff([]string{"site"}, res.Terminated); diff != "" {
		t.Errorf("Apply(no tunnel) terminated: -want, +got:\n%s", diff)
	}
	// Two empty lists in a row: a single list-sas can miss its last SA
	// (govici v0.8.0, see remoteTS).
	deadline := time.Now().Add(10 * time.Second)
	for empty := 0; empty < 2; {
		sas, err := tp.Gateway.ListSAs(ctx)
		if err == nil && len(sas) == 0 {
			empty++
			continue
		}
		empty = 0
		if time.Now().After(deadline) {
			t.Fatalf("the gateway still has SAs after its tunnel was removed: %+v (%v)", sas, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestAgentApplyValidatorBesideLiveCharon runs the validator as the agent
// does in the gateway pod: its charon in the live charon's network
// namespace, with no capability beyond NET_ADMIN (no namespaces of its
// own). Valid and invalid sets (whose tunnel starts at once) are judged as
// elsewhere, and neither the live charon nor the peer notices anything:
// the tunnel keeps its SAs and carries traffic, the peer saw no IKE_SA_INIT
// from a validation charon, and the namespace's sockets, policy routing
// rules, table 220 routes and XFRM state are as before; no validation
// charon is left running.
func TestAgentApplyValidatorBesideLiveCharon(t *testing.T) {
	tp := topology.Start(t, topology.Options{})
	peer := tp.Peers[0]
	ctx := context.Background()
	const psk = "validator-beside-psk-0123"
	loadSheets(t, tp, clientSheet(peer, psk, tenantChild(peer)))
	spec := tunnelGateway("validator-beside", v1alpha1.ModeRouted,
		siteTunnel("site", peer, v1alpha1.ChildSAPerSubnetPair, [2]netip.Prefix{topology.TenantSubnet, peer.Subnet}))
	files, err := render.Render(render.Input{Spec: spec, PSKs: map[string][]byte{"site": []byte(psk)}})
	if err != nil {
		t.Fatal(err)
	}
	if err := tp.Gateway.LoadConfig(ctx, files.SwanctlConf, files.Secrets); err != nil {
		t.Fatal(err)
	}
	child := render.ChildName("site", topology.TenantSubnet, peer.Subnet)
	before := tp.Gateway.WaitSA(t, "site", tunnelTimeout, topology.Up(child))
	wasChild, _ := before.Installed(child)
	// The gateway can see its IKE SA up a moment before the peer lists
	// its own (seen with the peer's list still empty).
	peer.WaitSA(t, "to-provider", tunnelTimeout, topology.Up("tenant"))
	state := func() map[string]string {
		t.Helper()
		out := map[string]string{}
		for what, args := range map[string][]string{
			"udp sockets":   {"ss", "-Hlunp"},
			"rules":         {"ip", "rule"},
			"table 220":     {"ip", "route", "show", "table", "220"},
			"xfrm policies": {"ip", "xfrm", "policy"},
			"xfrm states":   {"ip", "xfrm", "state"},
		} {
			out[what] = tp.MustExec(tp.Gateway.NS, args...)
		}
		pids, err := exec.Command("ip", "netns", "pids", tp.Gateway.NS).Output()
		if err != nil {
			t.Fatal(err)
		}
		out["processes"] = string(pids)
		return out
	}
	peerSAs := func() []string {
		t.Helper()
		sas, err := peer.ListSAs(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, sa := range sas {
			out = append(out, sa.Name+"/"+sa.UniqueID+"/"+sa.State)
		}
		return out
	}
	wasPeer := peerSAs()
	was := state()
	if !strings.Contains(was["rules"], "lookup 220") {
		t.Fatalf("the live charon has no policy routing rule for table 220:\n%s", was["rules"])
	}

	v := gatewayValidator(t, tp)
	good, err := apply.Convert(files.SwanctlConf, files.Secrets)
	if err != nil {
		t.Fatal(err)
	}
	bad, err := apply.Convert([]byte(strings.Replace(string(files.SwanctlConf), "modp2048", "modp2047", 1)), files.Secrets)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := v.Validate(ctx, good); err != nil {
		t.Errorf("the validator beside the live charon refuses a valid set: %v", err)
	}
	t.Logf("validated beside the live charon in %v", time.Since(start).Round(time.Millisecond))
	if err := v.Validate(ctx, bad); err == nil || !strings.Contains(err.Error(), "connection site") {
		t.Errorf("the validator beside the live charon: %v, want connection site refused", err)
	}
	// Two validations at once take turns on charon's pid file.
	errs := make(chan error, 2)
	for range 2 {
		go func() { errs <- v.Validate(ctx, good) }()
	}
	for range 2 {
		if err := <-errs; err != nil {
			t.Errorf("concurrent validation: %v", err)
		}
	}

	if diff := cmp.Diff(was, state()); diff != "" {
		t.Errorf("the validations changed the gateway's namespace: -before, +after:\n%s", diff)
	}
	// The validation charons initiated nothing: the peer has its one IKE
	// SA, no half-open one from them.
	if diff := cmp.Diff(wasPeer, peerSAs()); diff != "" {
		t.Errorf("the peer's IKE SAs changed: -before, +after:\n%s", diff)
	}
	after := tp.Gateway.WaitSA(t, "site", tunnelTimeout, topology.Up(child))
	if now, _ := after.Installed(child); after.UniqueID != before.UniqueID || now.SPIIn != wasChild.SPIIn {
		t.Errorf("the live tunnel changed: IKE SA %s, CHILD_SA spi-in %s; were %s, %s", after.UniqueID, now.SPIIn, before.UniqueID, wasChild.SPIIn)
	}
	ping(t, tp, "client host → tenant service after the validations", peer.HostNS, topology.Service)
	if left, _ := os.ReadDir(v.TempDir); len(left) != 0 {
		t.Errorf("the validator left %d entries in its temporary directory", len(left))
	}
}

// TestAgentApplyValidatorWaitsForPidFile stands in for another process'
// validation charon holding /var/run/charon.pid: a command that says what
// charon says then ("charon already running") and exits. The validator
// starts charon again until it runs, and gives up after its Timeout.
func TestAgentApplyValidatorWaitsForPidFile(t *testing.T) {
	needRoot(t)
	conf, secrets := goldenSet(t, "single-tunnel")
	s, err := apply.Convert(conf, secrets)
	if err != nil {
		t.Fatal(err)
	}
	// busy exits like charon with a live pid file while marker is absent
	// or always, then runs charon in a network namespace of its own.
	busy := func(marker string, times int) []string {
		script := fmt.Sprintf(`n=$(cat %[1]q 2>/dev/null || echo 0); if [ "$n" -lt %[2]d ]; then echo $((n+1)) > %[1]q; `+
			`echo "00[DMN] charon already running ('/var/run/charon.pid' exists)"; exit 66; fi; exec unshare --net -- %[3]s`,
			marker, times, apply.CharonBinary)
		return []string{"sh", "-c", script}
	}
	waits := apply.CharonValidator{TempDir: t.TempDir(), Command: busy(filepath.Join(t.TempDir(), "n"), 3)}
	start := time.Now()
	if err := waits.Validate(context.Background(), s); err != nil {
		t.Errorf("the validator did not wait for the pid file: %v", err)
	}
	t.Logf("validated after three busy starts in %v", time.Since(start).Round(time.Millisecond))

	gives := apply.CharonValidator{TempDir: t.TempDir(), Command: busy(filepath.Join(t.TempDir(), "n"), 1<<30), Timeout: 300 * time.Millisecond}
	if err := gives.Validate(context.Background(), s); err == nil || !strings.Contains(err.Error(), "already running") {
		t.Errorf("the validator with the pid file always held: %v, want charon's 'already running'", err)
	}
}
