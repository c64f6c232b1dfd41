//go:build integration

package integration

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	gwv1alpha1 "github.com/ipsecgw/provider-ipsec/apis/cluster/gateway/v1alpha1"
	"github.com/ipsecgw/provider-ipsec/internal/agent/vicitest"
	"github.com/ipsecgw/provider-ipsec/internal/render"
	"github.com/ipsecgw/provider-ipsec/internal/swanctl"
	"github.com/ipsecgw/provider-ipsec/test/topology"
)

// Parity runs: PARITY_N specs (parityDefault in make test; hack/parity.sh
// runs thousands) from PARITY_SEED (random when unset; logged, so that a
// failure can be run again).
const parityDefault = 300

// TestValidatorCharonParity generates random Gateway specs, some of them
// wrong, renders each, and loads every one the validator accepts into a
// real charon over VICI (load-conn of every connection, load-shared of
// every secret): none may be refused. It logs how many the validator
// accepted and refused, so that a generator that only makes refused specs
// shows.
func TestValidatorCharonParity(t *testing.T) {
	n := parityDefault
	if s := os.Getenv("PARITY_N"); s != "" {
		var err error
		if n, err = strconv.Atoi(s); err != nil {
			t.Fatalf("PARITY_N=%q: %v", s, err)
		}
	}
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("PARITY_SEED"); s != "" {
		var err error
		if seed, err = strconv.ParseUint(s, 10, 64); err != nil {
			t.Fatalf("PARITY_SEED=%q: %v", s, err)
		}
	}
	t.Logf("%d specs from PARITY_SEED=%d", n, seed)
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	g := specGen{r: r, keywords: byKind(render.Keywords())}
	c := topology.StartValidator(t)
	ctx := context.Background()
	accepted, nat, routeMode, reasons := 0, 0, 0, map[string]int{}
	for i := range n {
		in := g.input()
		files, err := render.Render(in)
		if err != nil {
			reasons[firstField(err)]++
			continue
		}
		accepted++
		if files.XFRMInterfaces != nil {
			routeMode++
		}
		doc, err := swanctl.Parse(files.SwanctlConf)
		if err != nil {
			t.Fatalf("spec %d: rendered swanctl.conf does not parse: %v", i, err)
		}
		conns, err := swanctl.LoadConns(doc)
		if err != nil {
			t.Fatalf("spec %d: %v", i, err)
		}
		var refused []string
		for _, conn := range conns {
			if _, err := c.Call(ctx, "load-conn", conn.Message); err != nil {
				refused = append(refused, fmt.Sprintf("connection %s: %v", conn.Name, err))
			}
		}
		sdoc, err := swanctl.Parse(files.Secrets)
		if err != nil {
			t.Fatalf("spec %d: rendered secrets.conf does not parse: %v", i, err)
		}
		shared, err := swanctl.LoadShared(sdoc)
		if err != nil {
			t.Fatalf("spec %d: %v", i, err)
		}
		for _, s := range shared {
			if _, err := c.Call(ctx, "load-shared", s.Message); err != nil {
				refused = append(refused, fmt.Sprintf("secret %s: %v", s.ID, err))
			}
		}
		if len(refused) > 0 {
			spec, _ := yaml.Marshal(in.Spec)
			t.Errorf("spec %d (PARITY_SEED=%d): the validator accepts it, charon refuses %s\nspec (PSKs left out):\n%s\nswanctl.conf:\n%s",
				i, seed, strings.Join(refused, "; "), spec, files.SwanctlConf)
		}
		for _, conn := range conns {
			_, _ = c.Call(ctx, "unload-conn", vicitest.Msg("name", conn.Name))
		}
		if bytes.Contains(files.NATRules, []byte(" snat to ")) {
			nat++
			if out, err := loadNAT(t, files.NATRules); err != nil {
				spec, _ := yaml.Marshal(in.Spec)
				t.Errorf("spec %d (PARITY_SEED=%d): the validator accepts it, nft refuses its NAT rules: %v\n%s\nspec (PSKs left out):\n%s\nnat.nft:\n%s", i, seed, err, out, spec, files.NATRules)
			}
		}
	}
	t.Logf("validator accepted %d of %d specs (%d with a route-mode tunnel), all loaded by charon, the NAT rules of the %d with hide NAT by nft; refusals by first field: %v", accepted, n, routeMode, nat, reasons)
	if accepted < n/10 {
		t.Errorf("the validator accepted only %d of %d specs: the generator tests too little of what is accepted", accepted, n)
	}
}

// loadNAT loads an nftables script with a real nft in a network namespace
// of its own, which ends with the call.
func loadNAT(t *testing.T, rules []byte) ([]byte, error) {
	f := filepath.Join(t.TempDir(), "nat.nft")
	if err := os.WriteFile(f, rules, 0o600); err != nil {
		return nil, err
	}
	return exec.Command("unshare", "--net", "nft", "-f", f).CombinedOutput()
}

