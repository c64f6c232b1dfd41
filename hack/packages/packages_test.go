// Package packages checks the project's two lists of Debian packages:
// hack/packages/host.txt, what make dev, make test and .ci/run install on
// the host (hack/apt-install.sh --host), and
// cluster/images/gateway/packages.txt, what the gateway image is made of
// (hack/images.sh and the Dockerfile). The programs the scripts, the
// Makefile and the tests run on the host are found by parsing them; each
// must come from a listed package or from an Essential one. Which package
// provides a program is the table in provides_test.go, itself checked against
// the dpkg database of the machine the test runs on for every package
// installed there. It reads files only: no root, no network, no processes.
package packages

import (
	"bufio"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"mvdan.cc/sh/v3/syntax"
)

// root is the repository, two levels up from this package.
const root = "../.."

// entry is one line of a package list: the package, its purpose (host.txt
// only: the group hack/apt-install.sh --host PURPOSE installs) and what
// needs it.
type entry struct {
	pkg, purpose, why string
}

// readList parses a package list: one package a line, in host.txt followed
// by its purpose, then '#' and what needs it; blank and comment lines
// ignored.
func readList(t *testing.T, path string, purposes bool) []entry {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var list []entry
	for i, line := range strings.Split(string(b), "\n") {
		fields, why, _ := strings.Cut(line, "#")
		f := strings.Fields(fields)
		if len(f) == 0 {
			continue
		}
		e := entry{pkg: f[0], why: strings.TrimSpace(why)}
		want := 1
		if purposes {
			want = 2
			if len(f) > 1 {
				e.purpose = f[1]
			}
		}
		if len(f) != want || e.why == "" {
			t.Errorf("%s:%d: %q: want %d word(s) then '# what needs it'", path, i+1, line, want)
		}
		list = append(list, e)
	}
	return list
}

// need is something a script runs or reads, and where.
type need struct {
	what, where string
}

// scanner finds the programs shell scripts run. A variable is resolved
// where all the scanned scripts give it one literal value
// (CHARON=/usr/lib/ipsec/charon, IN_NODE=(nsenter ... --)); a command that
// is a variable of several literal values (up=false, up=true; for p in ip
// nft) is each of them; other expansions stay ${NAME}.
type scanner struct {
	vals   map[string][][]string // a name's values, each split as words
	funcs  map[string]bool
	needs  []need
	errs   []string
	parsed []*syntax.File
}

func newScanner() *scanner {
	return &scanner{vals: map[string][][]string{}, funcs: map[string]bool{}}
}

// builtHere are the variables that name directories of programs this
// repository builds or holds (the toolchain, Go binaries, its scripts): a
// command under them is no Debian package's.
var builtHere = map[string]bool{
	"ROOT": true, "OS_DIR": true, "TOOLS_BIN": true, "SITE_DIR": true,
	"NODE_DIR": true, "OUT": true, "work": true, "ib": true, "MODS": true, "lint": true,
}

// wrappers are this repository's shell functions that run a command given
// in their arguments, with how many arguments come before it.
var wrappers = map[string]int{"start": 1, "in_ns": 1, "wait_for": 2, "wait_ready": 3, "locked": 0}

// builtins are the shell's own commands and keywords the scripts use.
var builtins = map[string]bool{
	"[": true, "[[": true, "cd": true, "echo": true, "printf": true, "exit": true, "return": true,
	"set": true, "shift": true, "source": true, ".": true, "trap": true, "wait": true, "kill": true,
	"read": true, "true": true, "false": true, "test": true, "local": true, "export": true,
	"declare": true, "mapfile": true, "exec": true, "command": true, "break": true, "continue": true,
	"eval": true, "unset": true, ":": true, "let": true, "type": true, "hash": true, "umask": true,
}

