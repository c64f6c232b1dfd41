//go:build integration

package configuration

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	xpv1 "github.com/crossplane/crossplane/apis/v2/apiextensions/v1"
	"github.com/google/go-cmp/cmp"
	extv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/ipsecgw/provider-ipsec/test/variants"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// crossplaneImage names the Crossplane core whose CRDs `crossplane beta
// validate` reads from its cache; the cache is filled from the core CRDs
// that hack/tools.sh built, so the (never resolved) host is never asked.
const crossplaneImage = "xpkg.ipsecgw.invalid/crossplane/crossplane:v2.4.0"

// root is the repository's top directory.
var root = filepath.Join("..", "..")

// bin returns the path of a tool built by hack/tools.sh (make test passes
// its directory in KUBEBUILDER_ASSETS).
func bin(t *testing.T, name string) string {
	t.Helper()
	dir := os.Getenv("KUBEBUILDER_ASSETS")
	if dir == "" {
		t.Fatal("KUBEBUILDER_ASSETS is not set: run `make test-integration` (it points it at hack/tools.sh bindir)")
	}
	p := filepath.Join(dir, name)
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("%s: %v (run `make tools`)", name, err)
	}
	return p
}

// startFunction builds the Configuration's composition function
// (cmd/function), runs it without TLS on a free loopback port and writes
// the functions file `crossplane render` needs to reach it. The function is
// stopped when the test ends.
func startFunction(t *testing.T) string {
	t.Helper()
	exe := filepath.Join(t.TempDir(), "function")
	build := exec.Command("go", "build", "-o", exe, "./cmd/function")
	build.Dir = root
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/function: %v\n%s", err, out)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	var log bytes.Buffer
	cmd := exec.Command(exe, "--insecure", "--address", addr)
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("function log:\n%s", log.String())
		}
	})
	deadline := time.Now().Add(20 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the function does not listen on %s: %v", addr, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	fn := filepath.Join(t.TempDir(), "functions.yaml")
	doc := fmt.Sprintf(`apiVersion: pkg.crossplane.io/v1
kind: Function
metadata:
  name: function-ipsecgw
  annotations:
    render.crossplane.io/runtime: Development
    render.crossplane.io/runtime-development-target: %s
spec:
  package: xpkg.ipsecgw.invalid/ipsecgw/function-ipsecgw:v0.1.0
`, addr)
	if err := os.WriteFile(fn, []byte(doc), 0o600); err != nil {
		t.Fatal(err)
	}
	return fn
}

// run runs a tool and returns its standard output; it fails the test with
// both outputs when the tool fails.
func run(t *testing.T, name string, args ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, bin(t, name), args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s: %v\nstdout:\n%s\nstderr:\n%s", name, strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	return stdout.Bytes()
}

// validateCache makes a `crossplane beta validate` cache holding Crossplane
// core's CRDs under crossplaneImage.
func validateCache(t *testing.T) string {
	t.Helper()
	cache := t.TempDir()
	dst := filepath.Join(cache, "xpkg.ipsecgw.invalid", "crossplane", "crossplane@v2.4.0")
	if err := os.MkdirAll(dst, 0o755); err != nil {
		t.Fatal(err)
	}
	src := bin(t, "crossplane-crds")
	entries, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return cache
}

// validate runs `crossplane beta validate` of resources (comma-separated
// files or directories) against the provider's CRDs and the XRD (the
// function takes no input), and fails the test on any schema error.
func validate(t *testing.T, cache, resources string) {
	t.Helper()
	extensions := strings.Join([]string{
		filepath.Join(root, "package", "crds"),
		filepath.Join(root, "package", "configuration", "zz_generated_definition.yaml"),
		filepath.Join(root, "package", "configuration", "zz_generated_definition_namespaced.yaml"),
	}, ",")
	// It exits non-zero on any schema or CEL error.
	run(t, "crank", "beta", "validate", extensions, resources, "--cache-dir", cache, "--crossplane-image", crossplaneImage)
}

