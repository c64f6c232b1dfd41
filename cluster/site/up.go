package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/ipsecgw/provider-ipsec/test/topology"
)

// The site's addresses beyond the topology's. The tenant network and the
// floating IPs are the local Neutron's (cluster/openstack/fixtures.py); the
// VM's is the fixed IP of the port runbook.py vm-up makes; the inside
// addresses are the example claim's (examples/claim/pinned-fip.yaml).
var (
	vmAddress = netip.MustParseAddr("10.20.0.5")
	// serviceAddress is the tenant service's, on the tenant network.
	serviceAddress = netip.MustParseAddr("10.20.0.50")
	// insideCIDR is the tenant side of the tunnel (the claim's local
	// traffic selector), insideService the address a client host reaches
	// the tenant service at (the claim's exposure), insideOwn a gateway's
	// own address in it: kernel-libipsec routes a CHILD_SA's traffic only
	// when charon has an address inside its local traffic selector.
	insideCIDR    = "100.64.0.0/24"
	insideService = "100.64.0.10"
	insideOwn     = "100.64.0.1/32"
)

const (
	servicePort = 443
	// conn is the connection's name on both ends.
	conn = "branch-a"
	// readyTimeout bounds the wait for the client's tunnel at bring-up.
	readyTimeout = 30 * time.Second
)

// A site is the running site of `site up`.
type site struct {
	tp  *topology.Topology
	log *slog.Logger
	psk string
	// mu serialises the verbs.
	mu sync.Mutex
	// vm and client are their charons; gw the stand-in's, nil without.
	vm, client, gw *topology.Charon
	// agents is the site's part in Neutron's real agents' world: the
	// tenant network's ports, the qrouter's floating IPs.
	agents *agents
}

// up builds the site in the world of Neutron's real agents (agents.go),
// serves the verbs on p's socket until ctx ends and removes everything,
// also when the bring-up fails.
func up(ctx context.Context, p paths, prefix, clouds, pskFile string) (err error) {
	log := slog.New(slog.NewJSONHandler(os.Stdout, nil))
	psk, err := readPSK(pskFile)
	if err != nil {
		return err
	}
	// Leftovers of a site that was killed.
	if err := topology.Remove(prefix); err != nil {
		return err
	}
	began := time.Now()
	ag, err := newAgents(ctx, clouds)
	if err != nil {
		return err
	}
	tp, err := topology.Build(topology.Options{Prefix: prefix, Dir: p.dir, Peers: 1, Uplink: ag.uplink()})
	if err != nil {
		return err
	}
	s := &site{tp: tp, log: log, psk: psk, agents: ag}
	defer func() {
		// A context of its own: ctx has ended.
		err = errors.Join(err, ag.close(context.Background()), tp.Close()) //nolint:contextcheck // teardown after ctx ended
		log.Info("site down", "error", err)
	}()
	ln, err := s.serveTenant(ctx)
	if err != nil {
		return err
	}
	defer ln.Close() //nolint:errcheck // the site is ending: its listener has nothing left to report
	if err := s.startCharons(ctx); err != nil {
		return err
	}

	_ = os.Remove(p.socket())
	sock, err := net.Listen("unix", p.socket())
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: s.handler(), ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(sock) }()
	log.Info("site up: the client's tunnel is ESTABLISHED", "seconds", time.Since(began).Seconds(), "namespaces", prefix+"*")
	<-ctx.Done()
	_ = srv.Close()
	return nil
}

// serveTenant adds the tenant service and answers on it; the caller
// closes the listener.
func (s *site) serveTenant(ctx context.Context) (net.Listener, error) {
	svc, err := s.tenantHost(ctx, "svc", servicePortName, serviceAddress, true)
	if err != nil {
		return nil, err
	}
	var ln net.Listener
	if err := s.tp.Do(svc, func() (err error) { ln, err = net.Listen("tcp4", fmt.Sprintf(":%d", servicePort)); return err }); err != nil {
		return nil, err
	}
	go topology.AnswerWhoAmI(ln)
	return ln, nil
}

// startCharons starts the VM gateway and the client site and waits for
// the client's tunnel.
func (s *site) startCharons(ctx context.Context) error {
	var err error
	if s.vm, err = s.gateway(ctx, "vm", vmPortName, vmAddress); err != nil {
		return err
	}
	s.client = s.tp.Peers[0].Charon
	if err := s.startClient(ctx); err != nil {
		return err
	}
	_, err = s.client.AwaitSA(conn, readyTimeout, topology.Up())
	return err
}

