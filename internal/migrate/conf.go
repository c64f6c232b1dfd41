// Package migrate imports a VM gateway's IPsec configuration (strongSwan's
// legacy ipsec.conf and ipsec.secrets, libreswan's ipsec.conf, or
// swanctl.conf) into an IPsecGateway, the Secrets it names and a report of
// every setting: converted, approximated or refused.
package migrate

import (
	"bufio"
	"bytes"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strings"
)

// Errors of reading ipsec.conf, wrapped once with the file and line.
const (
	errConfLine    = "%s:%d: want 'conn NAME', 'config setup', 'ca NAME', 'include GLOB' or an indented 'key=value'"
	errConfQuote   = "%s:%d: a value's double quote is not closed"
	errConfInclude = "%s:%d: include %q"
	errConfDepth   = "%s:%d: include nests deeper than 10 files (a loop?)"
	errAlsoMissing = "conn %s: also=%s names no conn of the file"
	errAlsoLoop    = "conn %s: also= loops through conn %s"
)

// A Setting is one key=value of a conn, with where it was written.
type Setting struct {
	Value string
	// From is "file:line" of the line that set it.
	From string
}

// A Conn is one conn section of ipsec.conf with its %default and also=
// sections resolved: Settings maps each keyword to its effective value.
type Conn struct {
	Name     string
	Settings map[string]Setting
}

// Get returns the effective value of key, or def when it is not set (or
// set empty, which ipsec.conf reads as "back to the default").
func (c Conn) Get(key, def string) string {
	if s, ok := c.Settings[key]; ok && s.Value != "" {
		return s.Value
	}
	return def
}

// Has says whether key is set to a non-empty value.
func (c Conn) Has(key string) bool {
	_, ok := c.Settings[key]
	return ok && c.Settings[key].Value != ""
}

// An IPsecConf is a parsed ipsec.conf: its config setup and its conns in
// file order, %default and also= resolved.
type IPsecConf struct {
	Setup map[string]Setting
	Conns []Conn
}

// section is one section as written, before %default and also= apply.
type section struct {
	kind, name string
	keys       []string // in order, also= repeated
	values     []Setting
}

// ReadIPsecConf reads name from fsys as starter (strongSwan) and
// libreswan's readers do: sections start in column 0 ("config setup",
// "conn NAME", "ca NAME"), their settings are indented "key=value" lines
// (a value in double quotes may hold spaces and '#'), '#' starts a comment,
// "include GLOB" reads the matching files (relative to the including file)
// in sorted order. A conn's settings are its own, over those of its also=
// conns (in order, each resolved the same way), over those of conn
// %default.
func ReadIPsecConf(fsys fs.FS, name string) (*IPsecConf, error) {
	var secs []*section
	if err := readConfFile(fsys, name, 0, &secs); err != nil {
		return nil, err
	}
	byName := map[string]*section{}
	out := &IPsecConf{Setup: map[string]Setting{}}
	var def *section
	for _, s := range secs {
		switch {
		case s.kind == "config":
			for i, k := range s.keys {
				out.Setup[k] = s.values[i]
			}
		case s.kind == kwConn && s.name == "%default":
			if def == nil {
				def = &section{kind: kwConn, name: "%default"}
			}
			def.keys = append(def.keys, s.keys...)
			def.values = append(def.values, s.values...)
		case s.kind == kwConn:
			byName[s.name] = s
		}
	}
	for _, s := range secs {
		if s.kind != "conn" || s.name == "%default" {
			continue
		}
		settings := map[string]Setting{}
		if def != nil {
			if err := resolve(def, byName, settings, nil); err != nil {
				return nil, err
			}
		}
		if err := resolve(s, byName, settings, nil); err != nil {
			return nil, err
		}
		out.Conns = append(out.Conns, Conn{Name: s.name, Settings: settings})
	}
	return out, nil
}

// resolve applies s's also= conns, then s's own settings, into settings.
func resolve(s *section, byName map[string]*section, settings map[string]Setting, seen []string) error {
	for _, n := range seen {
		if n == s.name {
			return fmt.Errorf(errAlsoLoop, seen[0], s.name)
		}
	}
	seen = append(seen, s.name)
	for i, k := range s.keys {
		if k != "also" {
			continue
		}
		for _, a := range strings.Fields(s.values[i].Value) {
			t, ok := byName[a]
			if !ok {
				return fmt.Errorf(errAlsoMissing, seen[0], a)
			}
			if err := resolve(t, byName, settings, seen); err != nil {
				return err
			}
		}
	}
	for i, k := range s.keys {
		if k != "also" {
			settings[k] = s.values[i]
		}
	}
	return nil
}

func readConfFile(fsys fs.FS, name string, depth int, secs *[]*section) error {
	data, err := fs.ReadFile(fsys, name)
	if err != nil {
		return err
	}
	var cur *section
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		raw := sc.Text()
		line, ok := stripConfComment(raw)
		if !ok {
			return fmt.Errorf(errConfQuote, name, n)
		}
		if strings.TrimSpace(line) == "" {
			continue
		}
		if line[0] != ' ' && line[0] != '\t' {
			if cur, err = topLevel(fsys, name, n, line, depth, secs); err != nil {
				return err
			}
			continue
		}
		key, value, ok := strings.Cut(strings.TrimSpace(line), "=")
		if !ok || cur == nil {
			return fmt.Errorf(errConfLine, name, n)
		}
		value = strings.TrimSpace(value)
		if len(value) >= 2 && value[0] == '"' && value[len(value)-1] == '"' {
			value = value[1 : len(value)-1]
		}
		cur.keys = append(cur.keys, strings.TrimSpace(key))
		cur.values = append(cur.values, Setting{Value: value, From: fmt.Sprintf("%s:%d", name, n)})
	}
	return sc.Err()
}

// topLevel reads a line in column 0: a section's start (returned, nil for
// none) or an include, whose files it reads.
func topLevel(fsys fs.FS, name string, n int, line string, depth int, secs *[]*section) (*section, error) {
	f := strings.Fields(line)
	switch {
	case f[0] == "version" && len(f) == 2: // libreswan's "version 2"
		return nil, nil
	case f[0] == "include" && len(f) == 2:
		if depth >= 10 {
			return nil, fmt.Errorf(errConfDepth, name, n)
		}
		matches, err := fs.Glob(fsys, path.Join(path.Dir(name), strings.TrimPrefix(f[1], "/")))
		if err != nil {
			return nil, fmt.Errorf(errConfInclude+": %w", name, n, f[1], err)
		}
		sort.Strings(matches)
		for _, m := range matches {
			if err := readConfFile(fsys, m, depth+1, secs); err != nil {
				return nil, err
			}
		}
		return nil, nil
	case (f[0] == kwConn || f[0] == "ca") && len(f) == 2, f[0] == "config" && len(f) == 2 && f[1] == "setup":
		cur := &section{kind: f[0], name: f[1]}
		*secs = append(*secs, cur)
		return cur, nil
	}
	return nil, fmt.Errorf(errConfLine, name, n)
}

// stripConfComment cuts line at the first '#' outside double quotes; false
// when a quote is not closed.
func stripConfComment(line string) (string, bool) {
	quoted := false
	for i, r := range line {
		switch {
		case r == '"':
			quoted = !quoted
		case r == '#' && !quoted:
			return strings.TrimRight(line[:i], " \t"), true
		}
	}
	return strings.TrimRight(line, " \t"), !quoted
}
