// Package variants derives test objects from a CRD's (or an XRD's) OpenAPI
// schema, so that a field added to an API is covered without a test being
// edited: from a minimal object (only what admission needs), one variant per
// other value of every enum field the minimal object sets, and from each of
// those one variant per optional boolean of the schema set to false, its
// zero value. A false that the provider's Go types drop on update (a bool
// with omitempty) must be as acceptable to admission as the field left out:
// every CEL rule reads an optional field only behind has().
package variants

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"

	extv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// A Variant is a derived object and what sets it apart from the minimal one.
type Variant struct {
	// Name says how it differs, such as "minimal",
	// "spec.forProvider.tunnels[*].ikeVersion=1" or
	// "spec.forProvider.tunnels[*].ikeVersion=1 spec.forProvider.tunnels[*].mobike=false".
	Name string
	// Object is the whole object (apiVersion, kind, metadata, spec).
	Object map[string]any
}

// Of returns the variants of minimal, a whole object of the kind whose
// root schema is root, varied under its top-level field under (such as
// "spec"): minimal itself, one base per other value of each enum field
// minimal sets (one field at a time), and for each base one variant per
// optional boolean under under set to false in every object of minimal
// that can hold it. An optional boolean whose object minimal does not have
// (such as a reference's selector: adding one would change what the object
// means, not only spell out a zero value) is returned in absent, by path,
// for the caller to report.
func Of(root *extv1.JSONSchemaProps, minimal map[string]any, under string) (vs []Variant, absent []string, err error) {
	s, ok := root.Properties[under]
	if !ok {
		return nil, nil, fmt.Errorf("the schema has no %q", under)
	}
	top, _ := minimal[under].(map[string]any)
	if top == nil {
		return nil, nil, fmt.Errorf("the minimal object has no %q", under)
	}
	bases := []Variant{{Name: "minimal", Object: runtime.DeepCopyJSON(minimal)}}
	for _, e := range enums(&s, top) {
		for _, v := range e.values {
			if equalJSON(v, e.current) {
				continue
			}
			o := runtime.DeepCopyJSON(minimal)
			if _, err := set(o[under].(map[string]any), &s, e.path, v); err != nil {
				return nil, nil, err
			}
			bases = append(bases, Variant{Name: fmt.Sprintf("%s.%s=%s", under, Path(e.path), jsonString(v)), Object: o})
		}
	}
	bools := Booleans(&s)
	out := slices.Clone(bases)
	skipped := map[string]bool{}
	for _, b := range bases {
		for _, p := range bools {
			o := runtime.DeepCopyJSON(b.Object)
			name := fmt.Sprintf("%s.%s", under, Path(p))
			n, err := set(o[under].(map[string]any), &s, p, false)
			if err != nil {
				return nil, nil, fmt.Errorf("optional boolean %s: %w", name, err)
			}
			if n == 0 {
				skipped[name] = true
				continue
			}
			name += "=false"
			if b.Name != "minimal" {
				name = b.Name + " " + name
			}
			out = append(out, Variant{Name: name, Object: o})
		}
	}
	for k := range skipped {
		absent = append(absent, k)
	}
	sort.Strings(absent)
	return out, absent, nil
}

// Booleans returns the path (property names, "*" for the items of a list)
// of every optional boolean under s: a boolean property its object does not
// list as required. Paths are sorted.
func Booleans(s *extv1.JSONSchemaProps) [][]string {
	var out [][]string
	var walk func(s *extv1.JSONSchemaProps, path []string)
	walk = func(s *extv1.JSONSchemaProps, path []string) {
		if s.Items != nil && s.Items.Schema != nil {
			walk(s.Items.Schema, append(slices.Clone(path), "*"))
		}
		for name, p := range s.Properties {
			p := p
			if p.Type == "boolean" && !slices.Contains(s.Required, name) {
				out = append(out, append(slices.Clone(path), name))
				continue
			}
			walk(&p, append(slices.Clone(path), name))
		}
	}
	walk(s, nil)
	sort.Slice(out, func(i, j int) bool { return Path(out[i]) < Path(out[j]) })
	return out
}

