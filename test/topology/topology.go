// Package topology builds the world of the migration runbook, each piece in
// a network namespace of its own, with real strongSwan charons (Debian's):
// client sites with a client host each, the router, and whatever joins
// the tenant network. The integration tests (Start) build it with the
// router between the external and a tenant network of its own, the gateway
// behind a fixed 1:1 NAT of the floating IP:
//
//	host_i ─ client_i ─┐ external 198.51.100.0/24     tenant 10.20.0.0/24
//	192.168.10+i.5     ├─ .1 router: floating IP 1:1 ─ 10.20.0.1 ── gw 10.20.0.10 (charon) ─ svc 10.30.0.5
//	  192.168.10+i.1 / 198.51.100.7+i
//
// The local stack's site (cluster/site), its e2e and TestTopologyUplink
// build it in front of Neutron's real agents instead (Options.Uplink): the
// router is the upstream of Neutron's external network, tenant hosts are
// plugged into Neutron ports, the L3 agent's qrouter does the floating IPs.
//
// The kernel this runs on has no ESP (CONFIG_INET_ESP unset), so every
// charon uses strongSwan's userspace IPsec (kernel-libipsec: ESP in UDP
// 4500 over a TUN device), which routes a CHILD_SA's traffic only when the
// charon has an address inside the CHILD_SA's local traffic selector: the
// gateway has 10.30.0.1, each client site its .1.
//
// Every address lives inside the namespaces a Topology made; nothing is
// added to the host's namespace. Close (for Start: the test's end) removes
// every process, namespace and file, also after a failure.
package topology

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// Programs the topology runs, from Debian's strongswan-charon,
// strongswan-swanctl, strongswan-starter, iproute2, nftables and util-linux.
const (
	CharonBinary  = "/usr/lib/ipsec/charon"
	SwanctlBinary = "/usr/sbin/swanctl"
	StarterBinary = "/usr/lib/ipsec/starter"
)

// Addresses of the topology. They are the same in every topology: each has
// its own namespaces.
var (
	// PrivateAddress is the gateway's fixed IP on the tenant network (the
	// Neutron port's), the address charon binds.
	PrivateAddress = netip.MustParseAddr("10.20.0.10")
	// PrivatePrefixLength is the prefix length of the tenant network.
	PrivatePrefixLength = 24
	// Router is the router's address on the tenant network (the tenant
	// subnet's gateway), every tenant host's default gateway.
	Router = netip.MustParseAddr("10.20.0.1")
	// ExternalRouter is the router's address on the external network,
	// every client site's default gateway.
	ExternalRouter = netip.MustParseAddr("198.51.100.1")
	// MACAddress is the MAC of the gateway's interface on the tenant
	// network.
	MACAddress = "fa:16:3e:00:00:0a"
	// FloatingIP is the public address Start maps 1:1 to PrivateAddress;
	// the gateway's IKE identity.
	FloatingIP = netip.MustParseAddr("203.0.113.10")
	// TenantSubnet is the tenant-side network behind Start's gateway.
	TenantSubnet = netip.MustParsePrefix("10.30.0.0/24")
	// TenantAddress is the gateway's own address in TenantSubnet.
	TenantAddress = netip.MustParseAddr("10.30.0.1")
	// Service is the tenant service's address in TenantSubnet, in the svc
	// namespace of Start.
	Service = netip.MustParseAddr("10.30.0.5")
)

// Interfaces of the topology.
const (
	// TenantInterface is Start's gateway's interface towards the tenant
	// service, named like the gateway pod's interface on the cluster
	// network, which the NAT rules of reverse exposures match.
	TenantInterface = "eth0"
	// TenantBridge and ExternalBridge are the router's interfaces on the
	// tenant and the external network.
	TenantBridge   = "tenant"
	ExternalBridge = "external"
)

