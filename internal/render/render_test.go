package render

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"
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
		in.PSKs[tn.Name] = []byte("psk-" + tn.Name)
	}
	for i, e := range in.Spec.Exposures {
		if e.Target.ServiceName != nil {
			in.ServiceAddresses[e.Name] = fmt.Sprintf("10.96.0.%d", i+1)
		}
	}
	return in
}

// TestGolden renders representative gateways and compares every file with
// testdata/<case>/. Run with -update to rewrite them after a deliberate
// change, and review the diff.
func TestGolden(t *testing.T) {
	cases := map[string]string{
		"single-tunnel":      "One IKEv2 tunnel with one subnet pair and every optional setting.",
		"several-tunnels":    "Three tunnels to different peers, one identified by FQDN.",
		"pairs-per-child":    "Several subnet pairs, one CHILD_SA each.",
		"pairs-single-child": "Several subnet pairs carried by one CHILD_SA.",
		"ikev1":              "An IKEv1 tunnel with two subnet pairs as two CHILD_SAs.",
		"nat-exposures":      "Mode nat with exposures (by address and by Service) and reverse exposures.",
		"routed":             "Mode routed: tenant subnets as local traffic selectors, an empty NAT table.",
		"psk-special-chars":  "PSKs with braces, quotes, '#' and newlines are hex-encoded.",
	}
	for name, reason := range cases {
		t.Run(name, func(t *testing.T) {
			in := goldenInput(t, name)
			if name == "psk-special-chars" {
				in.PSKs["edge"] = []byte("}\nsecrets { evil = \"1\" # {}")
			}
			f, err := Render(in)
			if err != nil {
				t.Fatalf("%s\nRender(): %v", reason, err)
			}
			for file, got := range map[string][]byte{"swanctl.conf": f.SwanctlConf, "secrets.conf": f.Secrets, "nat.nft": f.NATRules} {
				path := filepath.Join("testdata", name, file)
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
	if string(c.Secrets) == string(a.Secrets) {
		t.Errorf("a PSK change did not change the secrets file")
	}
	in.Spec.Tunnels[0].DPD.Action = "clear"
	d, _ := Render(in)
	if d.Hash == a.Hash {
		t.Errorf("a configuration change did not change the hash")
	}
}
