// Package swanctl models swanctl.conf documents: sections holding settings
// and subsections, in strongSwan's settings syntax
// (https://docs.strongswan.org/docs/5.9/config/strongswanConf.html and
// https://docs.strongswan.org/docs/5.9/swanctl/swanctlConf.html).
//
// Format writes only what cannot be misread: names and values are checked
// against a conservative character set, so no tenant string can open a
// section, start a comment or continue onto another line. Parse reads the
// subset of the syntax that Format writes plus comments, blank lines and
// quoted values, which is what hand-written configurations use.
package swanctl

import (
	"bytes"
	"fmt"
	"regexp"
	"strings"
)

// A Section is a named section: its settings and subsections, each kept in
// the order they were added. The document itself is a Section with an
// empty name.
type Section struct {
	Name     string
	Settings []Setting
	Sections []*Section
}

// A Setting is one "key = value" line.
type Setting struct {
	Key   string
	Value string
}

// Set appends the setting key = value and returns s.
func (s *Section) Set(key, value string) *Section {
	s.Settings = append(s.Settings, Setting{Key: key, Value: value})
	return s
}

// Section appends a new, empty subsection named name and returns it.
func (s *Section) Section(name string) *Section {
	sub := &Section{Name: name}
	s.Sections = append(s.Sections, sub)
	return sub
}

// Lookup returns the subsection at the dot-separated path below s, or nil.
func (s *Section) Lookup(path string) *Section {
	cur := s
	for name := range strings.SplitSeq(path, ".") {
		var next *Section
		for _, sub := range cur.Sections {
			if sub.Name == name {
				next = sub
				break
			}
		}
		if next == nil {
			return nil
		}
		cur = next
	}
	return cur
}

// Get returns the value of key in s and whether it is set.
func (s *Section) Get(key string) (string, bool) {
	for _, kv := range s.Settings {
		if kv.Key == key {
			return kv.Value, true
		}
	}
	return "", false
}

var (
	// validName is what section names and keys may hold.
	validName = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)
	// validValue is what values may hold: no braces, quotes, '#', '=' or
	// line breaks, and no surrounding space.
	validValue = regexp.MustCompile(`^[A-Za-z0-9._:/,@%+*-]+( [A-Za-z0-9._:/,@%+*-]+)*$`)
	// binaryID is an identity given by its encoding in hex, such as a DN
	// as asn1dn:#<DER>: its '#' would start a comment, so it is written
	// in double quotes.
	binaryID = regexp.MustCompile(`^[a-z0-9]+:#[0-9a-f]+$`)
)

// Format writes s as swanctl.conf text, indenting subsections by two spaces.
// The document's root (empty name) writes only its contents. It returns an
// error naming the path of any name or value outside the safe character set
// and writes nothing then.
func (s *Section) Format() ([]byte, error) {
	var b bytes.Buffer
	if err := s.format(&b, "", 0); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

func (s *Section) format(b *bytes.Buffer, path string, depth int) error {
	indent := strings.Repeat("  ", depth)
	inner := depth
	if s.Name != "" {
		if !validName.MatchString(s.Name) {
			return fmt.Errorf("section name %q at %q: only letters, digits, '_' and '-' are allowed", s.Name, path)
		}
		path = join(path, s.Name)
		fmt.Fprintf(b, "%s%s {\n", indent, s.Name)
		inner++
	}
	in := strings.Repeat("  ", inner)
	for _, kv := range s.Settings {
		if !validName.MatchString(kv.Key) {
			return fmt.Errorf("key %q in %q: only letters, digits, '_' and '-' are allowed", kv.Key, path)
		}
		v := kv.Value
		switch {
		case binaryID.MatchString(v):
			v = `"` + v + `"`
		case !validValue.MatchString(v):
			return fmt.Errorf("value of %s.%s: characters outside [A-Za-z0-9._:/,@%%+*-] or surrounding space", path, kv.Key)
		}
		fmt.Fprintf(b, "%s%s = %s\n", in, kv.Key, v)
	}
	for _, sub := range s.Sections {
		if err := sub.format(b, path, inner); err != nil {
			return err
		}
	}
	if s.Name != "" {
		fmt.Fprintf(b, "%s}\n", indent)
	}
	return nil
}

func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}
