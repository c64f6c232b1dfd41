//go:build integration

package integration

import (
	"bufio"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/floatingips"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/routers"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/security/groups"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/security/rules"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
	"k8s.io/apimachinery/pkg/util/uuid"

	"github.com/ipsecgw/provider-ipsec/cluster/openstack/vif"
	"github.com/ipsecgw/provider-ipsec/test/topology"
)

var (
	agentsOnce sync.Once
	agentsEnv  *openStackEnv
	agentsHost vif.Host
	agentsErr  error
	// hostBefore is the host's network before the agents started (empty
	// when they were not started); stopOpenStack compares it again after
	// down.sh; hostBeforeNets is the same without /run/netns, for the
	// comparison while the agents run.
	hostBefore, hostBeforeNets string
	// agentsOwn says which names in /run/netns the agents' instance
	// makes: its own and its routers'; another stack's beside it (the
	// e2e's, a developer's) come and go as they please.
	agentsOwn func(string) bool
	// agentsRouters are the routers the agents' L3 agent logged, read by
	// stopOpenStack before down.sh removes the log.
	agentsRouters []string
)

// ownedNetns returns what agentsOwn is for the instance with state
// directory state: the agents' namespaces, named after the state's hash
// as cluster/openstack/lib.sh names them (OS_ID), and the qrouter
// namespace of every router in agentsRouters.
func ownedNetns(state string) func(string) bool {
	id := fmt.Sprintf("%x", sha256.Sum256([]byte(state)))[:8]
	return func(name string) bool {
		if name == "osagents-"+id || name == "osext-"+id {
			return true
		}
		r, ok := strings.CutPrefix(name, "qrouter-")
		return ok && slices.Contains(agentsRouters, r)
	}
}

// loggedRouters returns the routers the L3 agent of the instance in state
// logged ("router update for <id>"), as cluster/openstack/agents.sh finds
// the qrouter namespaces it removes; none when there is no log.
func loggedRouters(state string) []string {
	b, _ := os.ReadFile(filepath.Join(state, "log", "l3-agent.log"))
	var ids []string
	for _, m := range routerUpdate.FindAllSubmatch(b, -1) {
		if id := string(m[1]); !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
	}
	return ids
}

var routerUpdate = regexp.MustCompile(`router update for ([0-9a-f-]+)`)

// startAgents starts, once, a Keystone and Neutron of their own with
// Neutron's real L2 and L3 agents (AGENTS=1 up.sh), on the package's ports
// plus 100, recording the host's network before; TestMain stops them
// (down.sh). The package's Neutron stays API-only: the other tests need no
// data plane, and the agents cost ~0.8 GiB.
func startAgents(t *testing.T) (*openStackEnv, vif.Host) {
	t.Helper()
	startOpenStack(t) // skips when not root
	agentsOnce.Do(func() {
		state, err := openStackState("itest-openstack-agents", itestPort("ITEST_NEUTRON_PORT", 19696)+100)
		if agentsErr = err; err != nil {
			return
		}
		agentsOwn = ownedNetns(state)
		if hostBefore, agentsErr = hostNetwork(agentsOwn); agentsErr != nil {
			return
		}
		if hostBeforeNets, agentsErr = hostNetwork(nil); agentsErr != nil {
			return
		}
		// TestMain stops it (stopOpenStack), also when up.sh failed half way.
		agentsEnv, agentsErr = upOpenStack("itest-openstack-agents", itestPort("ITEST_KEYSTONE_PORT", 15000)+100, itestPort("ITEST_NEUTRON_PORT", 19696)+100, "AGENTS=1")
		if agentsErr != nil {
			return
		}
		if agentsErr = agentsEnv.providerConfigsNamed("openstack-agents-clouds", "openstack-agents", nil); agentsErr != nil {
			return
		}
		agentsHost, agentsErr = vif.LoadHost(agentsEnv.State)
	})
	if agentsErr != nil {
		t.Fatalf("cannot start the Neutron agents: %v", agentsErr)
	}
	return agentsEnv, agentsHost
}

// counters are iptables-save's packet and byte counts, which traffic changes.
var counters = regexp.MustCompile(`\[\d+:\d+\]`)

