//go:build integration

package integration

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	extv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"
)

// xrdCRDs returns the CRDs Crossplane makes of the XRD in
// package/configuration/f: the composite's and, for the legacy XRD, the
// claim's, each with every version of the XRD's schema.
func xrdCRDs(t *testing.T, f string) []*extv1.CustomResourceDefinition {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot, "package", "configuration", f))
	if err != nil {
		t.Fatal(err)
	}
	var xrd struct {
		Spec struct {
			Group      string                               `json:"group"`
			Scope      string                               `json:"scope"`
			Names      extv1.CustomResourceDefinitionNames  `json:"names"`
			ClaimNames *extv1.CustomResourceDefinitionNames `json:"claimNames"`
			Versions   []struct {
				Name   string `json:"name"`
				Schema struct {
					OpenAPIV3Schema extv1.JSONSchemaProps `json:"openAPIV3Schema"`
				} `json:"schema"`
			} `json:"versions"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(b, &xrd); err != nil {
		t.Fatal(err)
	}
	crd := func(names extv1.CustomResourceDefinitionNames, scope extv1.ResourceScope) *extv1.CustomResourceDefinition {
		c := &extv1.CustomResourceDefinition{
			ObjectMeta: metav1.ObjectMeta{Name: names.Plural + "." + xrd.Spec.Group},
			Spec:       extv1.CustomResourceDefinitionSpec{Group: xrd.Spec.Group, Names: names, Scope: scope},
		}
		for i, v := range xrd.Spec.Versions {
			s := v.Schema.OpenAPIV3Schema
			c.Spec.Versions = append(c.Spec.Versions, extv1.CustomResourceDefinitionVersion{
				Name: v.Name, Served: true, Storage: i == 0, Schema: &extv1.CustomResourceValidation{OpenAPIV3Schema: &s},
			})
		}
		return c
	}
	scope := extv1.ClusterScoped
	if xrd.Spec.Scope == "Namespaced" {
		scope = extv1.NamespaceScoped
	}
	crds := []*extv1.CustomResourceDefinition{crd(xrd.Spec.Names, scope)}
	if xrd.Spec.ClaimNames != nil {
		crds = append(crds, crd(*xrd.Spec.ClaimNames, extv1.NamespaceScoped))
	}
	return crds
}

// TestXRDSchemasFitTheCELBudget offers the schema of every version of the
// Configuration's XRDs to the real API server as the CRDs Crossplane makes
// of them (the composite's and, for the legacy XRD, the claim's; dry run):
// the API server estimates the cost of every CEL rule, those the XRDs take
// from the Gateway CRD (hack/xrdgen) included, and refuses a CRD over its
// budget, which Crossplane would then fail to establish.
func TestXRDSchemasFitTheCELBudget(t *testing.T) {
	for _, f := range []string{"zz_generated_definition.yaml", "zz_generated_definition_namespaced.yaml"} {
		t.Run(f, func(t *testing.T) {
			for _, c := range xrdCRDs(t, f) {
				if err := kube.Create(context.Background(), c, client.DryRunAll); err != nil {
					t.Errorf("the API server refuses the CRD of %s %s: %v", f, c.Name, err)
				}
			}
		})
	}
}

// onlyCause fails t unless err is the API server's refusal with exactly one
// cause, at field, whose message holds msg, and no CEL runtime error: a
// malformed CIDR must show its field's own message alone, not first a parse
// error of a rule across fields that names that rule's message (issue 29).
func onlyCause(t *testing.T, err error, reason, field, msg string) {
	t.Helper()
	var status kerrors.APIStatus
	if !errors.As(err, &status) {
		t.Errorf("\n%s\nadmitted or not refused by the API server (%v), want refused at %s with %q", reason, err, field, msg)
		return
	}
	var causes []string
	if d := status.Status().Details; d != nil {
		for _, c := range d.Causes {
			causes = append(causes, c.Field+": "+c.Message)
		}
	}
	if len(causes) != 1 || !strings.HasPrefix(causes[0], field+": ") || !strings.Contains(causes[0], msg) || strings.Contains(err.Error(), "evaluating rule") {
		t.Errorf("\n%s\nrefused with %d causes:\n%s\nwant one, at %s with %q, and no rule's runtime error", reason, len(causes), strings.Join(causes, "\n"), field, msg)
	}
}

// installXRDCRD installs crd, one of xrdCRDs, waits until it is established
// and served, and deletes it when t ends.
func installXRDCRD(t *testing.T, crd *extv1.CustomResourceDefinition) {
	t.Helper()
	ctx := context.Background()
	if err := kube.Create(ctx, crd); err != nil {
		t.Fatalf("install the CRD %s: %v", crd.Name, err)
	}
	t.Cleanup(func() {
		if err := kube.Delete(context.Background(), crd); err != nil {
			t.Errorf("delete the CRD %s: %v", crd.Name, err)
		}
	})
	eventually(t, 30*time.Second, "the CRD "+crd.Name+" is established and served", func() error {
		got := &extv1.CustomResourceDefinition{}
		if err := kube.Get(ctx, client.ObjectKeyFromObject(crd), got); err != nil {
			return err
		}
		if !established(got) {
			return fmt.Errorf("CRD %s not established", crd.Name)
		}
		l := &unstructured.UnstructuredList{}
		l.SetAPIVersion(crd.Spec.Group + "/" + crd.Spec.Versions[0].Name)
		l.SetKind(crd.Spec.Names.Kind + "List")
		return kube.List(ctx, l, client.InNamespace("default"))
	})
}

// TestXRDAdmissionMalformedCIDR installs the namespaced IPsecGateway's CRD
// as Crossplane makes it of the XRD and offers variants of
// examples/xr/pinned-fip.yaml with a malformed CIDR (a /33, words) in each
// field that a rule across fields parses (dry run): each is refused with
// its field's own message alone. Before the rules tested isCIDR first, a
// malformed tenant subnet was refused first with "network address parse
// error … evaluating rule: a tunnel's remote traffic selector overlaps a
// tenantSubnets entry" (issue 29).
func TestXRDAdmissionMalformedCIDR(t *testing.T) {
	ctx := context.Background()
	installXRDCRD(t, xrdCRDs(t, "zz_generated_definition_namespaced.yaml")[0])
	b, err := os.ReadFile(filepath.Join(repoRoot, "examples", "xr", "pinned-fip.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	const cidrMsg = "must be an IPv4 network in CIDR notation with no host bits set"
	tunnel := func(spec map[string]any) map[string]any { return spec["tunnels"].([]any)[0].(map[string]any) }
	routed := func(spec map[string]any) {
		spec["mode"] = "routed"
		delete(spec, "exposures")
		spec["routed"] = map[string]any{"routerId": "00000000-0000-4000-8000-000000000004", "clientSubnets": []any{"172.31.0.0/16"}}
		tn := tunnel(spec)
		tn["mode"] = "route"
		tn["trafficSelectors"] = []any{map[string]any{"local": "0.0.0.0/0", "remote": "0.0.0.0/0"}}
		tn["routes"] = []any{"172.31.0.0/16"}
	}
	cases := map[string]struct {
		reason string
		mod    func(spec map[string]any)
		// field is where the one cause is, "" for admitted.
		field string
		msg   string
	}{
		"Example": {
			reason: "The example as it is is admitted: the variants below are refused for their one change.",
			mod:    func(map[string]any) {},
		},
		"ExampleRouted": {
			reason: "The routed variant the route cases start from is admitted.",
			mod:    routed,
		},
		"TenantSubnetPrefix33": {
			reason: "A /33 tenant subnet: the remote selectors' overlap rule parses every tenant subnet.",
			mod:    func(spec map[string]any) { spec["tenantSubnets"] = []any{"10.20.0.0/33"} },
			field:  "spec.tenantSubnets[0]", msg: cidrMsg,
		},
		"TenantSubnetWords": {
			reason: "A tenant subnet in words.",
			mod:    func(spec map[string]any) { spec["tenantSubnets"] = []any{"ten.twenty/24"} },
			field:  "spec.tenantSubnets[0]", msg: cidrMsg,
		},
		"RemoteSelectorWords": {
			reason: "A remote traffic selector in words: the same rule parses it.",
			mod: func(spec map[string]any) {
				tunnel(spec)["trafficSelectors"].([]any)[0].(map[string]any)["remote"] = "ten.twenty/24"
			},
			field: "spec.tunnels[0].trafficSelectors[0].remote", msg: cidrMsg,
		},
		"LocalSelectorPrefix33": {
			reason: "A /33 local traffic selector: the local/remote overlap and 0.0.0.0/0 rules parse it.",
			mod: func(spec map[string]any) {
				tunnel(spec)["trafficSelectors"].([]any)[0].(map[string]any)["local"] = "100.64.0.0/33"
			},
			field: "spec.tunnels[0].trafficSelectors[0].local", msg: cidrMsg,
		},
		"RouteWords": {
			reason: "A route in words: the routes' tenant-subnet and client-subnet rules parse it.",
			mod: func(spec map[string]any) {
				routed(spec)
				tunnel(spec)["routes"] = []any{"ten.twenty/24"}
			},
			field: "spec.tunnels[0].routes[0]", msg: cidrMsg,
		},
		"ClientSubnetPrefix33": {
			reason: "A /33 client subnet: the routes' rule parses every client subnet, and a malformed one is no reason to call a route uncovered.",
			mod: func(spec map[string]any) {
				routed(spec)
				spec["routed"].(map[string]any)["clientSubnets"] = []any{"172.31.0.0/33"}
			},
			field: "spec.routed.clientSubnets[0]", msg: cidrMsg,
		},
		"HideNATTenantSubnetOfAMalformedOne": {
			reason: "With a malformed tenant subnet, a hideNAT rule's tenant subnet is not called unlisted (the Gateway's rule, carried by the XRD).",
			mod: func(spec map[string]any) {
				spec["tenantSubnets"] = []any{"ten.twenty/24"}
				tunnel(spec)["hideNAT"] = []any{map[string]any{"name": "apps", "tenantSubnets": []any{"10.20.0.0/24"},
					"remoteSubnets": []any{"192.168.10.0/24"}, "presentedAddress": "100.64.0.20"}}
			},
			field: "spec.tenantSubnets[0]", msg: cidrMsg,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			u := &unstructured.Unstructured{}
			if err := yaml.Unmarshal(b, &u.Object); err != nil {
				t.Fatal(err)
			}
			u.SetNamespace("default")
			u.SetName("malformed-" + strings.ToLower(name))
			tc.mod(u.Object["spec"].(map[string]any))
			err := kube.Create(ctx, u, client.DryRunAll)
			if tc.field == "" {
				if err != nil {
					t.Fatalf("\n%s\nrefused: %v", tc.reason, err)
				}
				return
			}
			onlyCause(t, err, tc.reason, tc.field, tc.msg)
		})
	}
}