// gateway adds a gateway built by hand as the runbook's VM was, in a
// namespace of role on the tenant network at addr (on the port portName,
// which the site makes unless it is the VM's), and starts its charon:
// it responds to the client site as the floating IP's identity, and its
// nftables rules publish the tenant service to the client as the example
// claim's exposure does.
func (s *site) gateway(ctx context.Context, role, portName string, addr netip.Addr) (*topology.Charon, error) {
	ns, err := s.tenantHost(ctx, role, portName, addr, portName != vmPortName)
	if err != nil {
		return nil, err
	}
	if out, err := s.tp.Exec(ns, "ip", "addr", "add", insideOwn, "dev", "lo"); err != nil {
		return nil, fmt.Errorf("cannot add %s to %s: %w: %s", insideOwn, role, err, out)
	}
	cmd := s.tp.Command(ctx, ns, "nft", "-f", "-")
	cmd.Stdin = strings.NewReader(exposure(addr))
	if out, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("nft in %s: %w: %s", role, err, out)
	}
	c := &topology.Charon{NS: ns, Dir: filepath.Join(s.tp.Dir, role)}
	if err := s.tp.StartCharon(c); err != nil {
		return nil, err
	}
	return c, s.loadGateway(ctx, c, addr)
}

// tenantHost adds the namespace of role on the tenant network at addr,
// interface eth0, plugged into the Neutron port portName (made if create)
// as a VM.
func (s *site) tenantHost(ctx context.Context, role, portName string, addr netip.Addr, create bool) (string, error) {
	ns, err := s.tp.AddNamespace(role)
	if err != nil {
		return "", err
	}
	return ns, s.agents.plug(ctx, ns, portName, addr, create)
}

// loadGateway loads the hand-built gateway's swanctl.conf into c.
func (s *site) loadGateway(ctx context.Context, c *topology.Charon, addr netip.Addr) error {
	peer := s.tp.Peers[0]
	return c.LoadFile(ctx, topology.ClientSheet{
		Name: conn, LocalAddress: addr.String(), RemoteAddress: peer.Address.String(),
		LocalID: topology.FloatingIP.String(), PSK: s.psk,
		IKEProposals: []string{"aes256-sha256-modp2048"}, ESPProposals: []string{"aes256gcm16"},
		Children: []topology.ClientChild{{Name: conn, LocalTS: []string{insideCIDR}, RemoteTS: []string{peer.Subnet.String()}}},
		DPDDelay: "30s", DPDAction: "clear", Encap: "yes",
	}.SwanctlConf(), conn)
}

// startClient starts the client site's charon, configured from its
// parameter sheet: initiating, DPD restart, always on.
func (s *site) startClient(ctx context.Context) error {
	peer := s.tp.Peers[0]
	if err := s.tp.StartCharon(s.client); err != nil {
		return err
	}
	return s.client.LoadFile(ctx, topology.ClientSheet{
		Name: conn, LocalAddress: peer.Address.String(), RemoteAddress: topology.FloatingIP.String(), PSK: s.psk,
		IKEProposals: []string{"aes256-sha256-modp2048"}, ESPProposals: []string{"aes256gcm16"},
		Children:    []topology.ClientChild{{Name: conn, LocalTS: []string{peer.Subnet.String()}, RemoteTS: []string{insideCIDR}}},
		StartAction: "start", DPDDelay: "3s", DPDAction: "restart", KeyingTries: "0", CloseAction: "start",
	}.SwanctlConf(), conn)
}

// exposure is the nft script publishing the tenant service to the client
// site at insideService, source NATed to the gateway's addr.
func exposure(addr netip.Addr) string {
	return fmt.Sprintf(`table ip exposure {
	chain prerouting {
		type nat hook prerouting priority dstnat; policy accept;
		ip saddr 192.168.10.0/24 ip daddr %[1]s tcp dport %[2]d dnat to %[3]s:%[2]d
	}
	chain postrouting {
		type nat hook postrouting priority srcnat; policy accept;
		ct status dnat ip daddr %[3]s tcp dport %[2]d snat to %[4]s
	}
}
`, insideService, servicePort, serviceAddress, addr)
}