// Options shape a topology.
type Options struct {
	// Prefix starts the name of every namespace (Prefix + role); Start
	// chooses one naming the test binary's pid, so that a later Start
	// reaps what a killed binary left.
	Prefix string
	// Dir holds every file of the topology (one directory per charon);
	// Start uses a temporary directory of the test.
	Dir string
	// Peers is the number of client sites; 1 when zero, at most 8.
	Peers int
	// Conf is the strongswan.conf of the client sites' charons and, unless
	// GatewayConf is set, of Start's gateway (see Charon.Conf); NetworkConf
	// (ESP in userspace, kernel-libipsec) when nil.
	Conf func(dir, socket string) string
	// GatewayConf is the strongswan.conf of Start's gateway; Conf when nil.
	GatewayConf func(dir, socket string) string
	// Uplink, when set, puts the router in front of a real Neutron's
	// external network instead of standing in for it: the router has no
	// tenant bridge and no NAT, plugs a veth into Uplink.Bridge and routes
	// between the client sites and Neutron's routers (whose gateways and
	// floating IPs answer on that network), and tenant hosts are plugged
	// into Neutron's ports by the caller (AddNamespace).
	Uplink *Uplink
	// PeerAddresses are the client sites' public addresses on the
	// external network (198.51.100.0/24), in index order, as a manifest
	// names its peers; 198.51.100.7+i when nil.
	PeerAddresses []netip.Addr
	// Endpoint is Start's gateway's endpoint, as a manifest names it;
	// PrivateAddress, MACAddress and FloatingIP when zero.
	Endpoint Endpoint
}

// An Endpoint is where Start puts its gateway: its fixed IP on the tenant
// network, its MAC there and the floating IP the router maps 1:1 to it.
type Endpoint struct {
	PrivateAddress netip.Addr
	MACAddress     string
	FloatingIP     netip.Addr
}

// orDefault returns e with every zero field the package's default.
func (e Endpoint) orDefault() Endpoint {
	if !e.PrivateAddress.IsValid() {
		e.PrivateAddress = PrivateAddress
	}
	if e.MACAddress == "" {
		e.MACAddress = MACAddress
	}
	if !e.FloatingIP.IsValid() {
		e.FloatingIP = FloatingIP
	}
	return e
}

// An Uplink is a real Neutron's external network, as the lab's agents
// make it (cluster/openstack/agents.sh): a bridge in a namespace of its own.
type Uplink struct {
	// NS and Bridge are the namespace and the bridge of the external
	// network's wire.
	NS, Bridge string
	// Address is the router's address there: the external subnet's
	// gateway, which Neutron's routers route to.
	Address netip.Prefix
}

// UplinkInterface is the router's interface on an Uplink; its peer in the
// uplink's namespace is UplinkPeer(Prefix).
const UplinkInterface = "uplink"

// A Topology is the running world: the router and the client sites, and
// what joins the tenant network.
type Topology struct {
	// Dir holds every file of the topology.
	Dir string
	// Prefix starts the name of every namespace (NS).
	Prefix string
	// Router is the router's namespace.
	Router string
	// Gateway is Start's gateway; nil after Build.
	Gateway *Gateway
	// Peers are the client sites, in index order.
	Peers []*Peer

	t       testing.TB
	uplink  *Uplink
	mu      sync.Mutex
	charons []*Charon
}

// A Gateway is Start's gateway: its namespace on the tenant network, its
// charon and the tenant service behind it.
type Gateway struct {
	*Charon
	// ServiceNS is the namespace holding the tenant service address
	// Service, routed via TenantAddress.
	ServiceNS string
}

// A Peer is a client site: its strongSwan gateway and a client host in its
// protected subnet.
type Peer struct {
	*Charon
	// Address is the peer's public address (its IKE address and identity)
	// on the external network.
	Address netip.Addr
	// Subnet is the client site's protected subnet.
	Subnet netip.Prefix
	// SubnetAddress is the peer's own address in Subnet.
	SubnetAddress netip.Addr
	// HostNS is the namespace of the client host.
	HostNS string
	// Host is the client host's address in Subnet.
	Host netip.Addr
}

// PeerRoles returns the roles (namespace names without the prefix) of
// client site i and its host: client and host, then client1, host1, ...
func PeerRoles(i int) (site, host string) {
	if i == 0 {
		return "client", "host"
	}
	return fmt.Sprintf("client%d", i), fmt.Sprintf("host%d", i)
}

// NS is the name of the namespace of role.
func (tp *Topology) NS(role string) string { return tp.Prefix + role }

