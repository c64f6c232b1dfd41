package variants

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	extv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

// schema is a Gateway-like kind: a required list of objects with an enum
// and two optional booleans, an optional object with one, and an optional
// object with a required field holding one.
const schema = `
type: object
properties:
  spec:
    type: object
    required: [tunnels]
    properties:
      active: {type: boolean}
      tunnels:
        type: array
        items:
          type: object
          required: [ikeVersion, pinned]
          properties:
            ikeVersion: {type: integer, enum: [1, 2]}
            mobike: {type: boolean}
            pinned: {type: boolean}
      images:
        type: object
        properties:
          pull: {type: boolean}
`

func root(t *testing.T, extra string) *extv1.JSONSchemaProps {
	t.Helper()
	s := &extv1.JSONSchemaProps{}
	if err := yaml.Unmarshal([]byte(schema+extra), s); err != nil {
		t.Fatal(err)
	}
	return s
}

func obj(t *testing.T, doc string) map[string]any {
	t.Helper()
	m := map[string]any{}
	if err := yaml.Unmarshal([]byte(doc), &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func TestOf(t *testing.T) {
	unreachable := `
      network:
        type: object
        required: [id]
        properties:
          id: {type: string}
          shared: {type: boolean}
`
	cases := map[string]struct {
		reason  string
		extra   string
		minimal string
		want    map[string]string
		absent  []string
		wantErr bool
	}{
		"EnumsAndBooleans": {
			reason:  "Each other enum value the minimal object sets makes a base; every optional boolean is set false on each base, in every list element; a required boolean is left alone; one whose object is absent is reported, not added.",
			minimal: `{spec: {tunnels: [{ikeVersion: 2, pinned: true}]}}`,
			want: map[string]string{
				"minimal":                                                   `{spec: {tunnels: [{ikeVersion: 2, pinned: true}]}}`,
				"spec.tunnels[*].ikeVersion=1":                              `{spec: {tunnels: [{ikeVersion: 1, pinned: true}]}}`,
				"spec.active=false":                                         `{spec: {active: false, tunnels: [{ikeVersion: 2, pinned: true}]}}`,
				"spec.tunnels[*].mobike=false":                              `{spec: {tunnels: [{ikeVersion: 2, pinned: true, mobike: false}]}}`,
				"spec.tunnels[*].ikeVersion=1 spec.active=false":            `{spec: {active: false, tunnels: [{ikeVersion: 1, pinned: true}]}}`,
				"spec.tunnels[*].ikeVersion=1 spec.tunnels[*].mobike=false": `{spec: {tunnels: [{ikeVersion: 1, pinned: true, mobike: false}]}}`,
			},
			absent: []string{"spec.images.pull"},
		},
		"PresentObject": {
			reason:  "An optional boolean in an object the minimal object has is set false there.",
			minimal: `{spec: {images: {}, tunnels: [{ikeVersion: 1, pinned: true}]}}`,
			want: map[string]string{
				"minimal":                                                   `{spec: {images: {}, tunnels: [{ikeVersion: 1, pinned: true}]}}`,
				"spec.tunnels[*].ikeVersion=2":                              `{spec: {images: {}, tunnels: [{ikeVersion: 2, pinned: true}]}}`,
				"spec.active=false":                                         `{spec: {active: false, images: {}, tunnels: [{ikeVersion: 1, pinned: true}]}}`,
				"spec.images.pull=false":                                    `{spec: {images: {pull: false}, tunnels: [{ikeVersion: 1, pinned: true}]}}`,
				"spec.tunnels[*].mobike=false":                              `{spec: {images: {}, tunnels: [{ikeVersion: 1, pinned: true, mobike: false}]}}`,
				"spec.tunnels[*].ikeVersion=2 spec.active=false":            `{spec: {active: false, images: {}, tunnels: [{ikeVersion: 2, pinned: true}]}}`,
				"spec.tunnels[*].ikeVersion=2 spec.images.pull=false":       `{spec: {images: {pull: false}, tunnels: [{ikeVersion: 2, pinned: true}]}}`,
				"spec.tunnels[*].ikeVersion=2 spec.tunnels[*].mobike=false": `{spec: {images: {}, tunnels: [{ikeVersion: 2, pinned: true, mobike: false}]}}`,
			},
		},
		"EmptyList": {
			reason:  "An optional boolean in the items of a list the minimal object leaves empty is reported as absent.",
			extra:   unreachable,
			minimal: `{spec: {tunnels: []}}`,
			want: map[string]string{
				"minimal":           `{spec: {tunnels: []}}`,
				"spec.active=false": `{spec: {active: false, tunnels: []}}`,
			},
			absent: []string{"spec.images.pull", "spec.network.shared", "spec.tunnels[*].mobike"},
		},
		"NotInSchema": {
			reason:  "A minimal object whose top field the schema lacks is an error.",
			minimal: `{status: {}}`,
			wantErr: true,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, absent, err := Of(root(t, tc.extra), obj(t, tc.minimal), "spec")
			if (err != nil) != tc.wantErr {
				t.Fatalf("\n%s\nOf(...): error %v, want error %v", tc.reason, err, tc.wantErr)
			}
			if tc.wantErr {
				return
			}
			gotM := map[string]map[string]any{}
			for _, v := range got {
				gotM[v.Name] = v.Object
			}
			wantM := map[string]map[string]any{}
			for k, v := range tc.want {
				wantM[k] = obj(t, v)
			}
			if diff := cmp.Diff(wantM, gotM); diff != "" {
				t.Errorf("\n%s\nOf(...): -want, +got:\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(tc.absent, absent); diff != "" {
				t.Errorf("\n%s\nOf(...) absent: -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestOptional(t *testing.T) {
	spec := root(t, "").Properties["spec"]
	got := Optional(&spec, obj(t, `{active: true, tunnels: [{ikeVersion: 2, pinned: true, mobike: true}], images: {}}`))
	want := []string{"active", "images", "tunnels[*].mobike"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Optional(...): the fields set beyond the required ones: -want, +got:\n%s", diff)
	}
}
