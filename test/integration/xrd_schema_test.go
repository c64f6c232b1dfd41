//go:build integration

package integration

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	extv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"
)

// TestXRDSchemasFitTheCELBudget offers the schema of every version of the
// Configuration's XRDs to the real API server as the CRDs Crossplane makes
// of them (the composite's and, for the legacy XRD, the claim's; dry run):
// the API server estimates the cost of every CEL rule, those the XRDs take
// from the Gateway CRD (hack/xrdgen) included, and refuses a CRD over its
// budget, which Crossplane would then fail to establish.
func TestXRDSchemasFitTheCELBudget(t *testing.T) {
	for _, f := range []string{"zz_generated_definition.yaml", "zz_generated_definition_namespaced.yaml"} {
		t.Run(f, func(t *testing.T) {
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
			for _, c := range crds {
				if err := kube.Create(context.Background(), c, client.DryRunAll); err != nil {
					t.Errorf("the API server refuses the CRD of %s %s: %v", f, c.Name, err)
				}
			}
		})
	}
}