// Build creates the router and the client sites (namespaces, bridges,
// links, addresses, routes), with no NAT and no charon running. On error,
// what it made is removed.
func Build(o Options) (*Topology, error) {
	if o.Peers == 0 {
		o.Peers = 1
	}
	if o.Peers > 8 {
		return nil, fmt.Errorf("at most 8 client sites, not %d", o.Peers)
	}
	if o.PeerAddresses != nil && len(o.PeerAddresses) != o.Peers {
		return nil, fmt.Errorf("%d peer addresses for %d client sites: give one per site, or none", len(o.PeerAddresses), o.Peers)
	}
	tp := Open(o.Prefix, o.Dir)
	tp.uplink = o.Uplink
	for i := range o.Peers {
		site, host := PeerRoles(i)
		addr := netip.AddrFrom4([4]byte{198, 51, 100, byte(7 + i)})
		if o.PeerAddresses != nil {
			addr = o.PeerAddresses[i]
		}
		tp.Peers = append(tp.Peers, &Peer{
			Charon:        &Charon{NS: tp.NS(site), Dir: filepath.Join(o.Dir, site), Conf: o.Conf},
			Address:       addr,
			Subnet:        netip.PrefixFrom(netip.AddrFrom4([4]byte{192, 168, byte(10 + i), 0}), 24),
			SubnetAddress: netip.AddrFrom4([4]byte{192, 168, byte(10 + i), 1}),
			HostNS:        tp.NS(host),
			Host:          netip.AddrFrom4([4]byte{192, 168, byte(10 + i), 5}),
		})
	}
	if err := tp.build(); err != nil {
		return nil, errors.Join(err, tp.Close())
	}
	return tp, nil
}

// Open returns a handle on the topology with namespace prefix prefix and
// directory dir that another process built and runs, for what acts on its
// namespaces (NS, Exec, Do, AskWhoAmI, Remove).
func Open(prefix, dir string) *Topology {
	return &Topology{Dir: dir, Prefix: prefix, Router: prefix + "router"}
}

func (tp *Topology) build() error {
	if err := tp.addNamespace(tp.Router); err != nil {
		return err
	}
	r := tp.Router
	var s steps
	bridges := []string{ExternalBridge}
	if tp.uplink == nil {
		bridges = append(bridges, TenantBridge)
	}
	for _, br := range bridges {
		s.ip(r, "link", "add", br, "type", "bridge")
		s.ip(r, "link", "set", br, "up")
	}
	if u := tp.uplink; u != nil {
		// Made in the uplink's namespace, its peer directly in the
		// router's: deleting the router's namespace deletes both ends.
		s.ip(u.NS, "link", "add", UplinkPeer(tp.Prefix), "type", "veth", "peer", "name", UplinkInterface, "netns", r)
		s.ip(u.NS, "link", "set", UplinkPeer(tp.Prefix), "master", u.Bridge, "up")
		s.ip(r, "link", "set", UplinkInterface, "up")
		s.ip(r, "addr", "add", u.Address.String(), "dev", UplinkInterface)
	} else {
		s.ip(r, "addr", "add", prefix(Router, PrivatePrefixLength), "dev", TenantBridge)
	}
	s.ip(r, "addr", "add", prefix(ExternalRouter, 24), "dev", ExternalBridge)
	s.sysctl(r)
	for i, p := range tp.Peers {
		if err := tp.addNamespace(p.NS); err != nil {
			return err
		}
		if err := tp.addNamespace(p.HostNS); err != nil {
			return err
		}
		s.link(r, fmt.Sprintf("ext%d", i), ExternalBridge, p.NS, "wan", "")
		s.ip(p.NS, "addr", "add", prefix(p.Address, 24), "dev", "wan")
		s.link(p.NS, "lan", "", p.HostNS, "eth0", "")
		s.ip(p.NS, "addr", "add", prefix(p.SubnetAddress, p.Subnet.Bits()), "dev", "lan")
		s.ip(p.HostNS, "addr", "add", prefix(p.Host, p.Subnet.Bits()), "dev", "eth0")
		s.ip(p.NS, "route", "add", "default", "via", ExternalRouter.String())
		s.ip(p.HostNS, "route", "add", "default", "via", p.SubnetAddress.String())
		s.sysctl(p.NS)
	}
	return s.run()
}