// hostNetwork prints what of the host's own network namespace the agents
// could change: its netfilter rules (iptables, ip6tables, ebtables, nft),
// links, addresses, routes, the forwarding and bridge-netfilter sysctls;
// with owned, also the names in /run/netns it says are the agents' or
// their routers' (which exist while they run).
func hostNetwork(owned func(string) bool) (string, error) {
	var b strings.Builder
	for _, c := range [][]string{
		{"iptables-save"}, {"ip6tables-save"}, {"ebtables-save"}, {"nft", "list", "ruleset"},
		{"ip", "-o", "link"}, {"ip", "-o", "addr"}, {"ip", "route"}, {"ip", "-6", "route"},
	} {
		out, err := exec.Command(c[0], c[1:]...).Output()
		if err != nil {
			return "", fmt.Errorf("%s: %w", strings.Join(c, " "), err)
		}
		for l := range strings.Lines(string(out)) {
			if !strings.HasPrefix(l, "#") {
				b.WriteString(counters.ReplaceAllString(l, ""))
			}
		}
	}
	for _, k := range []string{"ipv4/ip_forward", "ipv6/conf/all/forwarding", "ipv4/conf/all/rp_filter",
		"ipv4/conf/all/proxy_arp", "bridge/bridge-nf-call-iptables", "bridge/bridge-nf-call-ip6tables",
		"bridge/bridge-nf-call-arptables"} {
		v, err := os.ReadFile("/proc/sys/net/" + k)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return "", err
		}
		fmt.Fprintf(&b, "%s=%s", k, v)
	}
	entries, _ := os.ReadDir("/run/netns")
	for _, n := range entries {
		if owned != nil && owned(n.Name()) {
			fmt.Fprintf(&b, "netns %s\n", n.Name())
		}
	}
	return b.String(), nil
}

// checkHostAfter compares the host's network after down.sh with the one
// before the agents started, if they did.
func checkHostAfter() error {
	if hostBefore == "" {
		return nil
	}
	after, err := hostNetwork(agentsOwn)
	if err != nil {
		return err
	}
	if d := cmp.Diff(hostBefore, after); d != "" {
		return fmt.Errorf("the host's network differs after down.sh from before the agents started (-before +after):\n%s", d)
	}
	return nil
}

// agentsNetns makes the network namespace name, deleted (with its links and
// whatever they connect) when t ends.
func agentsNetns(t *testing.T, name string) string {
	t.Helper()
	if out, err := exec.Command("ip", "netns", "add", name).CombinedOutput(); err != nil {
		t.Fatalf("cannot add namespace %s: %v: %s", name, err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("ip", "netns", "delete", name).CombinedOutput(); err != nil {
			t.Errorf("cannot delete namespace %s: %v: %s", name, err, out)
		}
	})
	mustRun(t, "ip", "-n", name, "link", "set", "lo", "up")
	return name
}

// mustRun runs a command, failing t on error.
func mustRun(t *testing.T, args ...string) string {
	t.Helper()
	out, err := exec.Command(args[0], args[1:]...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// securityGroup creates a security group of project named name, deleted
// when t ends, with the rules rs (each made ingress IPv4 of the group).
func securityGroup(t *testing.T, sc *gophercloud.ServiceClient, name, project string, rs ...rules.CreateOpts) *groups.SecGroup {
	t.Helper()
	ctx := context.Background()
	sg, err := groups.Create(ctx, sc, groups.CreateOpts{Name: name, ProjectID: project}).Extract()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = groups.Delete(context.Background(), sc, sg.ID).ExtractErr() })
	for _, r := range rs {
		r.SecGroupID, r.Direction, r.EtherType, r.ProjectID = sg.ID, rules.DirIngress, rules.EtherType4, project
		if _, err := rules.Create(ctx, sc, r).Extract(); err != nil {
			t.Fatal(err)
		}
	}
	return sg
}

