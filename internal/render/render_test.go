package render

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/ipsecgw/provider-ipsec/apis/cluster/gateway/v1alpha1"
	"github.com/ipsecgw/provider-ipsec/internal/contract"
	"github.com/ipsecgw/provider-ipsec/internal/swanctl"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// goldenInput reads testdata/<name>/gateway.yaml, a spec.forProvider, and
// gives every tunnel the PSK "psk-<tunnel>" and every exposure with a
// serviceName the cluster IP 10.96.0.<n>.
func goldenInput(t *testing.T, name string) Input {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name, "gateway.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	in := Input{PSKs: map[string][]byte{}, ServiceAddresses: map[string]string{}}
	if err := yaml.UnmarshalStrict(b, &in.Spec); err != nil {
		t.Fatalf("%s/gateway.yaml: %v", name, err)
	}
	for _, tn := range in.Spec.Tunnels {
		if tn.Certificate != nil {
			in.Certs = goldenCerts(t, name, in.Certs, tn.Name)
			continue
		}
		in.PSKs[tn.Name] = []byte("psk-" + tn.Name)
	}
	for i, e := range in.Spec.Exposures {
		if e.Target.ServiceName != nil {
			in.ServiceAddresses[e.Name] = fmt.Sprintf("10.96.0.%d", i+1)
		}
	}
	return in
}