// UplinkPeer is the name of the router's veth peer in an Uplink's
// namespace for the topology with namespace prefix prefix: "up" and a
// hash of the prefix, unique per topology and short enough for a link.
func UplinkPeer(prefix string) string {
	return fmt.Sprintf("up%08x", crc32.ChecksumIEEE([]byte(prefix)))
}

// AddNamespace adds the namespace of role (loopback up, forwarding) with
// no link: the caller plugs it (a real Neutron port, Options.Uplink). It
// returns the namespace.
func (tp *Topology) AddNamespace(role string) (string, error) {
	ns := tp.NS(role)
	if err := tp.addNamespace(ns); err != nil {
		return "", err
	}
	var s steps
	s.sysctl(ns)
	return ns, s.run()
}

// AddHost adds a namespace of role on the tenant network, its interface
// link (with MAC address mac, if not empty) on the router's tenant bridge
// at addr, routed via Router, forwarding. It returns the namespace.
func (tp *Topology) AddHost(role string, addr netip.Addr, link, mac string) (string, error) {
	ns := tp.NS(role)
	if err := tp.addNamespace(ns); err != nil {
		return "", err
	}
	var s steps
	s.link(tp.Router, role, TenantBridge, ns, link, mac)
	s.ip(ns, "addr", "add", prefix(addr, PrivatePrefixLength), "dev", link)
	s.ip(ns, "route", "add", "default", "via", Router.String())
	s.sysctl(ns)
	return ns, s.run()
}

// AddPod adds a namespace of role whose interface link (with MAC address
// mac) is on the router's tenant bridge, down and without an address, as
// net1 of a gateway pod of replicas 2 after its init container: its agent
// brings it up with the address when it is the active one. It returns the
// namespace.
func (tp *Topology) AddPod(role, link, mac string) (string, error) {
	ns := tp.NS(role)
	if err := tp.addNamespace(ns); err != nil {
		return "", err
	}
	var s steps
	s.link(tp.Router, role, TenantBridge, ns, link, mac)
	s.ip(ns, "link", "set", link, "down")
	s.sysctl(ns)
	return ns, s.run()
}

// RemoveHost kills what runs in the namespace of role and deletes it (its
// link on the tenant bridge with it).
func (tp *Topology) RemoveHost(role string) error { return removeNamespace(tp.NS(role)) }

// Close stops every charon (SIGKILL: nothing of it outlives its
// namespaces), hands attached links back and removes every namespace of
// the topology and what runs in it. Files in Dir stay (the caller's).
func (tp *Topology) Close() error {
	tp.mu.Lock()
	for _, c := range tp.charons {
		c.Stop(syscall.SIGKILL)
	}
	tp.mu.Unlock()
	return Remove(tp.Prefix)
}

// Remove removes what a topology with namespace prefix prefix left, also
// one whose process was killed: it kills what runs in its namespaces and
// deletes them.
func Remove(prefix string) error {
	var errs []error
	entries, _ := os.ReadDir("/run/netns")
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), prefix) {
			errs = append(errs, removeNamespace(e.Name()))
		}
	}
	return errors.Join(errs...)
}

// removeNamespace kills the processes in namespace ns and deletes it.
func removeNamespace(ns string) error {
	if out, err := exec.Command("ip", "netns", "pids", ns).Output(); err == nil {
		for f := range strings.FieldsSeq(string(out)) {
			if p, err := strconv.Atoi(f); err == nil {
				_ = syscall.Kill(p, syscall.SIGKILL)
			}
		}
	}
	if out, err := exec.Command("ip", "netns", "delete", ns).CombinedOutput(); err != nil {
		return fmt.Errorf("cannot delete namespace %s: %w: %s", ns, err, bytes.TrimSpace(out))
	}
	return nil
}

func (tp *Topology) addNamespace(ns string) error {
	if out, err := exec.Command("ip", "netns", "add", ns).CombinedOutput(); err != nil {
		return fmt.Errorf("ip netns add %s: %w: %s", ns, err, out)
	}
	return steps{{ns, "ip", "link", "set", "lo", "up"}}.run()
}

// steps are commands, each run in the namespace of its first element.
type steps [][]string //nolint:recvcheck // ip, sysctl and link append to the steps; run only reads them