// Path formats a path as "a.b[*].c".
func Path(p []string) string {
	return strings.ReplaceAll(strings.Join(p, "."), ".*", "[*]")
}

// Optional returns the path of every field that v, an object of schema s,
// sets although s does not require it (elements of a list as "*"),
// sorted: what a minimal object sets beyond the required fields.
func Optional(s *extv1.JSONSchemaProps, v any) []string {
	seen := map[string]bool{}
	var walk func(s *extv1.JSONSchemaProps, v any, path []string)
	walk = func(s *extv1.JSONSchemaProps, v any, path []string) {
		switch v := v.(type) {
		case map[string]any:
			for k, c := range v {
				p, ok := s.Properties[k]
				if !ok {
					continue
				}
				cp := append(slices.Clone(path), k)
				if !slices.Contains(s.Required, k) {
					seen[Path(cp)] = true
				}
				walk(&p, c, cp)
			}
		case []any:
			if s.Items != nil && s.Items.Schema != nil {
				for _, e := range v {
					walk(s.Items.Schema, e, append(slices.Clone(path), "*"))
				}
			}
		}
	}
	walk(s, v, nil)
	out := make([]string, 0, len(seen))
	for k := range seen {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

type enumField struct {
	path    []string
	current any
	values  []any
}

// enums returns each field that v, an object of schema s, sets and whose
// schema lists enum values; a field inside a list stands for every element
// (path "*").
func enums(s *extv1.JSONSchemaProps, v any) []enumField {
	var out []enumField
	seen := map[string]bool{}
	var walk func(s *extv1.JSONSchemaProps, v any, path []string)
	walk = func(s *extv1.JSONSchemaProps, v any, path []string) {
		if len(s.Enum) > 0 && len(path) > 0 {
			if k := Path(path); !seen[k] {
				seen[k] = true
				e := enumField{path: slices.Clone(path), current: v}
				for _, raw := range s.Enum {
					var ev any
					if err := json.Unmarshal(raw.Raw, &ev); err == nil {
						e.values = append(e.values, ev)
					}
				}
				out = append(out, e)
			}
			return
		}
		switch v := v.(type) {
		case map[string]any:
			keys := make([]string, 0, len(v))
			for k := range v {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				if p, ok := s.Properties[k]; ok {
					walk(&p, v[k], append(slices.Clone(path), k))
				}
			}
		case []any:
			if s.Items != nil && s.Items.Schema != nil {
				for _, e := range v {
					walk(s.Items.Schema, e, append(slices.Clone(path), "*"))
				}
			}
		}
	}
	walk(s, v, nil)
	return out
}

// set sets the field at path of obj (of schema s) to v, in every element
// of the lists the path crosses, and returns how many it set: none when an
// object or list on the way is absent.
func set(obj map[string]any, s *extv1.JSONSchemaProps, path []string, v any) (int, error) {
	name := path[0]
	p, ok := s.Properties[name]
	if !ok {
		return 0, fmt.Errorf("the schema has no %q", name)
	}
	if len(path) == 1 {
		obj[name] = v
		return 1, nil
	}
	if path[1] == "*" {
		if p.Items == nil || p.Items.Schema == nil || len(path) == 2 {
			return 0, fmt.Errorf("%q is not a list of objects", name)
		}
		n := 0
		for _, e := range asList(obj[name]) {
			m, ok := e.(map[string]any)
			if !ok {
				return 0, fmt.Errorf("an element of %q is not an object", name)
			}
			c, err := set(m, p.Items.Schema, path[2:], v)
			if err != nil {
				return 0, err
			}
			n += c
		}
		return n, nil
	}
	child, _ := obj[name].(map[string]any)
	if child == nil {
		return 0, nil
	}
	return set(child, &p, path[1:], v)
}

func asList(v any) []any {
	l, _ := v.([]any)
	return l
}

func equalJSON(a, b any) bool { return jsonString(a) == jsonString(b) }

func jsonString(v any) string {
	b, _ := json.Marshal(v) //nolint:errchkjson // v is decoded JSON, which encodes again
	return string(b)
}