// parse reads a shell script (or a snippet, named by where) and records
// its functions and literal variables.
func (s *scanner) parse(src, where string) *syntax.File {
	f, err := syntax.NewParser().Parse(strings.NewReader(src), where)
	if err != nil {
		s.errs = append(s.errs, fmt.Sprintf("cannot parse %s: %v", where, err))
		return nil
	}
	syntax.Walk(f, func(n syntax.Node) bool {
		switch n := n.(type) {
		case *syntax.FuncDecl:
			s.funcs[n.Name.Value] = true
		case *syntax.Assign:
			s.assign(n)
		}
		return true
	})
	s.parsed = append(s.parsed, f)
	return f
}

// assign records the value of an assignment.
func (s *scanner) assign(a *syntax.Assign) {
	if a.Naked || a.Name == nil {
		return // export NAME, declare -f: no value
	}
	var val []string
	switch {
	case a.Array != nil:
		for _, e := range a.Array.Elems {
			val = append(val, s.word(e.Value, nil)...)
		}
	case a.Value != nil:
		val = s.word(a.Value, nil)
	}
	s.value(a.Name.Value, val)
}

// value records one value of a variable.
func (s *scanner) value(name string, val []string) {
	vals := s.vals[name]
	for _, v := range vals {
		if slices.Equal(v, val) {
			return
		}
	}
	s.vals[name] = append(vals, val)
}

// one is the value of a variable with one value that is known: no command
// substitution in it.
func (s *scanner) one(name string) []string {
	if v := s.vals[name]; len(v) == 1 && !strings.Contains(strings.Join(v[0], " "), "${?}") {
		return v[0]
	}
	return nil
}

// word renders a word: literal text, known variables substituted, other
// expansions as ${NAME}; "${ARRAY[@]}" of a known array gives its words.
// pos holds the positional parameters of an sh -c script.
func (s *scanner) word(w *syntax.Word, pos []string) []string {
	if len(w.Parts) == 1 {
		p := w.Parts[0]
		if dq, ok := p.(*syntax.DblQuoted); ok && len(dq.Parts) == 1 {
			p = dq.Parts[0]
		}
		if pe, ok := p.(*syntax.ParamExp); ok && pe.Index != nil {
			if v := s.one(pe.Param.Value); v != nil {
				return v
			}
		}
	}
	var b strings.Builder
	s.parts(&b, w.Parts, pos)
	return []string{b.String()}
}

func (s *scanner) parts(b *strings.Builder, parts []syntax.WordPart, pos []string) {
	for _, p := range parts {
		switch p := p.(type) {
		case *syntax.Lit:
			b.WriteString(p.Value)
		case *syntax.SglQuoted:
			b.WriteString(p.Value)
		case *syntax.DblQuoted:
			s.parts(b, p.Parts, pos)
		case *syntax.ParamExp:
			b.WriteString(s.param(p, pos))
		default:
			b.WriteString("${?}")
		}
	}
}

func (s *scanner) param(p *syntax.ParamExp, pos []string) string {
	name := p.Param.Value
	if len(name) == 1 && name[0] >= '0' && name[0] <= '9' && int(name[0]-'0') < len(pos) {
		return pos[name[0]-'0']
	}
	if v := s.one(name); len(v) == 1 && p.Exp == nil && p.Index == nil {
		return v[0]
	}
	if p.Exp != nil && p.Exp.Word != nil && (p.Exp.Op == syntax.DefaultUnset || p.Exp.Op == syntax.DefaultUnsetOrNull) {
		// ${NAME:-default}: what the scripts run with nothing set.
		var b strings.Builder
		s.parts(&b, p.Exp.Word.Parts, pos)
		return b.String()
	}
	return "${" + name + "}"
}

// scan walks the commands of every parsed file.
func (s *scanner) scan() {
	for _, f := range s.parsed {
		s.walk(f, nil)
	}
}

// walk records the needs of the commands of f, a script whose positional
// parameters are pos.
func (s *scanner) walk(f *syntax.File, pos []string) { s.walkNode(f, f.Name, pos, nil) }