// compositions are the Configuration's Compositions by the apiVersion of
// the composite they compose: the legacy claim's XIPsecGateway and the
// namespaced IPsecGateway.
var compositions = map[string]string{
	"vpn.ipsecgw.io/v1alpha1":   filepath.Join(root, "package", "configuration", "composition.yaml"),
	"vpn.m.ipsecgw.io/v1alpha1": filepath.Join(root, "package", "configuration", "composition-namespaced.yaml"),
}

// TestRender renders each testdata case (xr.yaml, the composite as
// Crossplane last saw it, observed.yaml, its composed resources, and
// required.yaml, the resources the function requires: the platform's
// EnvironmentConfigs pinning ProviderConfigs to namespaces) with the
// Composition of its kind of composite, compares the result with
// rendered.yaml and validates it.
func TestRender(t *testing.T) {
	functions := startFunction(t)
	cache := validateCache(t)
	cases, err := filepath.Glob(filepath.Join("testdata", "*", "xr.yaml"))
	if err != nil || len(cases) == 0 {
		t.Fatalf("no test cases in testdata: %v", err)
	}
	for _, xr := range cases {
		dir := filepath.Dir(xr)
		t.Run(filepath.Base(dir), func(t *testing.T) {
			b, err := os.ReadFile(xr)
			if err != nil {
				t.Fatal(err)
			}
			var head struct {
				APIVersion string `json:"apiVersion"`
			}
			if err := yaml.Unmarshal(b, &head); err != nil {
				t.Fatal(err)
			}
			composition, ok := compositions[head.APIVersion]
			if !ok {
				t.Fatalf("%s: no Composition composes apiVersion %q", xr, head.APIVersion)
			}
			args := []string{"render", xr, composition, functions, "--include-full-xr", "--include-function-results"}
			if _, err := os.Stat(filepath.Join(dir, "observed.yaml")); err == nil {
				args = append(args, "--observed-resources", filepath.Join(dir, "observed.yaml"))
			}
			if _, err := os.Stat(filepath.Join(dir, "required.yaml")); err == nil {
				args = append(args, "--required-resources", filepath.Join(dir, "required.yaml"))
			}
			t0 := time.Now()
			got := run(t, "crank", args...)
			t.Logf("crank render: %s", time.Since(t0).Round(time.Millisecond))
			golden := filepath.Join(dir, "rendered.yaml")
			if *update {
				if err := os.WriteFile(golden, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run the test with -update to write it)", err)
			}
			if diff := cmp.Diff(string(want), string(got)); diff != "" {
				t.Errorf("crossplane render of %s: -want +got:\n%s", dir, diff)
			}
			validate(t, cache, golden+","+composition)
		})
	}
}

// TestValidateExamples validates every example manifest against the CRDs
// and the XRD.
func TestValidateExamples(t *testing.T) {
	validate(t, validateCache(t), filepath.Join(root, "examples"))
}

// minimalClaim is an IPsecGateway with only what admission needs: the
// required fields, endpoint.floatingNetworkId because the endpoint
// needs exactly one of floatingIP or floatingNetworkId, and a tunnel's
// preSharedKeySecretRef because it needs exactly one of a PSK and a
// certificate.
const minimalClaim = `
apiVersion: vpn.ipsecgw.io/v1alpha1
kind: IPsecGateway
metadata: {name: minimal, namespace: tenant-a}
spec:
  endpoint: {floatingNetworkId: 00000000-0000-4000-8000-000000000003}
  network: {networkId: 00000000-0000-4000-8000-000000000001, subnetId: 00000000-0000-4000-8000-000000000002}
  tunnels:
  - name: branch-a
    peer: {address: 198.51.100.7}
    ikeVersion: 2
    ikeProposals: [aes256-sha256-modp2048]
    espProposals: [aes256gcm16]
    preSharedKeySecretRef: {name: branch-a-psk, key: psk}
    trafficSelectors: [{local: 100.64.0.0/24, remote: 192.168.10.0/24}]
`