// firstField is the field of the first problem in a Render error, its
// tunnel and list indexes left out (tunnels[x].ikeProposals).
func firstField(err error) string {
	s := err.Error()
	if i := strings.Index(s, ":"); i >= 0 {
		s = s[:i]
	}
	var b strings.Builder
	depth := 0
	for _, ch := range s {
		switch {
		case ch == '[':
			depth++
		case ch == ']':
			depth--
		case depth == 0:
			b.WriteRune(ch)
		}
	}
	return b.String()
}

// byKind groups proposal keywords by kind (render.Keywords), sorted so
// that a seed makes the same specs.
func byKind(kw map[string]string) map[string][]string {
	out := map[string][]string{}
	for k, kind := range kw {
		out[kind] = append(out[kind], k)
	}
	for _, ks := range out {
		slices.Sort(ks)
	}
	return out
}

// specGen makes random Gateway specs: mostly plausible, with every optional
// field sometimes absent, sometimes odd.
type specGen struct {
	r        *rand.Rand
	keywords map[string][]string
}

func (g specGen) pick(xs ...string) string { return xs[g.r.IntN(len(xs))] }

func (g specGen) chance(p float64) bool { return g.r.Float64() < p }

func (g specGen) kw(kind string) string { ks := g.keywords[kind]; return ks[g.r.IntN(len(ks))] }

// proposal is a random IKE or ESP proposal, usually well formed.
func (g specGen) proposal(ike bool) string {
	var parts []string
	if g.chance(0.5) {
		parts = append(parts, g.kw("aead"))
		if g.chance(0.15) {
			// AEAD beside a classic integrity algorithm.
			parts = append(parts, g.kw("integrity"))
		}
		if ike && g.chance(0.8) {
			parts = append(parts, g.kw("prf"))
		}
	} else {
		parts = append(parts, g.kw("encryption"))
		if g.chance(0.95) {
			parts = append(parts, g.kw("integrity"))
		}
		if !ike && g.chance(0.1) {
			parts = append(parts, g.kw("integrity-esp"))
		}
		if ike && g.chance(0.3) {
			parts = append(parts, g.kw("prf"))
		}
	}
	if ike && g.chance(0.95) || !ike && g.chance(0.4) {
		parts = append(parts, g.kw("dh"))
	}
	if !ike && g.chance(0.2) {
		parts = append(parts, g.kw("esn"))
	}
	return strings.Join(parts, "-")
}

func (g specGen) duration(xs ...string) *gwv1alpha1.Duration {
	if g.chance(0.5) {
		return nil
	}
	return ptr.To(gwv1alpha1.Duration(g.pick(xs...)))
}

// prefix is a random network inside base, of a length from min to 32.
func (g specGen) prefix(base netip.Prefix, minBits int) string {
	bits := minBits + g.r.IntN(33-minBits)
	a := base.Addr().As4()
	host := g.r.Uint32() & (1<<(32-base.Bits()) - 1)
	v := uint32(a[0])<<24 | uint32(a[1])<<16 | uint32(a[2])<<8 | uint32(a[3]) | host
	p := netip.PrefixFrom(netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)}), bits)
	return p.Masked().String()
}

var (
	presented = netip.MustParsePrefix("100.64.0.0/16")
	clients   = netip.MustParsePrefix("192.168.0.0/16")
)