// walkNode records the needs of the commands in n, inside for loops whose
// variables take the values in loop.
func (s *scanner) walkNode(n syntax.Node, file string, pos []string, loop map[string][][]string) {
	syntax.Walk(n, func(n syntax.Node) bool {
		if fc, ok := n.(*syntax.ForClause); ok {
			if wi, ok := fc.Loop.(*syntax.WordIter); ok {
				inner := maps.Clone(loop)
				if inner == nil {
					inner = map[string][][]string{}
				}
				inner[wi.Name.Value] = nil
				for _, w := range wi.Items {
					s.walkNode(w, file, pos, loop) // for m in $(ls ...)
					for _, v := range s.word(w, pos) {
						inner[wi.Name.Value] = append(inner[wi.Name.Value], []string{v})
					}
				}
				for _, st := range fc.Do {
					s.walkNode(st, file, pos, inner)
				}
				return false
			}
		}
		st, ok := n.(*syntax.Stmt)
		if !ok {
			return true
		}
		c, ok := st.Cmd.(*syntax.CallExpr)
		if !ok || len(c.Args) == 0 {
			return true
		}
		var words []string
		for _, a := range c.Args {
			words = append(words, s.word(a, pos)...)
		}
		var hdoc string
		for _, r := range st.Redirs {
			if r.Hdoc != nil {
				hdoc += strings.Join(s.word(r.Hdoc, pos), "")
			}
		}
		s.call(words, hdoc, fmt.Sprintf("%s:%d", file, n.Pos().Line()), loop)
		return true
	})
}

// imports lists the top-level modules a Python program imports, as
// python3:MODULE: import statements at the start of a line or after a ';'
// (python3 -c one-liners).
func imports(src string) []string {
	var mods []string
	for _, st := range strings.FieldsFunc(src, func(r rune) bool { return r == '\n' || r == ';' }) {
		f := strings.Fields(st)
		var names []string
		switch {
		case len(f) >= 2 && f[0] == "import":
			for _, n := range strings.Split(strings.Join(f[1:], " "), ",") {
				names = append(names, strings.Fields(n)[0])
			}
		case len(f) >= 4 && f[0] == "from" && f[2] == "import" && !strings.HasPrefix(f[1], "."):
			names = append(names, f[1])
		}
		for _, n := range names {
			top, _, _ := strings.Cut(n, ".")
			mods = append(mods, "python3:"+top)
		}
	}
	return mods
}