// TestValidateClaimVariants validates, with the XRD's schema and CEL rules
// (crossplane beta validate applies its defaults and evaluates its rules
// as the API server does), the minimal claim and its variants derived from
// the XRD's schema: each other value of every enum field it sets (IKEv1)
// and, on each of those, each optional boolean false (mobike,
// forceEncapsulation). No rule may read an optional field without has().
func TestValidateClaimVariants(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(root, "package", "configuration", "zz_generated_definition.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	xrd := &xpv1.CompositeResourceDefinition{}
	if err := yaml.Unmarshal(b, xrd); err != nil {
		t.Fatal(err)
	}
	s := &extv1.JSONSchemaProps{}
	if err := json.Unmarshal(xrd.Spec.Versions[0].Schema.OpenAPIV3Schema.Raw, s); err != nil {
		t.Fatal(err)
	}
	claim, _ := parseMinimalClaim(t)
	spec := s.Properties["spec"]
	// A tunnel needs exactly one of a PSK and a certificate: the PSK.
	if diff := cmp.Diff([]string{"endpoint.floatingNetworkId", "tunnels[*].preSharedKeySecretRef"}, variants.Optional(&spec, claim["spec"])); diff != "" {
		t.Errorf("the minimal claim sets optional fields beyond the one it needs: -want, +got:\n%s", diff)
	}
	vs, absent, err := variants.Of(s, claim, "spec")
	if err != nil {
		t.Fatal(err)
	}
	if len(absent) > 0 {
		t.Logf("optional booleans not varied, their object being absent from the minimal claim: %v", absent)
	}
	dir := t.TempDir()
	for i, v := range vs {
		v.Object["metadata"].(map[string]any)["name"] = fmt.Sprintf("minimal-%d", i)
		out, err := yaml.Marshal(v.Object)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("claim-%d.yaml", i)), out, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("minimal-%d: %s", i, v.Name)
	}
	extensions := filepath.Join(root, "package", "configuration", "zz_generated_definition.yaml")
	got := run(t, "crank", "beta", "validate", extensions, dir, "--cache-dir", validateCache(t),
		"--crossplane-image", crossplaneImage, "--error-on-missing-schemas")
	if want := fmt.Sprintf("Total %d resources: 0 missing schemas, %d success cases, 0 failure cases", len(vs), len(vs)); !bytes.Contains(got, []byte(want)) {
		t.Errorf("crossplane beta validate of the claim variants:\n%s\nwant %q", got, want)
	}
}

