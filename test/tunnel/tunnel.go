// Package tunnel builds, for one test, the data path of a gateway behind a
// cloud's 1:1 floating-IP NAT and one or more client sites, each piece in a
// network namespace of its own, with a real strongSwan charon (Debian's) on
// both ends of every tunnel:
//
//	svc 10.30.0.5/24 ── eth0 10.30.0.1 gw 10.20.0.10 ── 10.20.0.1 fip 198.51.100.16i+1 ── 198.51.100.16i+2 peer_i 192.168.10+i.1 ── 192.168.10+i.5 host_i
//	(tenant service)         (gateway: charon)          (1:1 NAT of 203.0.113.10)          (client site: charon)         (client host)
//
// The kernel this runs on has no ESP (CONFIG_INET_ESP unset), so both
// charons use strongSwan's userspace IPsec (kernel-libipsec: ESP in UDP 4500
// over a TUN device). libipsec routes a CHILD_SA's traffic only when the
// charon has an address inside the CHILD_SA's local traffic selector: the
// gateway has 10.30.0.1 in the tenant subnet, each peer has .1 in its client
// subnet.
//
// Every address lives inside namespaces the test created; nothing is added to
// the host's namespace. Everything (processes, namespaces, files) is removed
// when the test ends, also when it fails.
package tunnel

import (
	"bytes"
	"context"
	"fmt"
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

// Programs the harness runs, from Debian's strongswan-charon,
// strongswan-swanctl, iproute2, nftables and util-linux.
const (
	CharonBinary  = "/usr/lib/ipsec/charon"
	SwanctlBinary = "/usr/sbin/swanctl"
)

// Addresses of the topology. They are the same in every test: each test has
// its own namespaces.
var (
	// PrivateAddress is the gateway's fixed IP on the tenant network (the
	// Neutron port's), the address charon binds.
	PrivateAddress = netip.MustParseAddr("10.20.0.10")
	// PrivatePrefixLength is the prefix length of the gateway's network.
	PrivatePrefixLength = 24
	// Router is the gateway's default gateway, the fip namespace's address
	// on the gateway's network (the Neutron router's interface).
	Router = netip.MustParseAddr("10.20.0.1")
	// MACAddress is the MAC of the gateway's interface on that network.
	MACAddress = "fa:16:3e:00:00:0a"
	// FloatingIP is the public address the fip namespace translates 1:1
	// to PrivateAddress; the gateway's IKE identity.
	FloatingIP = netip.MustParseAddr("203.0.113.10")
	// TenantSubnet is the tenant-side network behind the gateway.
	TenantSubnet = netip.MustParsePrefix("10.30.0.0/24")
	// TenantAddress is the gateway's own address in TenantSubnet.
	TenantAddress = netip.MustParseAddr("10.30.0.1")
	// Service is the tenant service's address, in the svc namespace.
	Service = netip.MustParseAddr("10.30.0.5")
)

// TenantInterface is the gateway's interface towards the tenant service,
// named like the gateway pod's interface on the cluster network, which the
// NAT rules of reverse exposures match.
const TenantInterface = "eth0"

// Options shape a topology.
type Options struct {
	// Peers is the number of client sites; 1 when zero.
	Peers int
}

// A Topology is the running data path of one test.
type Topology struct {
	// Dir holds every file of the topology: one directory per charon.
	Dir string
	// FIP is the namespace of the floating-IP NAT.
	FIP string
	// Gateway is the gateway side.
	Gateway *Gateway
	// Peers are the client sites, in index order.
	Peers []*Peer

	t          testing.TB
	namespaces []string
	charons    []*Charon
}

// A Gateway is the gateway's namespace, its charon and the tenant service
// behind it.
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
	// Address is the peer's public address (its IKE address and identity).
	Address netip.Addr
	// Router is the fip namespace's address on the peer's external link,
	// the peer's default gateway.
	Router netip.Addr
	// Subnet is the client site's protected subnet.
	Subnet netip.Prefix
	// SubnetAddress is the peer's own address in Subnet.
	SubnetAddress netip.Addr
	// HostNS is the namespace of the client host.
	HostNS string
	// Host is the client host's address in Subnet.
	Host netip.Addr
}

// seq numbers the topologies of this process.
var seq atomic.Int32

// nsPattern matches the namespaces this package names: ipt<pid>-<n>-<role>.
var nsPattern = regexp.MustCompile(`^ipt([0-9]+)-[0-9]+-[a-z0-9]+$`)

