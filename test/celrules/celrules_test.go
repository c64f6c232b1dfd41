package celrules

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	xpv1 "github.com/crossplane/crossplane/apis/v2/apiextensions/v1"
	"github.com/google/go-cmp/cmp"
	extv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

// tunnel is a Tunnel-like schema node with a required ikeVersion, optional
// mobike and a required list of objects with an optional field.
const tunnel = `
type: object
required: [ikeVersion, trafficSelectors]
properties:
  ikeVersion: {type: integer}
  mobike: {type: boolean}
  target: {type: object, required: [port], properties: {port: {type: integer}, address: {type: string}}}
  trafficSelectors:
    type: array
    items: {type: object, required: [local], properties: {local: {type: string}, remote: {type: string}}}
`

func TestUnguarded(t *testing.T) {
	cases := map[string]struct {
		reason string
		rule   string
		want   []string
	}{
		"IssueFourteen": {
			reason: "The rule that refused every IKEv1 tunnel without mobike reads the optional mobike without has().",
			rule:   "self.ikeVersion == 2 || !self.mobike",
			want:   []string{"self.mobike"},
		},
		"Guarded": {
			reason: "The same read behind has() is safe; a required field needs no has().",
			rule:   "self.ikeVersion == 2 || !has(self.mobike) || !self.mobike",
		},
		"Nested": {
			reason: "A read through a present object of an optional field of it needs has() of that field.",
			rule:   "has(self.target) && self.target.port > 0 && self.target.address != ''",
			want:   []string{"self.target.address"},
		},
		"ComprehensionVariable": {
			reason: "A macro's variable stands for the list's items: their optional fields need has() too.",
			rule:   "self.trafficSelectors.all(ts, ts.local != '' && (!has(ts.remote) || ts.remote != ts.local))",
		},
		"ComprehensionUnguarded": {
			reason: "An unguarded read of an item's optional field is found.",
			rule:   "self.trafficSelectors.all(ts, ts.remote != '')",
			want:   []string{"ts.remote"},
		},
		"Transition": {
			reason: "oldSelf is the same schema node as self.",
			rule:   "!has(self.mobike) || self.mobike == oldSelf.mobike",
			want:   []string{"oldSelf.mobike"},
		},
		"UnguardedCIDR": {
			reason: "A rule that parses fields with cidr() without isCIDR() fails at run time on a malformed one, before the field's own message (issue 29).",
			rule:   "self.trafficSelectors.all(ts, !has(ts.remote) || cidr(ts.local).containsIP(cidr(ts.remote).ip()))",
			want:   []string{"cidr(ts.local)", "cidr(ts.remote)"},
		},
		"GuardedCIDR": {
			reason: "isCIDR() of the same field guards cidr(); a member ip() of a parsed CIDR is no parse, and a literal needs no guard.",
			rule:   "self.trafficSelectors.all(ts, !isCIDR(ts.local) || cidr(ts.local).containsIP(cidr(ts.local).ip()) && cidr('10.0.0.0/8').prefixLength() > 0)",
		},
		"UnguardedIP": {
			reason: "ip() needs isIP() of the same field; isCIDR() of another does not count.",
			rule:   "has(self.target) && has(self.target.address) && isCIDR(self.target.address) && ip(self.target.address).family() == 4",
			want:   []string{"ip(self.target.address)"},
		},
		"FunctionArgument": {
			reason: "A read inside a function's argument counts.",
			rule:   "size(self.trafficSelectors) == 1 || duration(self.mobike) > duration('1s')",
			want:   []string{"self.mobike"},
		},
	}
	s := &extv1.JSONSchemaProps{}
	if err := yaml.Unmarshal([]byte(tunnel), s); err != nil {
		t.Fatal(err)
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			n := s.DeepCopy()
			n.XValidations = extv1.ValidationRules{{Rule: tc.rule}}
			got, err := Unguarded(n, "tunnels[*]")
			if err != nil {
				t.Fatal(err)
			}
			var reads []string
			for _, f := range got {
				reads = append(reads, f.Read)
			}
			if diff := cmp.Diff(tc.want, reads); diff != "" {
				t.Errorf("\n%s\nUnguarded(%q): -want, +got:\n%s", tc.reason, tc.rule, diff)
			}
		})
	}
}

// TestProviderRules checks every rule of the provider's CRDs (package/crds)
// and of both IPsecGateway XRDs (package/configuration): none may read an
// optional field without has(), nor parse a CIDR or IP without isCIDR() or
// isIP().
func TestProviderRules(t *testing.T) {
	root := filepath.Join("..", "..", "package")
	files, err := filepath.Glob(filepath.Join(root, "crds", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no CRDs in package/crds: %v", err)
	}
	schemas := map[string]*extv1.JSONSchemaProps{}
	for _, f := range files {
		crd := &extv1.CustomResourceDefinition{}
		read(t, f, crd)
		for _, v := range crd.Spec.Versions {
			schemas[crd.Name+"/"+v.Name] = v.Schema.OpenAPIV3Schema
		}
	}
	for _, f := range []string{"zz_generated_definition.yaml", "zz_generated_definition_namespaced.yaml"} {
		xrd := &xpv1.CompositeResourceDefinition{}
		read(t, filepath.Join(root, "configuration", f), xrd)
		for _, v := range xrd.Spec.Versions {
			s := &extv1.JSONSchemaProps{}
			if err := json.Unmarshal(v.Schema.OpenAPIV3Schema.Raw, s); err != nil {
				t.Fatal(err)
			}
			schemas[xrd.Name+"/"+v.Name] = s
		}
	}
	rules := 0
	for name, s := range schemas {
		found, err := Unguarded(s, "")
		if err != nil {
			t.Errorf("%s: %v", name, err)
		}
		for _, f := range found {
			t.Errorf("%s: %s", name, f)
		}
		rules += count(s)
	}
	if rules < 20 {
		t.Errorf("%d rules in %d schemas, want every rule of the CRDs and the XRD (at least 20)", rules, len(schemas))
	}
	t.Logf("%d rules in %d schemas checked", rules, len(schemas))
}

func read(t *testing.T, path string, into any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, into); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// count returns how many rules s and the nodes under it hold.
func count(s *extv1.JSONSchemaProps) int {
	n := len(s.XValidations)
	for _, p := range s.Properties {
		n += count(&p)
	}
	if s.Items != nil && s.Items.Schema != nil {
		n += count(s.Items.Schema)
	}
	if s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil {
		n += count(s.AdditionalProperties.Schema)
	}
	return n
}