// validateClaim runs `crossplane beta validate` of claim against the XRD
// alone and returns its output and its error (non-nil when it refuses the
// claim).
func validateClaim(t *testing.T, cache string, claim map[string]any) (string, error) {
	t.Helper()
	f := writeYAML(t, "claim.yaml", claim)
	var out bytes.Buffer
	cmd := exec.Command(bin(t, "crank"), "beta", "validate", filepath.Join(root, "package", "configuration", "zz_generated_definition.yaml"), f,
		"--cache-dir", cache, "--crossplane-image", crossplaneImage, "--error-on-missing-schemas")
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

// writeYAML writes v as YAML to a file name of a temporary directory and
// returns its path.
func writeYAML(t *testing.T, name string, v any) string {
	t.Helper()
	b, err := yaml.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	f := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(f, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return f
}

// parseMinimalClaim is minimalClaim as an object, and its spec.
func parseMinimalClaim(t *testing.T) (claim, spec map[string]any) {
	t.Helper()
	if err := yaml.Unmarshal([]byte(minimalClaim), &claim); err != nil {
		t.Fatal(err)
	}
	return claim, claim["spec"].(map[string]any)
}

// TestValidateClaimRefusesTrapOnLibipsec proves the XRD carries the
// Gateway's rule across its fields: a claim whose tunnel has startAction
// trap on dataPlane Libipsec (which never initiates: kernel-libipsec raises
// no acquires) is refused, naming the tunnels and what to use instead.
func TestValidateClaimRefusesTrapOnLibipsec(t *testing.T) {
	claim, spec := parseMinimalClaim(t)
	spec["dataPlane"] = "Libipsec"
	spec["tunnels"].([]any)[0].(map[string]any)["startAction"] = "trap"
	out, err := validateClaim(t, validateCache(t), claim)
	want := "a tunnel's startAction trap never initiates with dataPlane Libipsec"
	if err == nil || !strings.Contains(out, "spec.tunnels: Invalid value: ") || !strings.Contains(out, want) {
		t.Errorf("crossplane beta validate of a claim with startAction trap on dataPlane Libipsec: %v\n%s\nwant spec.tunnels refused with %q", err, out, want)
	}
}

// TestValidateClaimListBounds proves the XRD's bounds on the lists the
// function loops over, at the boundary: 32 tenant subnets (the Gateway's
// bound), 64 client subnets (the Port's allowed address pairs and the
// RouterRoutes' routes) and 16 nodeSelector labels (the NodeAddressPairs')
// are admitted, one more is refused naming the field and the bound; and
// spec.nodePorts takes its two values only.
func TestValidateClaimListBounds(t *testing.T) {
	cache := validateCache(t)
	// subnets returns n distinct /24s of the /16 prefix (such as "10.40").
	subnets := func(prefix string, n int) []any {
		out := make([]any, 0, n)
		for i := range n {
			out = append(out, fmt.Sprintf("%s.%d.0/24", prefix, i))
		}
		return out
	}
	cases := map[string]struct {
		reason string
		// tenant tenant subnets in mode nat, or with clients > 0 mode
		// routed with clients client subnets; labels nodeSelector labels.
		tenant, clients, labels int
		// nodePorts is spec.nodePorts, unless empty.
		nodePorts string
		// wantRefused is what the refusal says; empty: admitted.
		wantRefused string
	}{
		"TenantSubnetsAtBound": {
			reason: "32 tenant subnets, the bound, are admitted.",
			tenant: 32,
		},
		"TenantSubnetsBeyondBound": {
			reason:      "33 tenant subnets are refused at spec.tenantSubnets.",
			tenant:      33,
			wantRefused: "spec.tenantSubnets: Too many: 33: must have at most 32 items",
		},
		"ClientSubnetsAtBound": {
			reason:  "64 client subnets in mode routed, the bound, are admitted.",
			clients: 64,
		},
		"ClientSubnetsBeyondBound": {
			reason:      "65 client subnets are refused at spec.routed.clientSubnets.",
			clients:     65,
			wantRefused: "spec.routed.clientSubnets: Too many: 65: must have at most 64 items",
		},
		"NodeSelectorAtBound": {
			reason: "16 nodeSelector labels, the NodeAddressPairs' bound, are admitted.",
			labels: 16,
		},
		"NodeSelectorBeyondBound": {
			reason:      "17 nodeSelector labels are refused at spec.nodeSelector.",
			labels:      17,
			wantRefused: "spec.nodeSelector: Too many: 17: must have at most 16 items",
		},
		"NodePortsUnmanaged": {
			reason:    "nodePorts Unmanaged is admitted.",
			nodePorts: "Unmanaged",
		},
		"NodePortsUnknown": {
			reason:      "A nodePorts value other than AddressPairs and Unmanaged is refused, naming both.",
			nodePorts:   "Ports",
			wantRefused: `spec.nodePorts: Unsupported value: "Ports": supported values: "AddressPairs", "Unmanaged"`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			claim, spec := parseMinimalClaim(t)
			spec["tenantSubnets"] = subnets("10.40", tc.tenant)
			if tc.clients > 0 {
				spec["mode"] = "routed"
				spec["routed"] = map[string]any{"routerId": "00000000-0000-4000-8000-000000000004", "clientSubnets": subnets("172.16", tc.clients)}
			}
			if tc.labels > 0 {
				labels := map[string]any{}
				for i := range tc.labels {
					labels[fmt.Sprintf("example.com/vpn-%d", i)] = ""
				}
				spec["nodeSelector"] = labels
			}
			if tc.nodePorts != "" {
				spec["nodePorts"] = tc.nodePorts
			}
			out, err := validateClaim(t, cache, claim)
			if tc.wantRefused == "" {
				if err != nil {
					t.Errorf("%s\ncrossplane beta validate refused the claim: %v\n%s", tc.reason, err, out)
				}
				return
			}
			if err == nil || !strings.Contains(out, tc.wantRefused) {
				t.Errorf("%s\ncrossplane beta validate: %v\n%s\nwant it refused with %q", tc.reason, err, out, tc.wantRefused)
			}
		})
	}
}

// TestRenderProviderConfigPins renders, with `crossplane render` and the
// platform's pins of testdata/allocated-routed (tenant-b: ProviderConfig
// tenant-b, tenant-a: platform-admin), a first run of a claim of tenant-b:
// naming no ProviderConfig, every composed resource uses tenant-b's; naming
// tenant-a's platform-admin (the attempt) or default, nothing is
// composed: the render fails with the function's fatal result, naming the
// field, the namespace's ProviderConfig and the fix.
func TestRenderProviderConfigPins(t *testing.T) {
	functions := startFunction(t)
	composition := filepath.Join(root, "package", "configuration", "composition.yaml")
	pins := filepath.Join("testdata", "allocated-routed", "required.yaml")
	// claim is a new composite of a claim of tenant-b, with
	// spec.providerConfigName pc unless empty.
	claim := func(pc string) string {
		b, err := os.ReadFile(filepath.Join("testdata", "allocated-routed", "xr.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		xr := map[string]any{}
		if err := yaml.Unmarshal(b, &xr); err != nil {
			t.Fatal(err)
		}
		delete(xr, "status")
		spec := xr["spec"].(map[string]any)
		delete(spec, "providerConfigName")
		if pc != "" {
			spec["providerConfigName"] = pc
		}
		return writeYAML(t, "xr.yaml", xr)
	}
	cases := map[string]struct {
		reason string
		pc     string
		// wantRefused is what the refusal says; empty: composed.
		wantRefused string
	}{
		"Unset": {
			reason: "A claim of tenant-b naming no ProviderConfig gets tenant-b's pin on every composed resource.",
		},
		"OtherNamespacesPin": {
			reason: "A claim of tenant-b naming the ProviderConfig the platform pins tenant-a to is refused: nothing is composed.",
			pc:     "platform-admin",
			wantRefused: `pipeline step "compose" returned a fatal result: cannot use the ProviderConfig: spec.providerConfigName "platform-admin" is not "tenant-b", ` +
				`the ProviderConfig of namespace tenant-b`,
		},
		"Default": {
			reason: "Nor may it name default, which the pinned namespace does not use.",
			pc:     "default",
			wantRefused: `cannot use the ProviderConfig: spec.providerConfigName "default" is not "tenant-b", the ProviderConfig of namespace tenant-b ` +
				`(the platform pins it with an EnvironmentConfig labelled ipsecgw.io/claim-namespace=tenant-b, else it is "default"): remove spec.providerConfigName from the claim`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			cmd := exec.Command(bin(t, "crank"), "render", claim(tc.pc), composition, functions, "--required-resources", pins)
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			if tc.wantRefused != "" {
				if err == nil || !strings.Contains(stderr.String(), tc.wantRefused) {
					t.Errorf("%s\ncrossplane render: %v\nstderr:\n%s\nwant it refused with %q", tc.reason, err, stderr.String(), tc.wantRefused)
				}
				if strings.Contains(stdout.String(), "providerConfigRef") {
					t.Errorf("%s\ncrossplane render composed resources:\n%s", tc.reason, stdout.String())
				}
				return
			}
			if err != nil {
				t.Fatalf("%s\ncrossplane render: %v\n%s", tc.reason, err, stderr.String())
			}
			pcs := map[string]int{}
			r := utilyaml.NewYAMLReader(bufio.NewReader(&stdout))
			for {
				doc, err := r.Read()
				if errors.Is(err, io.EOF) {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
				o := map[string]any{}
				if err := yaml.Unmarshal(doc, &o); err != nil {
					t.Fatal(err)
				}
				if o["kind"] == "XIPsecGateway" || len(o) == 0 {
					continue
				}
				ref, _ := o["spec"].(map[string]any)["providerConfigRef"].(map[string]any)
				pcs[fmt.Sprintf("%v", ref["name"])]++
			}
			// Security group, port, binding, router routes, node pairs.
			if diff := cmp.Diff(map[string]int{"tenant-b": 5}, pcs); diff != "" {
				t.Errorf("%s\nProviderConfigs of the composed resources: -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

// TestValidateClaimTenantSubnetsOverlap proves the XRD refuses tenant
// subnets of which one contains another, in either order, naming the field,
// and admits disjoint ones (a claim without tenantSubnets is among
// TestValidateClaimVariants').
func TestValidateClaimTenantSubnetsOverlap(t *testing.T) {
	cache := validateCache(t)
	const refused = "spec.tenantSubnets: Invalid value: tenant subnets must not overlap (such as 10.20.0.0/24 inside 10.20.0.0/16): list the wider one only"
	cases := map[string]struct {
		reason  string
		subnets []any
		// wantRefused: refused with the message refused.
		wantRefused bool
	}{
		"Contained": {
			reason:      "The issue's pair, a /24 inside a /16, is refused.",
			subnets:     []any{"10.20.0.0/24", "10.20.0.0/16"},
			wantRefused: true,
		},
		"ContainedOtherOrder": {
			reason:      "So is the /16 before the /24, and a contained subnet that does not start the wider one.",
			subnets:     []any{"10.96.0.0/12", "10.20.0.0/16", "10.20.7.0/24"},
			wantRefused: true,
		},
		"Adjacent": {
			reason:  "Adjacent and disjoint subnets are admitted.",
			subnets: []any{"10.20.0.0/24", "10.20.1.0/24", "10.96.0.0/12"},
		},
		"One": {
			reason:  "A single subnet overlaps nothing.",
			subnets: []any{"10.20.0.0/16"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			claim, spec := parseMinimalClaim(t)
			spec["tenantSubnets"] = tc.subnets
			out, err := validateClaim(t, cache, claim)
			if !tc.wantRefused {
				if err != nil {
					t.Errorf("%s\ncrossplane beta validate refused the claim: %v\n%s", tc.reason, err, out)
				}
				return
			}
			if err == nil || !strings.Contains(out, refused) {
				t.Errorf("%s\ncrossplane beta validate: %v\n%s\nwant it refused with %q", tc.reason, err, out, refused)
			}
		})
	}
}

// TestValidateClaimHideNAT proves the XRD carries the Gateway's hideNAT
// rules, the tunnel's and those across the spec's fields: a claim whose
// tunnel presents an address of its local subnet for listed tenant subnets
// is admitted; one presenting an address outside it, or translating a
// tenant subnet the claim does not list, is refused naming the field.
func TestValidateClaimHideNAT(t *testing.T) {
	cache := validateCache(t)
	cases := map[string]struct {
		reason   string
		tenant   []any
		address  string
		want     string
		wantPath string
	}{
		"Admitted": {
			reason:  "An address of the local subnet for a listed tenant subnet is admitted.",
			tenant:  []any{"10.20.0.0/24"},
			address: "100.64.0.20",
		},
		"OutsideLocal": {
			reason:   "An address outside the tunnel's local subnets is refused at the tunnel's hideNAT.",
			tenant:   []any{"10.20.0.0/24"},
			address:  "100.65.0.20",
			wantPath: "spec.tunnels[0].hideNAT: Invalid value: ",
			want:     "lies in no local subnet of the tunnel's traffic selectors",
		},
		"TenantNotListed": {
			reason:   "A claim without tenantSubnets lists no tenant subnet to translate: refused at spec.tunnels.",
			address:  "100.64.0.20",
			wantPath: "spec.tunnels: Invalid value: ",
			want:     "a tunnel's hideNAT tenantSubnets entry lies in no tenantSubnets entry of the gateway",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			claim, spec := parseMinimalClaim(t)
			if tc.tenant != nil {
				spec["tenantSubnets"] = tc.tenant
			}
			spec["tunnels"].([]any)[0].(map[string]any)["hideNAT"] = []any{map[string]any{
				"name": "apps", "tenantSubnets": []any{"10.20.0.0/24"}, "remoteSubnets": []any{"192.168.10.0/24"}, "presentedAddress": tc.address,
			}}
			out, err := validateClaim(t, cache, claim)
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("%s\ncrossplane beta validate refused the claim: %v\n%s", tc.reason, err, out)
			case tc.want != "" && (err == nil || !strings.Contains(out, tc.wantPath) || !strings.Contains(out, tc.want)):
				t.Errorf("%s\ncrossplane beta validate: %v\n%s\nwant %s refused with %q", tc.reason, err, out, tc.wantPath, tc.want)
			}
		})
	}
}