// Start builds the topology for t and removes it when t ends. It skips t
// with the reason when not run as root or when a program it needs is
// missing. Setup failures fail t.
func Start(t testing.TB, o Options) *Topology {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("a real tunnel needs root (network and mount namespaces): run the tests as root")
	}
	for _, p := range []string{CharonBinary, SwanctlBinary} {
		if _, err := os.Stat(p); err != nil {
			t.Skipf("%s is missing: apt-get install strongswan-charon strongswan-swanctl libcharon-extra-plugins", p)
		}
	}
	for _, p := range []string{"ip", "nft", "nsenter", "unshare"} {
		if _, err := exec.LookPath(p); err != nil {
			t.Skipf("%s is missing: apt-get install iproute2 nftables util-linux", p)
		}
	}
	if _, err := os.Stat("/dev/net/tun"); err != nil {
		t.Skip("/dev/net/tun is missing: kernel-libipsec needs a TUN device")
	}
	if o.Peers == 0 {
		o.Peers = 1
	}
	if o.Peers > 8 {
		t.Fatalf("at most 8 peers, not %d", o.Peers)
	}
	reapStale(t)

	began := time.Now()
	prefix := fmt.Sprintf("ipt%d-%d-", os.Getpid(), seq.Add(1))
	tp := &Topology{Dir: t.TempDir(), FIP: prefix + "fip", t: t}
	t.Cleanup(tp.cleanup)
	tp.Gateway = &Gateway{Charon: &Charon{NS: prefix + "gw"}, ServiceNS: prefix + "svc"}
	for i := range o.Peers {
		tp.Peers = append(tp.Peers, &Peer{
			Charon:        &Charon{NS: fmt.Sprintf("%sp%d", prefix, i)},
			Address:       netip.AddrFrom4([4]byte{198, 51, 100, byte(16*i + 2)}),
			Router:        netip.AddrFrom4([4]byte{198, 51, 100, byte(16*i + 1)}),
			Subnet:        netip.PrefixFrom(netip.AddrFrom4([4]byte{192, 168, byte(10 + i), 0}), 24),
			SubnetAddress: netip.AddrFrom4([4]byte{192, 168, byte(10 + i), 1}),
			HostNS:        fmt.Sprintf("%sh%d", prefix, i),
			Host:          netip.AddrFrom4([4]byte{192, 168, byte(10 + i), 5}),
		})
	}
	if err := tp.build(); err != nil {
		t.Fatalf("cannot build the topology: %v", err)
	}
	tp.Gateway.Dir = filepath.Join(tp.Dir, "gw")
	tp.charons = append(tp.charons, tp.Gateway.Charon)
	for i, p := range tp.Peers {
		p.Dir = filepath.Join(tp.Dir, fmt.Sprintf("peer%d", i))
		tp.charons = append(tp.charons, p.Charon)
	}
	// Start the charons in parallel: each takes tens of milliseconds.
	var wg sync.WaitGroup
	errs := make([]error, len(tp.charons))
	for i, c := range tp.charons {
		wg.Go(func() { errs[i] = c.start() })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("tunnel: namespaces %s*, %d charons up in %v", prefix, len(tp.charons), time.Since(began).Round(time.Millisecond))
	return tp
}