func (s *steps) ip(ns string, args ...string) { *s = append(*s, append([]string{ns, "ip"}, args...)) }

func (s *steps) sysctl(ns string) {
	*s = append(*s, []string{ns, "sysctl", "-qw", "net.ipv4.ip_forward=1"})
}

// link adds a veth pair from aIf in namespace a (on bridge br there, if
// not empty) to bIf in b (with MAC mac, if not empty), made in a's with its
// peer directly in b's, so that no link ever exists in the host's.
func (s *steps) link(a, aIf, br, b, bIf, mac string) {
	peer := []string{"peer", "name", bIf}
	if mac != "" {
		peer = append(peer, "address", mac)
	}
	s.ip(a, append(append([]string{"link", "add", aIf, "type", "veth"}, peer...), "netns", b)...)
	if br != "" {
		s.ip(a, "link", "set", aIf, "master", br)
	}
	s.ip(a, "link", "set", aIf, "up")
	s.ip(b, "link", "set", bIf, "up")
}

// run runs the steps in order and stops at the first failure.
func (s steps) run() error {
	for _, c := range s {
		if out, err := execIn(c[0], c[1:]...); err != nil {
			return fmt.Errorf("%s in %s: %w: %s", strings.Join(c[1:], " "), c[0], err, out)
		}
	}
	return nil
}

func prefix(a netip.Addr, bits int) string { return netip.PrefixFrom(a, bits).String() }

// seq numbers the topologies of this process.
var seq atomic.Int32

// nsPattern matches the namespaces Start names: ipt<pid>-<n>-<role>.
var nsPattern = regexp.MustCompile(`^ipt([0-9]+)-[0-9]+-[a-z0-9]+$`)