// handler serves the verbs that change the site, one at a time.
func (s *site) handler() http.Handler {
	verbs := map[string]func(context.Context, *http.Request) (string, error){
		"status": s.status,
		"vm-stop": func(context.Context, *http.Request) (string, error) {
			if s.vm.Pid() == 0 {
				return "the VM's charon is not running\n", nil
			}
			s.vm.Stop(syscall.SIGTERM)
			return "the VM's charon stopped\n", nil
		},
		"vm-start": func(ctx context.Context, _ *http.Request) (string, error) {
			if pid := s.vm.Pid(); pid != 0 {
				return fmt.Sprintf("the VM's charon runs already (pid %d)\n", pid), nil
			}
			if err := s.vm.Start(); err != nil {
				return "", err
			}
			return fmt.Sprintf("the VM's charon started (log %s)\n", filepath.Join(s.vm.Dir, "charon.log")), s.loadGateway(ctx, s.vm, vmAddress)
		},
		"standin-up": func(ctx context.Context, _ *http.Request) (string, error) {
			if s.gw != nil {
				return "", errors.New("the stand-in runs already (" + s.gw.NS + ")")
			}
			c, err := s.gateway(ctx, "gw", standinPortName, topology.PrivateAddress)
			s.gw = c
			return fmt.Sprintf("stand-in gateway %s up (%s, log %s)\n", topology.PrivateAddress, s.tp.NS("gw"), filepath.Join(s.tp.Dir, "gw", "charon.log")), err
		},
		"standin-down": func(ctx context.Context, _ *http.Request) (string, error) {
			if s.gw != nil {
				s.gw.Stop(syscall.SIGKILL)
				s.gw = nil
			}
			if err := s.agents.unplug(ctx, s.tp.NS("gw")); err != nil {
				return "", err
			}
			if _, err := os.Stat("/run/netns/" + s.tp.NS("gw")); err == nil {
				if err := s.tp.RemoveHost("gw"); err != nil {
					return "", err
				}
			}
			return "stand-in gateway down\n", os.RemoveAll(filepath.Join(s.tp.Dir, "gw"))
		},
		"attach": func(ctx context.Context, r *http.Request) (string, error) {
			q := r.URL.Query()
			return s.agents.attach(ctx, q.Get("netns"), q.Get("link"), q.Get("instance"))
		},
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		verb, ok := verbs[strings.TrimPrefix(r.URL.Path, "/")]
		if !ok {
			http.NotFound(w, r)
			return
		}
		s.mu.Lock()
		out, err := verb(r.Context(), r)
		s.mu.Unlock()
		if err != nil {
			s.log.Error(r.URL.Path, "error", err)
			http.Error(w, out+err.Error(), http.StatusInternalServerError)
			return
		}
		s.log.Info(r.URL.Path, "said", strings.TrimSpace(out))
		_, _ = fmt.Fprint(w, out)
	})
}

// status reports the namespaces, the charons, the qrouter's floating IPs,
// the node ports' rules and the client's SAs.
func (s *site) status(ctx context.Context, _ *http.Request) (string, error) {
	var b strings.Builder
	entries, _ := os.ReadDir("/run/netns")
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), s.tp.Prefix) {
			fmt.Fprintf(&b, "namespace %s\n", e.Name())
		}
	}
	for _, c := range []*topology.Charon{s.client, s.vm, s.gw} {
		if c == nil {
			continue
		}
		if pid := c.Pid(); pid != 0 {
			fmt.Fprintf(&b, "charon of %s: pid %d, log %s\n", filepath.Base(c.Dir), pid, filepath.Join(c.Dir, "charon.log"))
		} else {
			fmt.Fprintf(&b, "charon of %s: not running\n", filepath.Base(c.Dir))
		}
	}
	table, err := s.agents.status(ctx)
	b.WriteString("\n" + table)
	if err != nil {
		return b.String(), err
	}
	out, err := s.client.Swanctl(ctx, "--list-sas", "--noblock")
	b.WriteString("\n" + out)
	return b.String(), err
}

// pskLine finds the PSK in the example's YAML (examples/claim/psk.yaml).
var pskLine = regexp.MustCompile(`(?m)^\s*psk:\s*(\S+)\s*$`)

// readPSK returns the PSK of the YAML at path.
func readPSK(path string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	m := pskLine.FindSubmatch(b)
	if m == nil || strings.ContainsRune(string(m[1]), '"') {
		return "", fmt.Errorf("no psk: line in %s (one value without double quotes)", path)
	}
	return string(m[1]), nil
}
