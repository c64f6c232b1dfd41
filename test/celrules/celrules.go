// Package celrules checks the CEL validation rules of an OpenAPI schema
// (a CRD's or an XRD's) for reads of optional fields that no has() tests:
// such a rule fails with "no such key" when the field is left out, as the
// Tunnel rule `self.ikeVersion == 2 || !self.mobike` did for every IKEv1
// tunnel without mobike (issue 14). The check is syntactic: a read of
// x.f passes when the same rule tests has(x.f) anywhere, so a has() in the
// wrong place still passes; the integration tests' variants of minimal
// objects prove the rules at the API server.
//
// It also finds the string fields that a rule parses with cidr() or ip()
// without an isCIDR() or isIP() of the same field in the rule: such a rule
// fails at run time on a malformed value ("network address parse error
// … evaluating rule: <another rule's message>"), and the API server shows
// that before the field's own message (issue 29: 10.20.0.0/33 in a
// tenantSubnets entry). This check is syntactic too; the admission tests
// of malformed CIDRs prove that only the field's own message appears.
package celrules

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/google/cel-go/common"
	"github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/parser"
	extv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// A Finding is a read of an optional field without has(), or a parse of a
// field without its isCIDR() or isIP().
type Finding struct {
	// Path of the schema node the rule is on, such as
	// "spec.forProvider.tunnels[*]".
	Path string
	// Rule as written.
	Rule string
	// Read is the unguarded read, such as "self.mobike", or parse, such
	// as "cidr(s)".
	Read string
}

// String says where the rule is, the rule and the read.
func (f Finding) String() string {
	if fn, _, ok := strings.Cut(f.Read, "("); ok && parsers[fn] != "" {
		return fmt.Sprintf("%s: rule %q parses %s without %s() of it", f.Path, f.Rule, f.Read, parsers[fn])
	}
	return fmt.Sprintf("%s: rule %q reads %s without has()", f.Path, f.Rule, f.Read)
}

// parsers are the functions of the Kubernetes CEL library that fail on a
// malformed string, each with the function that tells one.
var parsers = map[string]string{"cidr": "isCIDR", "ip": "isIP"}

// checks are the functions that tell a malformed string, each with the
// parser it guards.
var checks = map[string]string{"isCIDR": "cidr", "isIP": "ip"}

// Unguarded returns every read of an optional field (one its object does
// not list as required; a default does not count, since an object the
// rule sees need not have been defaulted) without a has() of it in the same
// rule, and every cidr() or ip() of a field or variable without an isCIDR()
// or isIP() of it in the same rule, in every rule at or under s, whose path
// is at. It returns an error for a rule that does not parse.
func Unguarded(s *extv1.JSONSchemaProps, at string) ([]Finding, error) {
	var out []Finding
	var walk func(s *extv1.JSONSchemaProps, path string) error
	walk = func(s *extv1.JSONSchemaProps, path string) error {
		for _, r := range s.XValidations {
			reads, err := unguarded(s, r.Rule)
			if err != nil {
				return fmt.Errorf("%s: rule %q: %w", path, r.Rule, err)
			}
			for _, rd := range reads {
				out = append(out, Finding{Path: path, Rule: r.Rule, Read: rd})
			}
		}
		names := make([]string, 0, len(s.Properties))
		for n := range s.Properties {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			p := s.Properties[n]
			if err := walk(&p, join(path, n)); err != nil {
				return err
			}
		}
		if s.Items != nil && s.Items.Schema != nil {
			if err := walk(s.Items.Schema, path+"[*]"); err != nil {
				return err
			}
		}
		if s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil {
			return walk(s.AdditionalProperties.Schema, path+"[*]")
		}
		return nil
	}
	return out, walk(s, at)
}

func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