// Start builds, for t, the topology with a gateway at PrivateAddress (MAC
// MACAddress, interface net1) that FloatingIP maps to (o.Endpoint's, when
// set), the tenant service
// Service behind it (interface TenantInterface) and a charon on the gateway
// and each client site, and removes it when t ends. It skips t with the
// reason when not run as root or when a program it needs is missing. Setup
// failures fail t.
func Start(t testing.TB, o Options) *Topology {
	t.Helper()
	Need(t, "ip", "nft", "nsenter", "unshare")
	if o.Conf == nil || o.GatewayConf == nil {
		if _, err := os.Stat("/dev/net/tun"); err != nil {
			t.Skip("/dev/net/tun is missing: kernel-libipsec needs a TUN device")
		}
	}
	began := time.Now()
	tp := StartBare(t, o)
	ep := o.Endpoint.orDefault()
	gw, err := tp.AddHost("gw", ep.PrivateAddress, "net1", ep.MACAddress)
	if err != nil {
		t.Fatalf("cannot add the gateway: %v", err)
	}
	svc := tp.NS("svc")
	if err := tp.addNamespace(svc); err != nil {
		t.Fatal(err)
	}
	var s steps
	s.link(gw, TenantInterface, "", svc, "eth0", "")
	s.ip(gw, "addr", "add", prefix(TenantAddress, TenantSubnet.Bits()), "dev", TenantInterface)
	s.ip(svc, "addr", "add", prefix(Service, TenantSubnet.Bits()), "dev", "eth0")
	s.ip(svc, "route", "add", "default", "via", TenantAddress.String())
	if err := s.run(); err != nil {
		t.Fatalf("cannot add the tenant service: %v", err)
	}
	nat := tp.Command(context.Background(), tp.Router, "nft", "-f", "-")
	nat.Stdin = strings.NewReader(natRuleset(ep.FloatingIP, ep.PrivateAddress, TenantBridge, ExternalBridge))
	if out, err := nat.CombinedOutput(); err != nil {
		t.Fatalf("cannot map the floating IP: %v: %s", err, out)
	}
	gwConf := o.GatewayConf
	if gwConf == nil {
		gwConf = o.Conf
	}
	tp.Gateway = &Gateway{Charon: &Charon{NS: gw, Dir: filepath.Join(tp.Dir, "gw"), Conf: gwConf}, ServiceNS: svc}
	all := make([]*Charon, 0, 1+len(tp.Peers))
	all = append(all, tp.Gateway.Charon)
	for _, p := range tp.Peers {
		all = append(all, p.Charon)
	}
	// Start the charons in parallel: each takes tens of milliseconds.
	var wg sync.WaitGroup
	errs := make([]error, len(all))
	for i, c := range all {
		wg.Go(func() { errs[i] = tp.StartCharon(c) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	t.Logf("topology: namespaces %s*, %d charons up in %v", tp.Prefix, len(all), time.Since(began).Round(time.Millisecond))
	return tp
}

// StartBare builds, for t, the router and the client sites of o (Build)
// with nothing on the tenant network and no charon running, and removes
// it when t ends: for tests of what joins the tenant network (AddHost,
// AddPod). It skips t as Need does; setup failures fail t.
func StartBare(t testing.TB, o Options) *Topology {
	t.Helper()
	Need(t, "ip", "nsenter")
	reapStale(t)
	o.Prefix = fmt.Sprintf("ipt%d-%d-", os.Getpid(), seq.Add(1))
	o.Dir = t.TempDir()
	tp, err := Build(o)
	if err != nil {
		t.Fatalf("cannot build the topology: %v", err)
	}
	tp.t = t
	t.Cleanup(func() {
		if err := tp.Close(); err != nil {
			t.Error(err)
		}
		if t.Failed() {
			for _, c := range tp.charons {
				t.Logf("charon in %s:\n%s", c.NS, c.tail(80))
			}
		}
	})
	return tp
}

// StartCharon starts c (see Charon.Start) and has Close stop it.
func (tp *Topology) StartCharon(c *Charon) error {
	tp.mu.Lock()
	tp.charons = append(tp.charons, c)
	tp.mu.Unlock()
	return c.Start()
}

// Need skips t unless it runs as root with charon, swanctl and the
// programs named installed.
func Need(t testing.TB, programs ...string) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("a real charon needs root (network and mount namespaces): run the tests as root")
	}
	for _, p := range []string{CharonBinary, SwanctlBinary} {
		if _, err := os.Stat(p); err != nil {
			t.Skipf("%s is missing: hack/apt-install.sh --host strongswan", p)
		}
	}
	for _, p := range programs {
		if _, err := exec.LookPath(p); err != nil {
			t.Skipf("%s is missing: hack/apt-install.sh --host base strongswan", p)
		}
	}
}

// Command returns a command running args in the network namespace ns, for
// a process that runs alongside, such as the gateway's agent. The caller
// starts, stops and waits for it.
func (tp *Topology) Command(ctx context.Context, ns string, args ...string) *exec.Cmd {
	return exec.CommandContext(ctx, "nsenter", append([]string{"--net=" + nsPath(ns), "--"}, args...)...)
}

func nsPath(ns string) string { return filepath.Join("/run/netns", ns) }

// ExecTimeout bounds each Exec.
const ExecTimeout = 30 * time.Second

// Exec runs args in the network namespace ns and returns its combined
// output. It is killed after ExecTimeout.
func (tp *Topology) Exec(ns string, args ...string) (string, error) { return execIn(ns, args...) }

func execIn(ns string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), ExecTimeout)
	defer cancel()
	out, err := exec.CommandContext(ctx, "nsenter", append([]string{"--net=" + nsPath(ns), "--"}, args...)...).CombinedOutput()
	return string(out), err
}

// MustExec is Exec failing Start's test on error.
func (tp *Topology) MustExec(ns string, args ...string) string {
	tp.t.Helper()
	out, err := tp.Exec(ns, args...)
	if err != nil {
		tp.t.Fatalf("%s in %s: %v\n%s", strings.Join(args, " "), ns, err, out)
	}
	return out
}

// reapStale removes the namespaces Start made in processes that no longer
// run (a test binary killed before its cleanup), and what runs in them.
func reapStale(t testing.TB) {
	entries, _ := os.ReadDir("/run/netns")
	for _, e := range entries {
		m := nsPattern.FindStringSubmatch(e.Name())
		if m == nil {
			continue
		}
		pid, err := strconv.Atoi(m[1])
		if err != nil || pid == os.Getpid() || syscall.Kill(pid, 0) != syscall.ESRCH {
			continue
		}
		if err := removeNamespace(e.Name()); err != nil {
			t.Logf("stale: %v", err)
		}
	}
}