// call records what one simple command runs: the command itself and,
// through wrappers (exec, env, nsenter, the repository's start, ...), the
// command it runs in turn. After a wrapper that is a program (env, xargs,
// ...), a name is a program even where the shell has a builtin of that name
// (xargs kill runs /usr/bin/kill).
func (s *scanner) call(words []string, hdoc, where string, loop map[string][][]string) {
	add := func(what string) { s.needs = append(s.needs, need{what, where}) }
	program := false
	for len(words) > 0 {
		w, args := words[0], words[1:]
		if i := strings.Index(w, "${"); i >= 0 {
			name := strings.TrimSuffix(strings.SplitN(w[i+2:], "}", 2)[0], "[@]")
			positional := name == "@" || (len(name) == 1 && name >= "0" && name <= "9")
			vals, inLoop := loop[name]
			if !inLoop {
				vals = s.vals[name]
			}
			switch {
			case inLoop || len(vals) > 1:
				for _, v := range vals {
					if strings.Contains(strings.Join(v, " "), "${"+name+"}") {
						continue // x=$x/y: no end to it
					}
					s.call(append([]string{strings.Replace(w, "${"+name+"}", strings.Join(v, " "), 1)}, args...), hdoc, where, loop)
				}
			case i == 0 && builtHere[name]:
			case i == 0 && positional:
				// The arguments of a function or script: what it runs is
				// found where it is called.
			case positional && s.funcPrefix(w[:i]):
				// build_$1: one of the script's own functions.
			default:
				s.errs = append(s.errs, fmt.Sprintf("%s runs %q: cannot tell which program that is (add its directory's variable to builtHere, or its value to the script)", where, w))
			}
			return
		}
		base := filepath.Base(w)
		switch {
		case strings.Contains(w, "/") && !filepath.IsAbs(w):
			return // a file of this repository
		case strings.Contains(w, "/"):
			add(w)
		case w == "command":
			if len(args) == 2 && args[0] == "-v" {
				s.call(args[1:2], "", where, loop)
			}
			return
		case program:
			add(w)
		case w == "exec":
			words = args
			continue
		case w == "trap":
			if len(args) > 0 && args[0] != "-" { // trap - EXIT resets
				if f := s.parse(args[0], where+" (trap)"); f != nil {
					s.walk(f, nil)
				}
			}
			return
		case builtins[w]:
			return
		case s.funcs[w]:
			n, ok := wrappers[w]
			if !ok || len(args) < n {
				return
			}
			words = args[n:]
			continue
		default:
			add(w)
		}
		switch base {
		case "env":
			for len(args) > 0 && (strings.HasPrefix(args[0], "-") || strings.Contains(args[0], "=")) {
				args = args[1:]
			}
		case "nsenter", "unshare":
			if i := slices.Index(args, "--"); i >= 0 {
				args = args[i+1:]
			} else {
				for len(args) > 0 && strings.HasPrefix(args[0], "-") {
					args = args[1:]
				}
			}
		case "setsid", "xargs", "nice":
			for len(args) > 0 && strings.HasPrefix(args[0], "-") {
				args = args[1:]
			}
		case "sh", "bash":
			if len(args) >= 2 && strings.HasPrefix(args[0], "-") && strings.Contains(args[0], "c") {
				if f := s.parse(args[1], where+" ("+base+" -c)"); f != nil {
					s.walk(f, args[2:])
				}
			}
			return
		case "python3":
			if i := slices.Index(args, "-c"); i >= 0 && i+1 < len(args) {
				hdoc = args[i+1]
			}
			for _, m := range imports(hdoc) {
				add(m)
			}
			return
		case "dpkg-query":
			for _, a := range args {
				if !strings.HasPrefix(a, "-") && !strings.Contains(a, "${") {
					add("package:" + a)
				}
			}
			return
		case "ip":
			if len(args) >= 3 && args[0] == "netns" && args[1] == "exec" {
				args = args[3:]
			} else {
				return
			}
		default:
			return
		}
		words, program = args, true
	}
}

// funcPrefix tells whether a function's name starts with p.
func (s *scanner) funcPrefix(p string) bool {
	for f := range s.funcs {
		if strings.HasPrefix(f, p) {
			return true
		}
	}
	return false
}

// makeVar matches a Makefile variable reference.
var makeVar = regexp.MustCompile(`\$\((\w+)\)`)

// continuation matches a backslash-newline and the indentation after it.
var continuation = regexp.MustCompile(`\s*\\\n\s*`)

// makeShell matches the $(shell ...) calls of a Makefile.
var makeShell = regexp.MustCompile(`\$\(shell ([^)]*)\)`)

// makefile returns the shell of a Makefile's recipes and $(shell ...)
// calls, one snippet a line, with make's variables as the shell sees them.
func makefile(src string) []string {
	vars := map[string]string{"GO": "go", "MAKE": "make", "TOOLS_BIN": "${TOOLS_BIN}", "OUTPUT": "_output", "MAKEFILE_LIST": "Makefile"}
	var out []string
	src = continuation.ReplaceAllString(src, " ")
	for _, line := range strings.Split(src, "\n") {
		for _, m := range makeShell.FindAllStringSubmatch(line, -1) {
			out = append(out, m[1])
		}
		if !strings.HasPrefix(line, "\t") {
			continue
		}
		line = strings.TrimLeft(strings.TrimSpace(line), "@-")
		line = makeVar.ReplaceAllStringFunc(line, func(v string) string { return vars[makeVar.FindStringSubmatch(v)[1]] })
		out = append(out, strings.ReplaceAll(line, "$$", "$"))
	}
	return out
}