// unguarded returns the unguarded reads of optional fields in rule, a rule
// on schema node s.
func unguarded(s *extv1.JSONSchemaProps, rule string) ([]string, error) {
	p, err := parser.NewParser(parser.Macros(parser.AllMacros...))
	if err != nil {
		return nil, err
	}
	parsed, iss := p.Parse(common.NewTextSource(rule))
	if iss != nil && len(iss.GetErrors()) > 0 {
		return nil, fmt.Errorf("%s", iss.ToDisplayString())
	}
	w := &walker{guards: map[string]bool{}}
	w.walk(parsed.Expr(), map[string]*extv1.JSONSchemaProps{"self": s, "oldSelf": s})
	var out []string
	for _, r := range w.reads {
		if !w.guards[r] && !slices.Contains(out, r) {
			out = append(out, r)
		}
	}
	return out, nil
}

// walker collects the reads of optional fields and the has() tests of a
// rule, each as its path ("self.tunnels", "t.startAction"), and the parses
// and their checks, each as the parse ("cidr(s)").
type walker struct {
	reads  []string
	guards map[string]bool
}

// walk visits e, in which the identifiers of env stand for schema nodes,
// and returns the schema node e is, if it is one.
func (w *walker) walk(e ast.Expr, env map[string]*extv1.JSONSchemaProps) *extv1.JSONSchemaProps { //nolint:gocyclo // one case per CEL expression kind
	switch e.Kind() {
	case ast.IdentKind:
		return env[e.AsIdent()]
	case ast.SelectKind:
		sel := e.AsSelect()
		of := w.walk(sel.Operand(), env)
		if of == nil {
			return nil
		}
		field, ok := of.Properties[sel.FieldName()]
		if !ok {
			return nil
		}
		key := path(sel.Operand()) + "." + sel.FieldName()
		if sel.IsTestOnly() {
			w.guards[key] = true
			return nil
		}
		if !slices.Contains(of.Required, sel.FieldName()) {
			w.reads = append(w.reads, key)
		}
		return &field
	case ast.ComprehensionKind:
		c := e.AsComprehension()
		inner := map[string]*extv1.JSONSchemaProps{}
		for k, v := range env {
			inner[k] = v
		}
		if r := w.walk(c.IterRange(), env); r != nil && r.Items != nil && r.Items.Schema != nil {
			inner[c.IterVar()] = r.Items.Schema
		} else {
			delete(inner, c.IterVar())
		}
		delete(inner, c.AccuVar())
		for _, x := range []ast.Expr{c.AccuInit(), c.LoopCondition(), c.LoopStep(), c.Result()} {
			w.walk(x, inner)
		}
		return nil
	case ast.CallKind:
		call := e.AsCall()
		if args := call.Args(); !call.IsMemberFunction() && len(args) == 1 {
			if p := path(args[0]); p != "" {
				if parsers[call.FunctionName()] != "" {
					w.reads = append(w.reads, call.FunctionName()+"("+p+")")
				}
				if fn := checks[call.FunctionName()]; fn != "" {
					w.guards[fn+"("+p+")"] = true
				}
			}
		}
		if call.IsMemberFunction() {
			w.walk(call.Target(), env)
		}
		for _, a := range call.Args() {
			w.walk(a, env)
		}
		return nil
	case ast.ListKind:
		for _, x := range e.AsList().Elements() {
			w.walk(x, env)
		}
		return nil
	case ast.MapKind:
		for _, x := range e.AsMap().Entries() {
			m := x.AsMapEntry()
			w.walk(m.Key(), env)
			w.walk(m.Value(), env)
		}
		return nil
	default: // literals and structs hold no schema node
		return nil
	}
}

// path is the dotted path of an identifier or a chain of selects on one,
// "" for anything else.
func path(e ast.Expr) string {
	switch e.Kind() {
	case ast.IdentKind:
		return e.AsIdent()
	case ast.SelectKind:
		if p := path(e.AsSelect().Operand()); p != "" {
			return p + "." + e.AsSelect().FieldName()
		}
	default: // a call, a literal, ...: no path
	}
	return ""
}
