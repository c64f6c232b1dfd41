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
	"github.com/ipsecgw/provider-ipsec/internal/agent/apply"
	"github.com/ipsecgw/provider-ipsec/internal/agent/vicitest"
	"github.com/ipsecgw/provider-ipsec/internal/render"
	"github.com/ipsecgw/provider-ipsec/test/topology"
)

// Parity runs: PARITY_N specs (parityDefault in make test; hack/parity.sh
// runs thousands) from PARITY_SEED (random when unset; logged, so that a
// failure can be run again).
const parityDefault = 2000

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
	g := specGen{r: r, keywords: byKind(render.Keywords()), cert: goldenTunnelCert(t)}
	c := topology.StartValidator(t)
	ctx := context.Background()
	accepted, certTunnels, nat, routeMode, reasons := 0, 0, 0, 0, map[string]int{}
	forms := map[string]int{}
	for i := range n {
		in := g.input()
		files, err := render.Render(in)
		if err != nil {
			reasons[firstField(err)]++
			continue
		}
		accepted++
		for _, tn := range in.Spec.Tunnels {
			for _, f := range vmForms(tn) {
				forms[f]++
			}
		}
		if files.XFRMInterfaces != nil {
			routeMode++
		}
		// Converted as the agent converts them: certificate tunnels'
		// CAs inside load-conn, their keys and certificates apart.
		set, err := apply.Convert(files.SwanctlConf, files.Secrets)
		if err != nil {
			t.Fatalf("spec %d: the rendered files do not convert: %v", i, err)
		}
		conns := set.Conns
		certTunnels += len(set.Keys)
		var refused []string
		for _, k := range set.Keys {
			if _, err := c.Call(ctx, "load-key", k.Message); err != nil {
				refused = append(refused, fmt.Sprintf("key %s: %v", k.ID, err))
			}
		}
		for _, crt := range set.Certs {
			if _, err := c.Call(ctx, "load-cert", crt.Message); err != nil {
				refused = append(refused, fmt.Sprintf("certificate %s: %v", crt.Name, err))
			}
		}
		for _, conn := range conns {
			if _, err := c.Call(ctx, "load-conn", conn.Message); err != nil {
				refused = append(refused, fmt.Sprintf("connection %s: %v", conn.Name, err))
			}
		}
		for _, s := range set.Shared {
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
	t.Logf("%d certificate tunnels among the accepted specs; tunnels with the forms of VMs' files: %v", certTunnels, forms)
	for _, f := range allVMForms {
		if forms[f] == 0 {
			t.Errorf("no accepted spec has a tunnel with %s: the generator tests none", f)
		}
	}
	if certTunnels == 0 {
		t.Errorf("no accepted spec has a certificate tunnel: the generator tests none")
	}
	if accepted < n/10 {
		t.Errorf("the validator accepted only %d of %d specs: the generator tests too little of what is accepted", accepted, n)
	}
}

// The forms of VMs' files (issue 32) the parity test must see accepted
// and loaded, as vmForms names them.
var allVMForms = []string{"a keyword with '_'", "peer.id @name", "peer.id with '_'", "peer.id DN", "a multi-valued RDN", "a DN as asn1dn:#", "certificate.remoteId ip"}

// vmForms names the forms of allVMForms tunnel tn has.
func vmForms(tn gwv1alpha1.Tunnel) []string {
	var out []string
	if slices.ContainsFunc(slices.Concat(tn.IKEProposals, tn.ESPProposals), func(p string) bool { return strings.Contains(p, "_") }) {
		out = append(out, allVMForms[0])
	}
	id := tn.Peer.ID
	var dn string
	if c := tn.Certificate; c != nil && c.RemoteID.DN != nil {
		dn = *c.RemoteID.DN
	}
	switch {
	case strings.HasPrefix(id, "@"):
		out = append(out, allVMForms[1])
	case strings.Contains(id, "="), strings.HasPrefix(id, "asn1dn:#"):
		out = append(out, allVMForms[3])
		dn = id
	case strings.Contains(id, "_"):
		out = append(out, allVMForms[2])
	}
	if strings.Contains(strings.ReplaceAll(dn, `\+`, ""), "+") {
		out = append(out, allVMForms[4])
	}
	if strings.HasPrefix(dn, "asn1dn:#") {
		out = append(out, allVMForms[5])
	}
	if c := tn.Certificate; c != nil && c.RemoteID.IP != nil {
		out = append(out, allVMForms[6])
	}
	return out
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
	// cert is the material of every certificate tunnel.
	cert *render.TunnelCert
}

// goldenTunnelCert is the render golden cert-tunnel's certificate, key and
// peer CA (valid from 2026 to 2126), parsed.
func goldenTunnelCert(t *testing.T) *render.TunnelCert {
	t.Helper()
	read := func(f string) []byte {
		b, err := os.ReadFile(filepath.Join(goldenDir, "cert-tunnel", f))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	tc, err := render.ParseTunnelCert(read(render.KeyTLSCert), read(render.KeyTLSKey), read("ca.crt"), "ca.crt", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	return tc
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
	if g.chance(0.02) {
		// What VMs' files hold: AEAD and non-AEAD encryption in one
		// proposal, the other kind inserted anywhere.
		other := g.kw("encryption")
		if !slices.Contains(g.keywords["aead"], parts[0]) {
			other = g.kw("aead")
		}
		parts = slices.Insert(parts, g.r.IntN(len(parts)+1), other)
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

// peerDER is a DN as asn1dn:# and its DER: the subject of openssl req
// -multivalue-rdn -subj "/C=DE/O=Example AG/OU=Net+CN=rtr1.example.net".
const peerDER = "asn1dn:#3049310b300906035504061302444531133011060355040a0c0a4578616d706c652041473125300a060355040b0c034e6574301706035504030c10727472312e6578616d706c652e6e6574"

var (
	presented = netip.MustParsePrefix("100.64.0.0/16")
	clients   = netip.MustParsePrefix("192.168.0.0/16")
)

func (g specGen) tunnel(i int) (gwv1alpha1.Tunnel, []byte) {
	t := gwv1alpha1.Tunnel{
		Name: fmt.Sprintf("t%d", i), Peer: gwv1alpha1.Peer{Address: fmt.Sprintf("198.51.100.%d", i+1)},
		IKEVersion: 2, StartAction: g.pick("", "start", "trap", "respond"), Unique: g.pick("", "no", "replace", "keep"),
		Fragmentation: g.pick("", "yes", "accept", "force", "no"), ForceEncapsulation: g.chance(0.3),
		PreSharedKeySecretRef: &xpv2.LocalSecretKeySelector{LocalSecretReference: xpv2.LocalSecretReference{Name: "vpn-psk"}, Key: fmt.Sprintf("t%d", i)},
	}
	if g.chance(0.3) {
		t.IKEVersion = 1
	}
	t.MOBIKE = t.IKEVersion == 2 && g.chance(0.5) || g.chance(0.05)
	switch g.r.IntN(6) {
	case 0:
		t.Peer.ID = fmt.Sprintf("peer%d.example.com", i)
	case 1:
		t.Peer.ID = fmt.Sprintf("vpn%d@example.com", i)
	case 2, 3:
		// The forms VMs' files hold: strongSwan's '@', '_', DNs.
		t.Peer.ID = g.pick(fmt.Sprintf("@fw%d.example.net", i), fmt.Sprintf("fw_%d.example.net", i), fmt.Sprintf("_vpn_%d", i),
			fmt.Sprintf("C=DE, O=Example\\, Inc, OU=Net + CN=rtr%d.example.net", i), fmt.Sprintf("CN=rtr%d + OU=Net + O=Example", i), peerDER, "X=1, CN=bad")
	}
	for range 1 + g.r.IntN(3) {
		t.IKEProposals = append(t.IKEProposals, g.proposal(true))
	}
	for range 1 + g.r.IntN(3) {
		t.ESPProposals = append(t.ESPProposals, g.proposal(false))
	}
	t.IKELifetime = gwv1alpha1.IKELifetime{RekeyTime: g.duration("0", "1h", "4h", "24h"), ReauthTime: g.duration("0", "3h", "24h"), RandTime: g.duration("0", "5m", "30m", "5h")}
	t.ChildLifetime = gwv1alpha1.ChildLifetime{RekeyTime: g.duration("0", "9s", "30s", "1h", "8h"), LifeTime: g.duration("0", "20s", "1h10m", "9h"), RandTime: g.duration("0", "5s", "10m", "2h")}
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

// certificate is a random certificate section for g.cert (the render
// golden cert-tunnel's material): each kind of identity, the
// certificate's subject typed or left out, DNs with escapes.
func (g specGen) certificate() *gwv1alpha1.CertificateAuth {
	ids := []gwv1alpha1.Identity{
		{DN: ptr.To(`C=CH, O=Zürich Peer AG, OU=Net\, Ops, CN=vpn.peer.example`)},
		{DN: ptr.To(`DC=example, DC=com, UID=peer\+1, E=vpn@peer.example`)},
		{DN: ptr.To(`C=DE, O=Example AG, OU=Net + CN=rtr1.example.net`)},
		{DN: ptr.To(peerDER)},
		{FQDN: ptr.To("vpn.peer.example")},
		{Email: ptr.To("vpn@peer.example")},
		{IP: ptr.To[gwv1alpha1.IPv4]("198.51.100.200")},
	}
	c := &gwv1alpha1.CertificateAuth{SecretName: "gw-tls", PeerCA: gwv1alpha1.CARef{SecretName: ptr.To("peer-ca")}, RemoteID: ids[g.r.IntN(len(ids))]}
	switch g.r.IntN(4) {
	case 0:
		c.LocalID = &gwv1alpha1.Identity{DN: ptr.To(`C=DE, L=Köln, O=Example AG, OU=VPN\, Site A, CN=gw.example.com`)}
	case 1:
		c.LocalID = &gwv1alpha1.Identity{FQDN: ptr.To("gw.example.com")}
	case 2:
		// Not in the certificate's subjectAltName (DNS only): the
		// validator refuses it.
		c.LocalID = &gwv1alpha1.Identity{IP: ptr.To[gwv1alpha1.IPv4]("203.0.113.10")}
	}
	return c
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

// input is one random spec with its PSKs and certificates.
func (g specGen) input() render.Input {
	spec := gatewaySpec("tenant-parity")
	spec.Exposures = nil
	spec.TenantSubnets = []gwv1alpha1.CIDR{"10.244.0.0/16"}
	spec.DataPlane = gwv1alpha1.DataPlane(g.pick("", string(gwv1alpha1.DataPlaneKernelXFRM), string(gwv1alpha1.DataPlaneLibipsec)))
	if g.chance(0.3) {
		spec.Mode = gwv1alpha1.ModeRouted
	}
	in := render.Input{PSKs: map[string][]byte{}, Certs: map[string]*render.TunnelCert{}, ServiceAddresses: map[string]string{}}
	spec.Tunnels = nil
	for i := range 1 + g.r.IntN(3) {
		t, psk := g.tunnel(i)
		if g.chance(0.25) {
			t.Peer.ID = ""
			t.PreSharedKeySecretRef = nil
			t.Certificate = g.certificate()
			in.Certs[t.Name] = g.cert
		}
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
