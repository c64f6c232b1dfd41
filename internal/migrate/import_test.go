package migrate

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// golden compares got with testdata/<dir>/<file>, or rewrites it with
// -update.
func golden(t *testing.T, dir, file string, got []byte) {
	t.Helper()
	p := filepath.Join("testdata", dir, file)
	if *update {
		if err := os.WriteFile(p, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(p)
	if err != nil {
		t.Fatalf("%v (run go test -update once)", err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("%s: -want +got:\n%s", p, diff)
	}
}

// Options is the VM of every case: floating IP 203.0.113.10, private
// address 10.20.0.5.
func testOptions() Options {
	return Options{Name: "vm-gw", Namespace: "tenant-a", FloatingIP: "203.0.113.10", VMAddress: "10.20.0.5",
		NetworkID: "00000000-0000-4000-8000-00000000aaaa", SubnetID: "00000000-0000-4000-8000-00000000bbbb",
		FixedIP: "10.20.0.10", RouterID: "00000000-0000-4000-8000-00000000cccc"}
}

// TestImportIPsecConf imports each testdata case and compares the
// IPsecGateway, the Secrets and the report (text and JSON) with the golden
// files; the PSKs must appear in the Secrets only.
func TestImportIPsecConf(t *testing.T) {
	cases := map[string]struct {
		reason  string
		tunnels []string
		psks    []string
	}{
		"stroke-fleet": {
			reason: "%default and also= inheritance, an include glob, three peers with auto start, route and add; " +
				"rightsubnet={a,b} carrying b alone, as charon read it, and two IKEv2 leftsubnets in one CHILD_SA; " +
				"PSKs in quotes (no escapes), hex and base64, picked by the best identity match, of two equal entries the later; the local identity " +
				"of left=%defaultroute is the VM's address, refused rather than silently the floating IP",
			tunnels: []string{"branch-a", "branch-b", "branch-c"},
			psks:    []string{`branch-a \`, "branch-b-key", "branch-c-later-entry-wins"},
		},
		"ikev1-subnets": {
			reason:  "IKEv1 with two local subnets: a CHILD_SA per pair, strict proposals, dpdtimeout, lifetimes in seconds",
			tunnels: []string{"cisco-asa"},
			psks:    []string{"asa-key"},
		},
		"refused": {
			reason: "road warrior with virtual IPs, aggressive mode, transport, XAUTH, passthrough, marks with an " +
				"updown script and a DN peer identity: every conn is refused with its reason",
		},
		"libreswan": {
			reason: "libreswan 4 syntax: ike=enc-integ;dh and phase2alg= with PFS from the IKE group, leftsubnets={a b} as a CHILD_SA per pair, " +
				"ikev2=no for IKEv1, salifetime, pluto's defaults (keyingtries for ever, no MOBIKE, rekey not reauthentication)",
			tunnels: []string{"hq", "legacy-branch"},
			psks:    []string{"hq-libreswan-key", "legacy-libreswan-key"},
		},
		"swanctl": {
			reason: "swanctl.conf: same-named sections merged (mobike = no added later), proposals with the default keyword, " +
				"two children as a CHILD_SA per pair, a quoted secret with escapes picked by the peer's identity, a road warrior refused",
			tunnels: []string{"dc-north"},
			psks:    []string{`north "quoted" key`},
		},
		"certificates": {
			reason:  "a certificate from ipsec.d/certs, its ECDSA key named in ipsec.secrets, the CAs of ipsec.d/cacerts; a peer known by its address only is refused",
			tunnels: []string{"dc-east"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			dir := filepath.Join("testdata", name)
			conf := "ipsec.conf"
			if _, err := os.Stat(filepath.Join(dir, "swanctl.conf")); err == nil {
				conf = "swanctl.conf"
			}
			res, err := Import(os.DirFS(dir), conf, "ipsec.secrets", testOptions())
			if err != nil {
				t.Fatalf("%s\nImportIPsecConf: %v", tc.reason, err)
			}
			var names []string
			for _, tn := range res.Tunnels {
				names = append(names, tn.Name)
			}
			if diff := cmp.Diff(tc.tunnels, names); diff != "" {
				t.Errorf("%s\ntunnels: -want +got:\n%s", tc.reason, diff)
			}
			var psks []string
			for _, k := range sortedKeys(res.PSKs) {
				psks = append(psks, string(res.PSKs[k]))
			}
			if diff := cmp.Diff(tc.psks, psks); diff != "" {
				t.Errorf("%s\nPSKs: -want +got:\n%s", tc.reason, diff)
			}
			gw, err := GatewayManifest(res, testOptions())
			if err != nil {
				t.Fatal(err)
			}
			sec, err := SecretManifests(res, testOptions())
			if err != nil {
				t.Fatal(err)
			}
			var text, js bytes.Buffer
			if err := res.Report.WriteText(&text); err != nil {
				t.Fatal(err)
			}
			if err := res.Report.WriteJSON(&js); err != nil {
				t.Fatal(err)
			}
			if !json.Valid(js.Bytes()) {
				t.Errorf("the JSON report is not JSON")
			}
			for _, psk := range tc.psks {
				for what, out := range map[string][]byte{"IPsecGateway": gw, "report": text.Bytes(), "JSON report": js.Bytes()} {
					if bytes.Contains(out, []byte(psk)) {
						t.Errorf("%s: the %s holds a PSK", tc.reason, what)
					}
				}
			}
			golden(t, name, "gateway.golden.yaml", gw)
			golden(t, name, "secrets.golden.yaml", sec)
			golden(t, name, "report.golden.txt", text.Bytes())
		})
	}
}