// TestNeutronAgentsEnforcePortSecurity wires a "VM" (a namespace) to a
// Neutron port bound to the real agents' host, as Nova/os-vif would, and
// checks what a real cloud enforces on it: the port goes ACTIVE; frames with
// a source IP or MAC the port does not own are dropped until an allowed
// address pair admits them; a floating IP is DNATed and SNATed by the real
// qrouter, and no longer once disassociated. The host's network is the same
// with the agents running as before.
func TestNeutronAgentsEnforcePortSecurity(t *testing.T) {
	e, h := startAgents(t)
	ctx := context.Background()
	sc := adminNeutron(t, e)
	id := fmt.Sprint(os.Getpid())
	project := e.Fixtures.Project.ID

	sg := securityGroup(t, sc, "agents-vm-"+id, project, rules.CreateOpts{Protocol: rules.ProtocolTCP, PortRangeMin: 8080, PortRangeMax: 8080})
	// newPort creates a port, deleted when the test ends. Those on which
	// nothing is plugged reserve their fixed IP (and MAC) for the test.
	newPort := func(name, network string, sgs []string) *ports.Port {
		t.Helper()
		p, err := ports.Create(ctx, sc, ports.CreateOpts{Name: name + "-" + id, NetworkID: network, ProjectID: project, SecurityGroups: &sgs}).Extract()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = ports.Delete(context.Background(), sc, p.ID).ExtractErr() })
		return p
	}
	vmPort := newPort("agents-vm", e.Fixtures.TenantNet.ID, []string{sg.ID})
	// The gateway's port: its fixed IP and MAC are held by a macvlan (the
	// gateway pod's net1) on the VM's interface, as on a node.
	gwPort := newPort("agents-gateway", e.Fixtures.TenantNet.ID, []string{})
	spoofPort := newPort("agents-spoofed", e.Fixtures.TenantNet.ID, []string{})
	clientPort := newPort("agents-ext-client", e.Fixtures.ExtNet.ID, []string{})
	fixedIP, gwIP, gwMAC := vmPort.FixedIPs[0].IPAddress, gwPort.FixedIPs[0].IPAddress, gwPort.MACAddress
	spoofIP, clientIP := spoofPort.FixedIPs[0].IPAddress, clientPort.FixedIPs[0].IPAddress

	vmNS := agentsNetns(t, "agvm-"+id)
	podNS := agentsNetns(t, "agpod-"+id)
	extNS := agentsNetns(t, "agext-"+id)
	// The outside: a host on the external network's wire.
	wire := fmt.Sprintf("agx%d", os.Getpid())
	mustRun(t, "ip", "-n", extNS, "link", "add", "eth0", "type", "veth", "peer", "name", wire, "netns", h.ExternalNamespace)
	mustRun(t, "ip", "-n", h.ExternalNamespace, "link", "set", wire, "master", h.ExternalBridge, "up")
	mustRun(t, "ip", "-n", extNS, "addr", "add", clientIP+"/24", "dev", "eth0")
	mustRun(t, "ip", "-n", extNS, "link", "set", "eth0", "up")

	inst := vif.Instance{ID: string(uuid.NewUUID()), Namespace: vmNS}
	v, bound := plugVM(t, sc, h, inst, vmPort.ID, "eth0")
	if diff := cmp.Diff([]string{inst.ID, vif.DeviceOwner}, []string{bound.DeviceID, bound.DeviceOwner}); diff != "" {
		t.Errorf("bound port's device_id, device_owner (-want +got):\n%s", diff)
	}
	mustRun(t, "ip", "-n", vmNS, "addr", "add", spoofIP+"/24", "dev", "eth0")
	mustRun(t, "ip", "-n", vmNS, "link", "add", "net1", "link", "eth0", "type", "macvlan", "mode", "bridge")
	mustRun(t, "ip", "-n", vmNS, "link", "set", "net1", "netns", podNS)
	mustRun(t, "ip", "-n", podNS, "link", "set", "net1", "address", gwMAC, "up")
	mustRun(t, "ip", "-n", podNS, "addr", "add", gwIP+"/24", "dev", "net1")

	router := "10.20.0.1"
	sources := map[string]struct{ ns, ip string }{
		"fixed IP":    {vmNS, fixedIP},
		"spoofed IP":  {vmNS, spoofIP},
		"foreign MAC": {podNS, gwIP},
	}
	// pings succeeds when a ping from src gets an answer from the router.
	pings := func(ns, src string) bool {
		return exec.Command("ip", "netns", "exec", ns, "ping", "-n", "-q", "-c", "3", "-i", "0.2", "-W", "1", "-I", src, router).Run() == nil
	}
	// The L3 agent wires the fixtures' router (made before it started)
	// at its first sync, which takes a while on a busy machine: wait for
	// the router to answer the port's own address before the table.
	wired := time.Now()
	for !pings(vmNS, fixedIP) {
		if time.Since(wired) > 2*time.Minute {
			t.Fatalf("the router %s does not answer the VM's fixed IP %s after 2 min: is the router wired in its qrouter namespace?", router, fixedIP)
		}
		time.Sleep(time.Second)
	}
	t.Logf("the router answers the VM %s after it was plugged", time.Since(wired).Round(100*time.Millisecond))
	spoofing := []struct {
		name, reason string
		pairs        []ports.AddressPair
		want         map[string]bool
	}{
		{
			name:   "no pairs",
			reason: "A port without allowed address pairs passes its own MAC and fixed IP only: iptables drops the spoofed source IP, ebtables the foreign source MAC.",
			want:   map[string]bool{"fixed IP": true, "spoofed IP": false, "foreign MAC": false},
		},
		{
			name:   "IP pairs",
			reason: "An allowed address pair without a MAC admits its IP with the port's MAC only: the spoofed IP passes, the gateway's IP with the gateway's MAC does not.",
			pairs:  []ports.AddressPair{{IPAddress: spoofIP}, {IPAddress: gwIP}},
			want:   map[string]bool{"fixed IP": true, "spoofed IP": true, "foreign MAC": false},
		},
		{
			name:   "IP and MAC pair",
			reason: "An allowed address pair with the gateway's MAC admits the macvlan's frames.",
			pairs:  []ports.AddressPair{{IPAddress: spoofIP}, {IPAddress: gwIP, MACAddress: gwMAC}},
			want:   map[string]bool{"fixed IP": true, "spoofed IP": true, "foreign MAC": true},
		},
		{
			name:   "pairs removed",
			reason: "Without the pairs, both are dropped again.",
			pairs:  []ports.AddressPair{},
			want:   map[string]bool{"fixed IP": true, "spoofed IP": false, "foreign MAC": false},
		},
	}
	for _, tc := range spoofing {
		t.Run(tc.name, func(t *testing.T) {
			pairs := tc.pairs
			if pairs == nil {
				pairs = []ports.AddressPair{}
			}
			if _, err := ports.Update(ctx, sc, vmPort.ID, ports.UpdateOpts{AllowedAddressPairs: &pairs}).Extract(); err != nil {
				t.Fatal(err)
			}
			got := map[string]bool{}
			for name, s := range sources {
				got[name] = settles(tc.want[name], func() bool { return pings(s.ns, s.ip) })
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\nanswered pings to the router (-want +got):\n%s\nthe agent's rules for %s:\n%s", tc.reason, diff, v.Tap, portRules(h, v.Tap))
			}
		})
	}

	// The floating IP: the VM serves TCP 8080 and says whom it sees; the
	// outside serves 9090 and says the same.
	serveWhoAmI(t, vmNS, ":8080")
	serveWhoAmI(t, extNS, clientIP+":9090")
	gw, err := routers.Get(ctx, sc, e.Fixtures.Router.ID).Extract()
	if err != nil || len(gw.GatewayInfo.ExternalFixedIPs) == 0 {
		t.Fatalf("router %s's gateway: %v %+v", e.Fixtures.Router.ID, err, gw)
	}
	snat := gw.GatewayInfo.ExternalFixedIPs[0].IPAddress
	fip, err := floatingips.Create(ctx, sc, floatingips.CreateOpts{FloatingNetworkID: e.Fixtures.ExtNet.ID, ProjectID: project}).Extract()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = floatingips.Delete(context.Background(), sc, fip.ID).ExtractErr() })
	type nat struct{ Inbound, Outbound string }
	look := func() nat {
		return nat{
			Inbound:  askWhoAmI(extNS, fip.FloatingIP+":8080"),
			Outbound: askWhoAmI(vmNS, clientIP+":9090"),
		}
	}
	floating := []struct {
		name, reason string
		port         string
		want         nat
	}{
		{
			name:   "associated",
			reason: "The qrouter DNATs the floating IP to the port's fixed IP (the client's address kept) and SNATs the port's connections to the floating IP.",
			port:   vmPort.ID,
			want:   nat{Inbound: fixedIP + " sees " + clientIP, Outbound: clientIP + " sees " + fip.FloatingIP},
		},
		{
			name:   "disassociated",
			reason: "Disassociated, the floating IP reaches nothing and the port's connections leave with the router's gateway address.",
			port:   "",
			want:   nat{Inbound: "no connection", Outbound: clientIP + " sees " + snat},
		},
	}
	for _, tc := range floating {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := floatingips.Update(ctx, sc, fip.ID, floatingips.UpdateOpts{PortID: &tc.port}).Extract(); err != nil {
				t.Fatal(err)
			}
			var got nat
			deadline := time.Now().Add(30 * time.Second)
			for got = look(); got != tc.want && time.Now().Before(deadline); got = look() {
				time.Sleep(500 * time.Millisecond)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\n(-want +got):\n%s", tc.reason, diff)
			}
		})
	}

	during, err := hostNetwork(nil)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(hostBeforeNets, during); diff != "" {
		t.Errorf("the agents changed the host's network (-before +with agents):\n%s", diff)
	}
}