// build creates the namespaces, links, addresses, routes and NAT rules.
func (tp *Topology) build() error {
	gw, svc := tp.Gateway.NS, tp.Gateway.ServiceNS
	all := make([]string, 0, 3+2*len(tp.Peers))
	all = append(all, gw, svc, tp.FIP)
	for _, p := range tp.Peers {
		all = append(all, p.NS, p.HostNS)
	}
	for _, ns := range all {
		if out, err := exec.Command("ip", "netns", "add", ns).CombinedOutput(); err != nil {
			return fmt.Errorf("ip netns add %s: %w: %s", ns, err, out)
		}
		tp.namespaces = append(tp.namespaces, ns)
	}
	pfx := func(a netip.Addr, bits int) string { return netip.PrefixFrom(a, bits).String() }
	// Each step runs ip in the first namespace; veth peers are created
	// directly in the second one, so no link ever exists in the host's.
	steps := [][]string{}
	ip := func(ns string, args ...string) { steps = append(steps, append([]string{ns, "ip"}, args...)) }
	sysctl := func(ns, kv string) { steps = append(steps, []string{ns, "sysctl", "-qw", kv}) }
	for _, ns := range all {
		ip(ns, "link", "set", "lo", "up")
	}
	// gw <-> fip: the tenant network with the gateway's port.
	ip(gw, "link", "add", "wan", "address", MACAddress, "type", "veth", "peer", "name", "lan", "netns", tp.FIP)
	ip(gw, "addr", "add", pfx(PrivateAddress, PrivatePrefixLength), "dev", "wan")
	ip(tp.FIP, "addr", "add", pfx(Router, PrivatePrefixLength), "dev", "lan")
	// gw <-> svc: the tenant service.
	ip(gw, "link", "add", TenantInterface, "type", "veth", "peer", "name", "eth0", "netns", svc)
	ip(gw, "addr", "add", pfx(TenantAddress, TenantSubnet.Bits()), "dev", TenantInterface)
	ip(svc, "addr", "add", pfx(Service, TenantSubnet.Bits()), "dev", "eth0")
	for _, l := range [][2]string{{gw, "wan"}, {gw, TenantInterface}, {tp.FIP, "lan"}, {svc, "eth0"}} {
		ip(l[0], "link", "set", l[1], "up")
	}
	ip(gw, "route", "add", "default", "via", Router.String())
	ip(svc, "route", "add", "default", "via", TenantAddress.String())
	sysctl(gw, "net.ipv4.ip_forward=1")
	sysctl(tp.FIP, "net.ipv4.ip_forward=1")
	for i, p := range tp.Peers {
		ext := fmt.Sprintf("ext%d", i)
		// fip <-> peer: the external network.
		ip(tp.FIP, "link", "add", ext, "type", "veth", "peer", "name", "wan", "netns", p.NS)
		ip(tp.FIP, "addr", "add", pfx(p.Router, 28), "dev", ext)
		ip(p.NS, "addr", "add", pfx(p.Address, 28), "dev", "wan")
		// peer <-> host: the client site's protected subnet.
		ip(p.NS, "link", "add", "lan", "type", "veth", "peer", "name", "eth0", "netns", p.HostNS)
		ip(p.NS, "addr", "add", pfx(p.SubnetAddress, p.Subnet.Bits()), "dev", "lan")
		ip(p.HostNS, "addr", "add", pfx(p.Host, p.Subnet.Bits()), "dev", "eth0")
		for _, l := range [][2]string{{tp.FIP, ext}, {p.NS, "wan"}, {p.NS, "lan"}, {p.HostNS, "eth0"}} {
			ip(l[0], "link", "set", l[1], "up")
		}
		ip(p.NS, "route", "add", "default", "via", p.Router.String())
		ip(p.HostNS, "route", "add", "default", "via", p.SubnetAddress.String())
		sysctl(p.NS, "net.ipv4.ip_forward=1")
	}
	for _, s := range steps {
		if out, err := tp.Exec(s[0], s[1:]...); err != nil {
			return fmt.Errorf("%s in %s: %w: %s", strings.Join(s[1:], " "), s[0], err, out)
		}
	}
	// The floating IP: 1:1 DNAT to the private address, SNAT back, as
	// Neutron's L3 agent does in its router namespace.
	nat := fmt.Sprintf(`table ip fip {
	chain prerouting {
		type nat hook prerouting priority dstnat; policy accept;
		ip daddr %[1]s dnat to %[2]s
	}
	chain postrouting {
		type nat hook postrouting priority srcnat; policy accept;
		oifname != "lan" ip saddr %[2]s snat to %[1]s
	}
}
`, FloatingIP, PrivateAddress)
	cmd := tp.Command(context.Background(), tp.FIP, "nft", "-f", "-")
	cmd.Stdin = strings.NewReader(nat)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("nft in %s: %w: %s", tp.FIP, err, out)
	}
	return nil
}

// Command returns a command running args in the network namespace ns (one
// of the topology's), for a process that runs alongside the test, such as
// the gateway's agent. The caller starts, stops and waits for it.
func (tp *Topology) Command(ctx context.Context, ns string, args ...string) *exec.Cmd {
	return exec.CommandContext(ctx, "nsenter", append([]string{"--net=" + nsPath(ns), "--"}, args...)...)
}

func nsPath(ns string) string { return filepath.Join("/run/netns", ns) }

// ExecTimeout bounds each Exec.
const ExecTimeout = 30 * time.Second

// Exec runs args in the network namespace ns (one of the topology's) and
// returns its combined output. It is killed after ExecTimeout.
func (tp *Topology) Exec(ns string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), ExecTimeout)
	defer cancel()
	out, err := tp.Command(ctx, ns, args...).CombinedOutput()
	return string(out), err
}

// MustExec is Exec failing the test on error.
func (tp *Topology) MustExec(ns string, args ...string) string {
	tp.t.Helper()
	out, err := tp.Exec(ns, args...)
	if err != nil {
		tp.t.Fatalf("%s in %s: %v\n%s", strings.Join(args, " "), ns, err, out)
	}
	return out
}

// cleanup stops every charon, logs their logs if the test failed, and
// deletes every namespace.
func (tp *Topology) cleanup() {
	for _, c := range tp.charons {
		c.stop()
	}
	if tp.t.Failed() {
		for _, c := range tp.charons {
			tp.t.Logf("charon in %s:\n%s", c.NS, c.tail(80))
		}
	}
	for _, ns := range tp.namespaces {
		if out, err := exec.Command("ip", "netns", "delete", ns).CombinedOutput(); err != nil {
			tp.t.Errorf("cannot delete namespace %s: %v: %s", ns, err, out)
		}
	}
}

// reapStale kills the processes in, and deletes, the namespaces this
// package made in processes that no longer run (a test binary killed before
// its cleanup).
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
		if out, err := exec.Command("ip", "netns", "pids", e.Name()).Output(); err == nil {
			for f := range strings.FieldsSeq(string(out)) {
				if p, err := strconv.Atoi(f); err == nil {
					_ = syscall.Kill(p, syscall.SIGKILL)
				}
			}
		}
		if out, err := exec.Command("ip", "netns", "delete", e.Name()).CombinedOutput(); err != nil {
			t.Logf("cannot delete stale namespace %s: %v: %s", e.Name(), err, bytes.TrimSpace(out))
		}
	}
}