// goExec matches the programs Go code runs by name or absolute path.
var goExec = regexp.MustCompile(`exec\.(?:Command|CommandContext|LookPath)\((?:ctx,\s*)?"([^"]+)"|\w*Binary\s*=\s*"(/[^"]+)"`)

// hostNeeds are the needs of everything that runs on the host: the
// scripts, the Makefile, the OpenStack helpers and the Go code of the
// tests and harness (and of the agent, which the integration tests run);
// the scanner holds what it could not tell.
func hostNeeds(t *testing.T) (*scanner, []need) {
	t.Helper()
	s := newScanner()
	var found []need
	var files []string
	for _, dir := range []string{".ci", "cluster", "hack", "test", "internal/agent"} {
		err := filepath.WalkDir(filepath.Join(root, dir), func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			files = append(files, p)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	files = append(files, filepath.Join(root, "Makefile"))
	for _, p := range files {
		rel, _ := filepath.Rel(root, p)
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		src := string(b)
		switch {
		case rel == "Makefile":
			for i, sn := range makefile(src) {
				s.parse(sn, fmt.Sprintf("Makefile (line %d of its shell)", i+1))
			}
		case strings.HasSuffix(p, ".sh") || strings.HasPrefix(src, "#!/usr/bin/env bash"):
			s.parse(src, rel)
		case strings.HasSuffix(p, ".py"):
			if line, _, _ := strings.Cut(src, "\n"); strings.HasPrefix(line, "#!") {
				found = append(found, need{strings.TrimPrefix(line, "#!"), rel})
			}
			for _, m := range imports(src) {
				found = append(found, need{m, rel})
			}
		case strings.HasSuffix(p, ".go") && !strings.HasPrefix(rel, "hack/packages/"):
			for _, m := range goExec.FindAllStringSubmatch(src, -1) {
				found = append(found, need{m[1] + m[2], rel})
			}
		}
	}
	s.scan()
	return s, append(s.needs, found...)
}

func TestCommands(t *testing.T) {
	cases := map[string]struct {
		reason string
		script string
		want   []string
	}{
		"Plain": {
			reason: "Every simple command is a need, in a pipeline and a substitution too.",
			script: "openssl req -new | sha256sum\nx=$(curl -s http://127.0.0.1/)\n",
			want:   []string{"curl", "openssl", "sha256sum"},
		},
		"CommentsAndHeredocs": {
			reason: "Words of comments and of here-documents are no commands; a substitution inside an unquoted here-document is.",
			script: "# runc is needed\ncat <<EOF\nload = openssl\nsecret = $(head -c 8 /dev/urandom)\nEOF\n",
			want:   []string{"cat", "head"},
		},
		"Variables": {
			reason: "A command in a variable of one literal value is that value; ${NAME:-default} is its default.",
			script: "CHARON=/usr/lib/ipsec/charon\nPY=${PY:-/usr/bin/python3}\n\"$CHARON\" --version\n$PY -c 'import yaml, json; import keystoneauth1.session'\n",
			want:   []string{"/usr/bin/python3", "/usr/lib/ipsec/charon", "python3:json", "python3:keystoneauth1", "python3:yaml"},
		},
		"Wrappers": {
			reason: "What env, nsenter, setsid, exec, xargs (kill: the program, not the builtin), ip netns exec, a trap and the repository's start, in_ns and wait_for run is a need too.",
			script: "start() { \"$@\"; }\nin_ns() { shift; \"$@\"; }\nwait_for() { shift 2; \"$@\"; }\n" +
				"start fipnat env A=b nsenter --net=/x -- unshare --mount -- sh -c 'mount -t tmpfs tmpfs /run && exec \"$0\"' /usr/lib/ipsec/charon\n" +
				"in_ns vm nft -f x\nwait_for provider 60 curl -fsS x\nexec setsid uwsgi --plugin python3\nxargs -r kill -9\nip netns exec ns conntrack -L\n" +
				"trap 'umount /x' EXIT\n",
			want: []string{"/usr/lib/ipsec/charon", "conntrack", "curl", "env", "ip", "kill", "mount", "nft", "nsenter", "setsid", "sh", "umount", "unshare", "uwsgi", "xargs"},
		},
		"Arrays": {
			reason: "\"${ARRAY[@]}\" of a literal array runs its first word.",
			script: "IN_NODE=(nsenter --net=/run/netns/x --)\n\"${IN_NODE[@]}\" ip link set lo up\n",
			want:   []string{"ip", "nsenter"},
		},
		"Lookups": {
			reason: "command -v X needs X; functions, builtins and the repository's own programs are no Debian package's.",
			script: "kubectl() { \"$TOOLS_BIN/kubectl\" \"$@\"; }\ncommand -v runc >/dev/null\nkubectl get pods\n\"$ROOT/hack/tools.sh\" bindir\nhack/images.sh\n[ -x x ] && echo ok\n",
			want:   []string{"runc"},
		},
		"ShellC": {
			reason: "The script of sh -c or bash -c is scanned, its $0 the argument after it; so are the words a for loop goes over.",
			script: "bash -c '[ -n \"$(\"$0\" get x)\" ] && flock 9' /usr/bin/kubectl\nfor m in $(ls x); do echo \"$m\"; done\n",
			want:   []string{"/usr/bin/kubectl", "bash", "flock", "ls"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			s := newScanner()
			s.parse(tc.script, "script")
			s.scan()
			if len(s.errs) != 0 {
				t.Fatalf("%s\n%s", tc.reason, strings.Join(s.errs, "\n"))
			}
			got := map[string]bool{}
			for _, n := range s.needs {
				got[n.what] = true
			}
			if diff := cmp.Diff(tc.want, sortedKeys(got)); diff != "" {
				t.Errorf("%s\nneeds: -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestMakefile(t *testing.T) {
	cases := map[string]struct {
		reason string
		src    string
		want   []string
	}{
		"Recipes": {
			reason: "Recipe lines are shell with make's $$ unescaped, @ dropped and the variables the Makefile sets replaced.",
			src:    "X = $(shell hack/tools.sh bindir)\nvet:\n\t@$(GO) vet \\\n\t  ./...\n\tgofmt -l $$(git ls-files '*.go')\n",
			want:   []string{"hack/tools.sh bindir", "go vet ./...", "gofmt -l $(git ls-files '*.go')"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, makefile(tc.src)); diff != "" {
				t.Errorf("%s\n-want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// TestHostPackages fails when a program the host runs comes from a package
// that hack/packages/host.txt does not list (and that is not Essential),
// when the table of providers does not know a program, or when the list or
// the table holds something nothing needs.
func TestHostPackages(t *testing.T) {
	s, needs := hostNeeds(t)
	for _, e := range s.errs {
		t.Error(e)
	}
	for _, x := range extraNeeds {
		b, err := os.ReadFile(filepath.Join(root, x.file))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), x.mention) {
			t.Errorf("%s no longer mentions %q: remove %s from extraNeeds", x.file, x.mention, x.what)
		}
		needs = append(needs, need{x.what, x.file})
	}
	listed := map[string]bool{}
	purposes := map[string]bool{}
	for _, e := range readList(t, filepath.Join(root, "hack/packages/host.txt"), true) {
		if listed[e.pkg] {
			t.Errorf("hack/packages/host.txt lists %s twice", e.pkg)
		}
		listed[e.pkg] = true
		purposes[e.purpose] = true
	}
	usedPkgs := map[string]bool{}
	usedRows := map[string]bool{}
	missing := map[string][]string{}
	for _, n := range needs {
		pkg, ok := strings.CutPrefix(n.what, "package:")
		switch {
		case premises[n.what]:
			continue
		case ok:
		case provides[n.what] != "":
			pkg = provides[n.what]
		case madeBy[n.what] != "":
			pkg = madeBy[n.what]
		default:
			t.Errorf("%s needs %s, which provides_test.go does not know: add the Debian package that provides it (dpkg -S)", n.where, n.what)
			continue
		}
		usedRows[n.what] = true
		usedPkgs[pkg] = true
		if !listed[pkg] && !slices.Contains(essential, pkg) {
			what := n.what
			if ok {
				what = "its version"
			}
			missing[pkg] = append(missing[pkg], what+" ("+n.where+")")
		}
	}
	for _, pkg := range sortedKeys(missing) {
		t.Errorf("hack/packages/host.txt does not list %s, which gives %s", pkg, strings.Join(first(missing[pkg], 3), ", "))
	}
	for p := range listed {
		if !usedPkgs[p] {
			t.Errorf("hack/packages/host.txt lists %s, but nothing this test finds needs it (if something does, add it to extraNeeds)", p)
		}
	}
	for _, rows := range []map[string]string{provides, madeBy} {
		for what := range rows {
			if !usedRows[what] && !imageNeeds[what] {
				t.Errorf("provides_test.go knows %s, which nothing needs any more: remove it", what)
			}
		}
	}
}

// first returns up to n elements of l, and how many more there are.
func first(l []string, n int) []string {
	if len(l) <= n {
		return l
	}
	return append(l[:n:n], fmt.Sprintf("and %d more", len(l)-n))
}

// TestGatewayImagePackages fails unless hack/images.sh and the Dockerfile
// both take the gateway image's packages from
// cluster/images/gateway/packages.txt, and that list provides what the
// gateway pod runs.
func TestGatewayImagePackages(t *testing.T) {
	const list = "cluster/images/gateway/packages.txt"
	listed := map[string]bool{}
	for _, e := range readList(t, filepath.Join(root, list), false) {
		listed[e.pkg] = true
	}
	for what := range imageNeeds {
		if pkg := provides[what]; !listed[pkg] && !slices.Contains(essential, pkg) {
			t.Errorf("the gateway image runs %s, from package %q, which %s does not list", what, pkg, list)
		}
	}
	for _, f := range []string{"hack/images.sh", "cluster/images/gateway/Dockerfile"} {
		b, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), list) {
			t.Errorf("%s does not read %s", f, list)
		}
		for p := range listed {
			// The name as a word of its own (not in a path such as
			// /etc/ssl/certs/ca-certificates.crt), outside a comment.
			if regexp.MustCompile(`(?m)^[^#]*(?:^|[\s,'"=])` + regexp.QuoteMeta(p) + `(?:$|[\s,'"\\])`).Match(b) {
				t.Errorf("%s names package %s outside a comment: the list is %s", f, p, list)
			}
		}
	}
}

// dpkgDB is what the test reads of the machine's dpkg database.
type dpkgDB struct {
	installed map[string]bool
	essential map[string]bool
	owner     map[string]string // file, as listed and with /usr merged, -> package
}

const dpkgDir = "/var/lib/dpkg"

func readDpkg(t *testing.T) *dpkgDB {
	t.Helper()
	f, err := os.Open(filepath.Join(dpkgDir, "status"))
	if err != nil {
		t.Skipf("no dpkg database (%v): not a Debian machine", err)
	}
	defer f.Close()
	db := &dpkgDB{installed: map[string]bool{}, essential: map[string]bool{}, owner: map[string]string{}}
	var pkg string
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		k, v, _ := strings.Cut(sc.Text(), ": ")
		switch k {
		case "Package":
			pkg = v
		case "Status":
			db.installed[pkg] = v == "install ok installed"
		case "Essential":
			db.essential[pkg] = v == "yes"
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	lists, err := filepath.Glob(filepath.Join(dpkgDir, "info", "*.list"))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range lists {
		pkg, _, _ := strings.Cut(strings.TrimSuffix(filepath.Base(l), ".list"), ":")
		b, err := os.ReadFile(l)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range strings.Split(string(b), "\n") {
			if p != "" {
				db.owner[p] = pkg
				db.owner[merged(p)] = pkg
			}
		}
	}
	return db
}

// merged is a path as it is found on a merged-/usr system (Debian 12):
// /bin/ip is /usr/bin/ip.
func merged(p string) string {
	for _, d := range []string{"/bin/", "/sbin/", "/lib/"} {
		if strings.HasPrefix(p, d) {
			return "/usr" + p
		}
	}
	return p
}

// files are the paths on this machine that may provide a need: a command
// in the system's directories (not the user's PATH, which may have other
// interpreters first), a path, or a Python module in Debian's directories.
func files(what string) []string {
	if mod, ok := strings.CutPrefix(what, "python3:"); ok {
		dirs, _ := filepath.Glob("/usr/lib/python3.*")
		dirs = append(dirs, "/usr/lib/python3/dist-packages")
		var out []string
		for _, d := range dirs {
			out = append(out, filepath.Join(d, mod, "__init__.py"), filepath.Join(d, mod+".py"))
		}
		return out
	}
	if filepath.IsAbs(what) {
		return []string{merged(what)}
	}
	return []string{"/usr/sbin/" + what, "/usr/bin/" + what}
}

// shippedBy tells whether a file dpkg says owner ships is pkg's: python3's
// interpreter and standard library are in the packages it depends on.
func shippedBy(pkg, owner string) bool {
	if pkg == "python3" {
		return owner == "python3-minimal" || strings.HasPrefix(owner, "python3.") || strings.HasPrefix(owner, "libpython3.")
	}
	return owner == pkg
}

// TestProvidesAgreesWithDpkg checks the table against the machine's dpkg
// database: for every program whose package is installed here, dpkg says
// that package ships it; the Essential packages are Essential.
func TestProvidesAgreesWithDpkg(t *testing.T) {
	db := readDpkg(t)
	for _, p := range essential {
		if db.installed[p] && !db.essential[p] {
			t.Errorf("provides_test.go counts %s as Essential; dpkg does not", p)
		}
	}
	var unverified []string
	for f, pkg := range madeBy {
		if _, err := os.Stat(f); err != nil && db.installed[pkg] {
			t.Errorf("provides_test.go says %s makes %s; it is installed here and there is no such file", pkg, f)
		}
	}
	for what, pkg := range provides {
		if builtinModules[what] {
			continue
		}
		owner := ""
		for _, f := range files(what) {
			if o := db.owner[f]; o != "" {
				owner = o
				break
			}
			// An alternative (awk) or a link into another package.
			if r, err := filepath.EvalSymlinks(f); err == nil && db.owner[r] != "" {
				owner = db.owner[r]
				break
			}
		}
		switch {
		case owner != "" && !shippedBy(pkg, owner):
			t.Errorf("provides_test.go says %s provides %s; dpkg says %s", pkg, what, owner)
		case owner == "" && db.installed[pkg]:
			t.Errorf("provides_test.go says %s provides %s; %s is installed here and does not ship it", pkg, what, pkg)
		case owner == "":
			unverified = append(unverified, what+" ("+pkg+")")
		}
	}
	if len(unverified) > 0 {
		sort.Strings(unverified)
		t.Logf("not installed here, so taken on the table's word: %s", strings.Join(unverified, ", "))
	}
}