// plugVM plugs the namespace of inst into the port portID as Nova and
// os-vif would (its interface ifname), unplugged when t ends, and waits
// until the agent has made the port ACTIVE.
func plugVM(t *testing.T, sc *gophercloud.ServiceClient, h vif.Host, inst vif.Instance, portID, ifname string) (*vif.VIF, *ports.Port) {
	t.Helper()
	ctx := context.Background()
	v, err := vif.Plug(ctx, sc, h, inst, portID, ifname, time.Minute)
	t.Cleanup(func() {
		if v != nil {
			if err := vif.Unplug(context.Background(), sc, h, v); err != nil {
				t.Error(err)
			}
		}
	})
	if err != nil {
		t.Fatalf("cannot plug port %s: %v", portID, err)
	}
	bound, err := vif.WaitActive(ctx, sc, portID, time.Minute)
	if err != nil {
		t.Fatalf("port %s bound to %s: %v", portID, h.Name, err)
	}
	return v, bound
}

// portRules prints the linuxbridge agent's ebtables and iptables rules
// that mention the tap (truncated to its first 11 characters in chain names).
func portRules(h vif.Host, tap string) string {
	var b strings.Builder
	for _, c := range [][]string{{"ebtables-save"}, {"iptables-save"}} {
		out, _ := exec.Command("ip", append([]string{"netns", "exec", h.Namespace}, c...)...).CombinedOutput()
		for l := range strings.Lines(string(out)) {
			if strings.Contains(l, tap[3:]) {
				b.WriteString(l)
			}
		}
	}
	return b.String()
}