// goldenCerts adds to certs (made when nil) the material of certificate
// tunnel tunnel from testdata/<name>/: tls.crt, tls.key and ca.crt, test
// certificates valid from 2026 to 2126.
func goldenCerts(t *testing.T, name string, certs map[string]*TunnelCert, tunnel string) map[string]*TunnelCert {
	t.Helper()
	read := func(f string) []byte {
		b, err := os.ReadFile(filepath.Join("testdata", name, f))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	tc, err := ParseTunnelCert(read(KeyTLSCert), read(KeyTLSKey), read("ca.crt"), "ca.crt", time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	if certs == nil {
		certs = map[string]*TunnelCert{}
	}
	certs[tunnel] = tc
	return certs
}

// TestGolden renders representative gateways and compares every file with
// testdata/<case>/. Run with -update to rewrite them after a deliberate
// change, and review the diff.
func TestGolden(t *testing.T) {
	cases := map[string]string{
		"single-tunnel":       "One IKEv2 tunnel with one subnet pair and every optional setting.",
		"several-tunnels":     "Three tunnels to different peers, one identified by FQDN.",
		"pairs-per-child":     "Several subnet pairs, one CHILD_SA each.",
		"pairs-single-child":  "Several subnet pairs carried by one CHILD_SA.",
		"ikev1":               "An IKEv1 tunnel with two subnet pairs as two CHILD_SAs.",
		"nat-exposures":       "Mode nat with exposures (by address and by Service) and reverse exposures.",
		"hide-nat":            "Mode nat with hide NAT (a presented address for one tenant subnet, a pool for another; a third, unlisted, untranslated) beside an exposure and a reverse exposure, whose SNAT comes first.",
		"routed":              "Mode routed: tenant subnets as local traffic selectors, empty NAT chains, the tunnel's MSS rules.",
		"psk-special-chars":   "PSKs with braces, quotes and '#' are hex-encoded (line breaks are refused).",
		"libipsec":            "Data plane Libipsec: a strongswan.conf fragment loading kernel-libipsec.",
		"cert-tunnel":         "Certificate tunnels: DN identities (several RDNs, non-ASCII, escaped ',' and '+') rendered as asn1dn DER, FQDN and email identities, the certificate's subject by default, beside a PSK tunnel; the key and certificates only in secrets.conf.",
		"replicas-2":          "Active/standby, mobike left out: mobike = no and local_addrs the private address, so that no IKE SA of a pod that lost the address can move to another interface.",
		"route-active-backup": "Two route-mode tunnels to a cloud VPN's two endpoints with identical 0.0.0.0/0 selectors: if_id_in/if_id_out per tunnel, an XFRM interface each, the same routes with metrics 100 (active) and 200 (backup).",
		"route-ecmp":          "The same two tunnels with equal metrics: one multipath route per destination with a next hop per interface.",
		"route-mixed":         "A route-mode tunnel with narrowed selectors, trap and the default metric, an IKEv1 route-mode tunnel, and a policy-mode tunnel rendered as before.",
	}
	for name, reason := range cases {
		t.Run(name, func(t *testing.T) {
			in := goldenInput(t, name)
			if name == "psk-special-chars" {
				in.PSKs["edge"] = []byte("} secrets { evil = \"1\" # {}")
			}
			f, err := Render(in)
			if err != nil {
				t.Fatalf("%s\nRender(): %v", reason, err)
			}
			files := map[string][]byte{"swanctl.conf": f.SwanctlConf, "secrets.conf": f.Secrets, "nat.nft": f.NATRules,
				"strongswan.conf": f.StrongSwanConf, "xfrm.json": f.XFRMInterfaces}
			for file, got := range files {
				path := filepath.Join("testdata", name, file)
				if got == nil {
					// No such file rendered: no golden file either.
					if *update {
						_ = os.Remove(path)
					} else if _, err := os.Stat(path); err == nil {
						t.Errorf("%s\n%s was not rendered but has a golden file", reason, file)
					}
					continue
				}
				if *update {
					if err := os.WriteFile(path, got, 0o644); err != nil {
						t.Fatal(err)
					}
					continue
				}
				want, err := os.ReadFile(path)
				if err != nil {
					t.Fatalf("%v (run go test -update to create it)", err)
				}
				if diff := cmp.Diff(string(want), string(got)); diff != "" {
					t.Errorf("%s\n%s: -want, +got:\n%s", reason, file, diff)
				}
			}
		})
	}
}

// TestRenderDeterministic proves the same input renders the same bytes and
// hash, and that the hash follows the configuration but not the PSKs.
func TestRenderDeterministic(t *testing.T) {
	in := goldenInput(t, "several-tunnels")
	a, err := Render(in)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := Render(in)
	if diff := cmp.Diff(a, b); diff != "" {
		t.Errorf("two renders of one input differ:\n%s", diff)
	}
	in.PSKs["branch-a"] = []byte("another key")
	c, _ := Render(in)
	if c.Hash != a.Hash {
		t.Errorf("a PSK change changed the hash: the hash must not depend on secrets")
	}
	if bytes.Equal(c.Secrets, a.Secrets) {
		t.Errorf("a PSK change did not change the secrets file")
	}
	in.Spec.Tunnels[0].DPD.Action = "clear"
	d, _ := Render(in)
	if d.Hash == a.Hash {
		t.Errorf("a configuration change did not change the hash")
	}
	if d.StartHash != a.StartHash {
		t.Errorf("a tunnel change changed the start hash: the gateway pod would be replaced for a change the agent reloads live")
	}
	if got := contract.ConfigHash(d.SwanctlConf, d.NATRules, d.StrongSwanConf, d.XFRMInterfaces); got != d.Hash {
		t.Errorf("contract.ConfigHash of the rendered files is %s, Files.Hash %s: the agent would report another hash than the provider", got, d.Hash)
	}
}

// TestChildNamesStable proves a CHILD_SA's name follows its own subnet pair
// only: removing, adding or reordering other pairs of the tunnel leaves the
// names of the remaining children as they were, so a live reload does not
// tear down the wrong CHILD_SA.
func TestChildNamesStable(t *testing.T) {
	ts := func(local, remote string) v1alpha1.TrafficSelector {
		return v1alpha1.TrafficSelector{Local: v1alpha1.CIDR(local), Remote: v1alpha1.CIDR(remote)}
	}
	a, b, c := ts("100.64.0.0/24", "192.168.10.0/24"), ts("100.64.0.0/24", "192.168.11.0/24"), ts("100.64.2.0/24", "192.168.10.0/24")
	cases := map[string]struct {
		reason string
		layout v1alpha1.ChildSALayout
		pairs  []v1alpha1.TrafficSelector
		want   map[string]string // child name -> "local_ts remote_ts"
	}{
		"AllPairs": {
			reason: "Each pair has a child named after the hash of its subnets.",
			pairs:  []v1alpha1.TrafficSelector{a, b, c},
			want: map[string]string{
				"a-008cc99e": "100.64.0.0/24 192.168.10.0/24",
				"a-e65c63d3": "100.64.0.0/24 192.168.11.0/24",
				"a-d7c438f4": "100.64.2.0/24 192.168.10.0/24",
			},
		},
		"MiddlePairRemoved": {
			reason: "Removing the middle pair leaves the names of the others.",
			pairs:  []v1alpha1.TrafficSelector{a, c},
			want: map[string]string{
				"a-008cc99e": "100.64.0.0/24 192.168.10.0/24",
				"a-d7c438f4": "100.64.2.0/24 192.168.10.0/24",
			},
		},
		"PairInsertedFirstAndReordered": {
			reason: "Inserting a pair in front and reordering the others renames nothing.",
			pairs:  []v1alpha1.TrafficSelector{b, c, a},
			want: map[string]string{
				"a-008cc99e": "100.64.0.0/24 192.168.10.0/24",
				"a-e65c63d3": "100.64.0.0/24 192.168.11.0/24",
				"a-d7c438f4": "100.64.2.0/24 192.168.10.0/24",
			},
		},
		"Single": {
			reason: "Layout Single has one child named after the tunnel.",
			layout: v1alpha1.ChildSASingle,
			pairs:  []v1alpha1.TrafficSelector{a, c},
			want:   map[string]string{"a": "100.64.0.0/24,100.64.2.0/24 192.168.10.0/24"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			in := valid()
			in.Spec.Tunnels[0].TrafficSelectors = tc.pairs
			in.Spec.Tunnels[0].ChildSALayout = tc.layout
			f, err := Render(in)
			if err != nil {
				t.Fatalf("%s\nRender(): %v", tc.reason, err)
			}
			doc, err := swanctl.Parse(f.SwanctlConf)
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]string{}
			for _, ch := range doc.Lookup("connections.a.children").Sections {
				l, _ := ch.Get("local_ts")
				r, _ := ch.Get("remote_ts")
				got[ch.Name] = l + " " + r
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\nchildren: -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

// TestDataPlane proves the data planes differ only where they must: every
// golden gateway rendered with Libipsec has the files of KernelXFRM (the
// default, no strongswan.conf fragment) plus a fragment whose plugin list
// is the gateway image's with kernel-libipsec loaded before kernel-netlink.
func TestDataPlane(t *testing.T) {
	image, err := os.ReadFile(filepath.Join("..", "..", "cluster", "images", "gateway", "strongswan.conf"))
	if err != nil {
		t.Fatal(err)
	}
	plugins := func(conf []byte) string {
		t.Helper()
		for _, l := range strings.Split(string(conf), "\n") {
			if v, ok := strings.CutPrefix(strings.TrimSpace(l), "load = "); ok {
				return v
			}
		}
		t.Fatalf("no charon load setting in:\n%s", conf)
		return ""
	}
	want := strings.Replace(plugins(image), " kernel-netlink ", " kernel-libipsec kernel-netlink ", 1)
	cases := map[string]struct {
		dp   v1alpha1.DataPlane
		want string // the fragment's plugin list, "" for none
	}{
		"Default":    {"", ""},
		"KernelXFRM": {v1alpha1.DataPlaneKernelXFRM, ""},
		"Libipsec":   {v1alpha1.DataPlaneLibipsec, want},
	}
	for _, name := range []string{"single-tunnel", "nat-exposures", "routed"} {
		in := goldenInput(t, name)
		base, err := Render(in)
		if err != nil {
			t.Fatal(err)
		}
		for dpName, tc := range cases {
			t.Run(name+"/"+dpName, func(t *testing.T) {
				in.Spec.DataPlane = tc.dp
				f, err := Render(in)
				if err != nil {
					t.Fatal(err)
				}
				// Hashes are compared by whether they changed.
				ignore := cmpopts.IgnoreFields(Files{}, "StrongSwanConf", "Hash", "StartHash")
				if diff := cmp.Diff(base, f, ignore); diff != "" {
					t.Errorf("the data plane changed more than the strongswan.conf fragment: -KernelXFRM, +%s:\n%s", dpName, diff)
				}
				if tc.want == "" {
					if f.StrongSwanConf != nil || f.Hash != base.Hash || f.StartHash != base.StartHash {
						t.Errorf("StrongSwanConf = %q, hash changed %v, start hash changed %v; want none and the same hashes",
							f.StrongSwanConf, f.Hash != base.Hash, f.StartHash != base.StartHash)
					}
					return
				}
				if got := plugins(f.StrongSwanConf); got != tc.want {
					t.Errorf("fragment plugins:\n%s\nwant the image's with kernel-libipsec before kernel-netlink:\n%s", got, tc.want)
				}
				if f.Hash == base.Hash || f.StartHash == base.StartHash {
					t.Errorf("the fragment did not change the hash (%v) or the start hash (%v): the pod would not follow a data plane change",
						f.Hash != base.Hash, f.StartHash != base.StartHash)
				}
				if got := contract.ConfigHash(f.SwanctlConf, f.NATRules, f.StrongSwanConf, f.XFRMInterfaces); got != f.Hash {
					t.Errorf("contract.ConfigHash of the rendered files is %s, Files.Hash %s", got, f.Hash)
				}
			})
		}
	}
}

func TestRandTime(t *testing.T) {
	// randTimes lists the rand_time lines of conf, in order.
	randTimes := func(conf []byte) []string {
		var got []string
		for _, l := range strings.Split(string(conf), "\n") {
			if l = strings.TrimSpace(l); strings.HasPrefix(l, "rand_time") {
				got = append(got, l)
			}
		}
		return got
	}
	cases := map[string]struct {
		reason string
		ike    *v1alpha1.Duration
		child  *v1alpha1.Duration
		want   []string
	}{
		"Absent": {
			reason: "No randTime leaves strongSwan's defaults: no rand_time is rendered.",
		},
		"Both": {
			reason: "The IKE SA's randTime goes on the connection, the CHILD_SA's on each child, in whole seconds.",
			ike:    ptr.To[v1alpha1.Duration]("10m"), child: ptr.To[v1alpha1.Duration]("90s"),
			want: []string{"rand_time = 600s", "rand_time = 90s"},
		},
		"Off": {
			reason: "0 turns the randomization off, as charon reads it.",
			child:  ptr.To[v1alpha1.Duration]("0"),
			want:   []string{"rand_time = 0s"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			in := goldenInput(t, "single-tunnel")
			in.Spec.Tunnels[0].IKELifetime.RandTime = tc.ike
			in.Spec.Tunnels[0].ChildLifetime.RandTime = tc.child
			f, err := Render(in)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, randTimes(f.SwanctlConf)); diff != "" {
				t.Errorf("%s\nrand_time lines: -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}