func (g specGen) tunnel(i int) (gwv1alpha1.Tunnel, []byte) {
	t := gwv1alpha1.Tunnel{
		Name: fmt.Sprintf("t%d", i), Peer: gwv1alpha1.Peer{Address: fmt.Sprintf("198.51.100.%d", i+1)},
		IKEVersion: 2, StartAction: g.pick("", "start", "trap", "respond"), Unique: g.pick("", "no", "replace", "keep"),
		Fragmentation: g.pick("", "yes", "accept", "force", "no"), ForceEncapsulation: g.chance(0.3),
		PreSharedKeySecretRef: xpv2.LocalSecretKeySelector{LocalSecretReference: xpv2.LocalSecretReference{Name: "vpn-psk"}, Key: fmt.Sprintf("t%d", i)},
	}
	if g.chance(0.3) {
		t.IKEVersion = 1
	}
	t.MOBIKE = t.IKEVersion == 2 && g.chance(0.5) || g.chance(0.05)
	switch g.r.IntN(4) {
	case 0:
		t.Peer.ID = fmt.Sprintf("peer%d.example.com", i)
	case 1:
		t.Peer.ID = fmt.Sprintf("vpn%d@example.com", i)
	}
	for range 1 + g.r.IntN(3) {
		t.IKEProposals = append(t.IKEProposals, g.proposal(true))
	}
	for range 1 + g.r.IntN(3) {
		t.ESPProposals = append(t.ESPProposals, g.proposal(false))
	}
	t.IKELifetime = gwv1alpha1.IKELifetime{RekeyTime: g.duration("0", "1h", "4h", "24h"), ReauthTime: g.duration("0", "3h", "24h")}
	t.ChildLifetime = gwv1alpha1.ChildLifetime{RekeyTime: g.duration("0", "9s", "30s", "1h", "8h"), LifeTime: g.duration("0", "20s", "1h10m", "9h")}
	t.DPD = gwv1alpha1.DPD{Delay: g.duration("0", "5s", "30s"), Action: g.pick("", "clear", "trap", "restart")}
	if t.IKEVersion == 1 && g.chance(0.5) || g.chance(0.05) {
		t.DPD.Timeout = ptr.To[gwv1alpha1.Duration]("60s")
	}
	if g.chance(0.5) {
		t.ChildSALayout = gwv1alpha1.ChildSAPerSubnetPair
	} else if g.chance(0.5) {
		t.ChildSALayout = gwv1alpha1.ChildSASingle
	}
	for range 1 + g.r.IntN(3) {
		t.TrafficSelectors = append(t.TrafficSelectors, gwv1alpha1.TrafficSelector{
			Local:  gwv1alpha1.CIDR(g.prefix(presented, 20)),
			Remote: gwv1alpha1.CIDR(g.prefix(clients, 16)),
		})
	}
	if g.chance(0.3) {
		t.HideNAT = []gwv1alpha1.HideNAT{g.hideNAT(t.TrafficSelectors)}
	}
	// Route mode, for the parity of if_id_in and if_id_out: mostly
	// 0.0.0.0/0 selectors, a route in the client range.
	if g.chance(0.3) {
		t.Mode = gwv1alpha1.TunnelModeRoute
		t.HideNAT = nil
		if g.chance(0.7) {
			t.TrafficSelectors = []gwv1alpha1.TrafficSelector{{Local: "0.0.0.0/0", Remote: "0.0.0.0/0"}}
		}
		t.Routes = []gwv1alpha1.CIDR{gwv1alpha1.CIDR(g.prefix(clients, 24))}
		if g.chance(0.5) {
			t.RouteMetric = ptr.To(int32(g.r.IntN(300)))
		}
	}
	psk := make([]byte, g.r.IntN(48))
	for j := range psk {
		if g.chance(0.9) {
			psk[j] = byte(0x21 + g.r.IntN(0x5e)) // printable
		} else {
			psk[j] = byte(g.r.IntN(256))
		}
	}
	return t, psk
}

// hideNAT is a random hide NAT rule, usually presenting addresses of the
// local subnet of one of pairs towards its remote subnet.
func (g specGen) hideNAT(pairs []gwv1alpha1.TrafficSelector) gwv1alpha1.HideNAT {
	ts := pairs[g.r.IntN(len(pairs))]
	local, remote := netip.MustParsePrefix(string(ts.Local)), string(ts.Remote)
	if g.chance(0.1) {
		local = presented
	}
	if g.chance(0.1) {
		remote = g.prefix(clients, 16)
	}
	tenant := g.prefix(netip.MustParsePrefix("10.244.0.0/16"), 16)
	if g.chance(0.1) {
		tenant = g.prefix(netip.MustParsePrefix("10.0.0.0/8"), 8)
	}
	h := gwv1alpha1.HideNAT{Name: "out", TenantSubnets: []gwv1alpha1.CIDR{gwv1alpha1.CIDR(tenant)}, RemoteSubnets: []gwv1alpha1.CIDR{gwv1alpha1.CIDR(remote)}}
	if pool := netip.MustParsePrefix(g.prefix(local, local.Bits())); g.chance(0.5) {
		h.PresentedPool = ptr.To(gwv1alpha1.CIDR(pool.String()))
	} else {
		h.PresentedAddress = ptr.To(gwv1alpha1.IPv4(pool.Addr().String()))
	}
	return h
}

// input is one random spec with its PSKs.
func (g specGen) input() render.Input {
	spec := gatewaySpec("tenant-parity")
	spec.Exposures = nil
	spec.TenantSubnets = []gwv1alpha1.CIDR{"10.244.0.0/16"}
	spec.DataPlane = gwv1alpha1.DataPlane(g.pick("", string(gwv1alpha1.DataPlaneKernelXFRM), string(gwv1alpha1.DataPlaneLibipsec)))
	if g.chance(0.3) {
		spec.Mode = gwv1alpha1.ModeRouted
	}
	in := render.Input{PSKs: map[string][]byte{}, ServiceAddresses: map[string]string{}}
	spec.Tunnels = nil
	for i := range 1 + g.r.IntN(3) {
		t, psk := g.tunnel(i)
		spec.Tunnels = append(spec.Tunnels, t)
		in.PSKs[t.Name] = psk
	}
	// Mostly what route mode needs, so that some are accepted.
	if slices.ContainsFunc(spec.Tunnels, func(t gwv1alpha1.Tunnel) bool { return t.Mode == gwv1alpha1.TunnelModeRoute }) && g.chance(0.9) {
		spec.Mode, spec.DataPlane = gwv1alpha1.ModeRouted, ""
	}
	in.Spec = spec
	return in
}