// settles probes until it gives want, for 30 s at most, and returns the
// last result. A drop must be seen twice in a row: one lost exchange
// could be a slow start.
func settles(want bool, probe func() bool) bool {
	return settlesWithin(30*time.Second, want, probe)
}

// settlesWithin is settles with the bound d.
func settlesWithin(d time.Duration, want bool, probe func() bool) bool {
	deadline := time.Now().Add(d)
	seen := 0
	for {
		got := probe()
		if got == want {
			if seen++; want || seen == 2 {
				return got
			}
		} else {
			seen = 0
		}
		if time.Now().After(deadline) {
			return got
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// serveWhoAmI serves TCP on addr in the namespace ns until t ends: each
// connection gets one line "<local IP> sees <remote IP>".
func serveWhoAmI(t *testing.T, ns, addr string) {
	t.Helper()
	var l net.Listener
	if err := topology.Do(ns, func() (err error) { l, err = net.Listen("tcp4", addr); return err }); err != nil {
		t.Fatalf("cannot listen on %s in %s: %v", addr, ns, err)
	}
	t.Cleanup(func() { _ = l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			local, _, _ := net.SplitHostPort(c.LocalAddr().String())
			remote, _, _ := net.SplitHostPort(c.RemoteAddr().String())
			fmt.Fprintf(c, "%s sees %s\n", local, remote)
			_ = c.Close()
		}
	}()
}

// askWhoAmI connects to addr from the namespace ns and returns the line it
// answers, or "no connection".
func askWhoAmI(ns, addr string) string {
	var c net.Conn
	if err := topology.Do(ns, func() (err error) { c, err = net.DialTimeout("tcp4", addr, 2*time.Second); return err }); err != nil {
		return "no connection"
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(2 * time.Second))
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return "no answer: " + err.Error()
	}
	return strings.TrimSpace(line)
}
