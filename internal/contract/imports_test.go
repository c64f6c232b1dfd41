package contract

import (
	"errors"
	"fmt"
	"go/build"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// The agent's packages, and the provider's that they must not reach: the
// agent knows the provider only through this package.
var (
	agentPackages    = []string{"cmd/gateway-agent", "internal/agent"}
	providerPackages = []string{"internal/render", "internal/workload", "internal/controller"}
)

// TestAgentImportsNoProviderPackage fails when a package of the gateway
// agent, or one of its tests, imports a package of the provider's renderer,
// object builder or controllers, directly or through another package.
func TestAgentImportsNoProviderPackage(t *testing.T) {
	chains, walked, err := importChains("../..", agentPackages, providerPackages)
	if err != nil {
		t.Fatal(err)
	}
	// The walk must have seen the agent, or it proves nothing.
	for _, want := range []string{"cmd/gateway-agent", "internal/agent/run", "internal/agent/source", "internal/agent/status"} {
		if !slices.Contains(walked, want) {
			t.Fatalf("the import walk did not find the agent package %s (found %v)", want, walked)
		}
	}
	for _, c := range chains {
		t.Errorf("the agent imports the provider: %s (use internal/contract)", c)
	}
}

func TestImportChains(t *testing.T) {
	type want struct {
		chains []string
		walked []string
	}
	cases := map[string]struct {
		reason string
		files  map[string]string
		want   want
	}{
		"Clean": {
			reason: "An agent that imports only the contract and the standard library reaches no provider package.",
			files: map[string]string{
				"internal/agent/a/a.go":   "package a\nimport (\n\t\"os\"\n\t\"example.com/m/internal/contract\"\n)\n",
				"internal/contract/c.go":  "package contract\n",
				"internal/render/r.go":    "package render\nimport \"example.com/m/internal/contract\"\n",
				"cmd/gateway-agent/m.go":  "package main\nimport \"example.com/m/internal/agent/a\"\n",
				"internal/workload/w.go":  "package workload\nimport \"example.com/m/internal/render\"\n",
				"internal/agent/a/doc.md": "not Go",
			},
			want: want{walked: []string{"cmd/gateway-agent", "internal/agent/a"}},
		},
		"Direct": {
			reason: "An agent package that imports the renderer is found.",
			files: map[string]string{
				"internal/agent/a/a.go": "package a\nimport \"example.com/m/internal/render\"\n",
				"internal/render/r.go":  "package render\n",
			},
			want: want{chains: []string{"internal/agent/a -> internal/render"}, walked: []string{"internal/agent/a"}},
		},
		"Transitive": {
			reason: "A package the agent imports that imports a subpackage of the controllers is found, with the path between.",
			files: map[string]string{
				"cmd/gateway-agent/m.go":             "package main\nimport \"example.com/m/internal/swanctl\"\n",
				"internal/swanctl/s.go":              "package swanctl\nimport \"example.com/m/internal/controller/gateway\"\n",
				"internal/controller/gateway/g.go":   "package gateway\n",
				"internal/controller/gateway/doc.go": "package gateway\n",
			},
			want: want{chains: []string{"cmd/gateway-agent -> internal/swanctl -> internal/controller/gateway"}, walked: []string{"cmd/gateway-agent"}},
		},
		"Test": {
			reason: "An agent package's test, internal or external, that imports the object builder is found.",
			files: map[string]string{
				"internal/agent/a/a.go":      "package a\n",
				"internal/agent/a/a_test.go": "package a\nimport \"example.com/m/internal/workload\"\n",
				"internal/agent/b/b.go":      "package b\n",
				"internal/agent/b/b_test.go": "package b_test\nimport (\n\t\"example.com/m/internal/agent/b\"\n\t\"example.com/m/internal/render\"\n)\n",
				"internal/render/r.go":       "package render\n",
				"internal/workload/w.go":     "package workload\n",
			},
			want: want{
				chains: []string{"internal/agent/a -> internal/workload", "internal/agent/b -> internal/render"},
				walked: []string{"internal/agent/a", "internal/agent/b"},
			},
		},
		"TaggedFile": {
			reason: "A file built only with the integration tag counts: the agent is linked with it in the integration tests.",
			files: map[string]string{
				"internal/agent/a/a.go":   "package a\n",
				"internal/agent/a/i.go":   "//go:build integration\n\npackage a\nimport \"example.com/m/internal/render\"\n",
				"internal/render/r.go":    "package render\n",
				"internal/agent/a/x.go":   "//go:build ignore\n\npackage main\nimport \"example.com/m/internal/workload\"\n",
				"internal/workload/w.go":  "package workload\n",
				"internal/agent/a/lx.go":  "//go:build !linux\n\npackage a\n",
				"internal/agent/a/zz.txt": "",
			},
			want: want{chains: []string{"internal/agent/a -> internal/render"}, walked: []string{"internal/agent/a"}},
		},
		"DependencyTestsNotFollowed": {
			reason: "A test of a package the agent imports is not linked into the agent, and a name that only starts like a provider package is none.",
			files: map[string]string{
				"internal/agent/a/a.go":          "package a\nimport (\n\t\"example.com/m/internal/swanctl\"\n\t\"example.com/m/internal/renderer\"\n)\n",
				"internal/swanctl/s.go":          "package swanctl\n",
				"internal/swanctl/s_test.go":     "package swanctl\nimport \"example.com/m/internal/render\"\n",
				"internal/render/r.go":           "package render\n",
				"internal/renderer/r.go":         "package renderer\n",
				"internal/agent/a/testdata/x.go": "package x\nimport \"example.com/m/internal/render\"\n",
			},
			want: want{walked: []string{"internal/agent/a"}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			root := t.TempDir()
			tc.files["go.mod"] = "module example.com/m\n\ngo 1.26\n"
			for p, content := range tc.files {
				p = filepath.Join(root, filepath.FromSlash(p))
				if err := os.MkdirAll(filepath.Dir(p), 0o750); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			chains, walked, err := importChains(root, agentPackages, providerPackages)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, want{chains: chains, walked: walked}, cmp.AllowUnexported(want{})); diff != "" {
				t.Errorf("%s\nimportChains: -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

// importChains walks the imports of the packages of the module in root
// that lie in or below one of the directories from (slash-separated,
// relative to root), with their tests, and of every package of the module
// they import, without those packages' tests. It returns, sorted, for each
// package in from and each package in or below banned it reaches, the
// first chain of imports that reaches it ("a -> b -> c", paths relative to
// the module), and the packages of from it walked. Files count as the
// tests build them (linux, with the tags integration and e2e); testdata and
// a //go:build ignore program are left out.
func importChains(root string, from, banned []string) (chains, walked []string, err error) {
	module, err := modulePath(root)
	if err != nil {
		return nil, nil, err
	}
	ctx := build.Default
	ctx.BuildTags = []string{"integration", "e2e"}
	imports := func(rel string, tests bool) ([]string, error) {
		p, err := ctx.ImportDir(filepath.Join(root, filepath.FromSlash(rel)), build.ImportComment)
		if noGo := (*build.NoGoError)(nil); errors.As(err, &noGo) {
			return nil, nil
		}
		if err != nil {
			return nil, fmt.Errorf("cannot read the imports of %s: %w", rel, err)
		}
		all := p.Imports
		if tests {
			all = append(append(slices.Clone(all), p.TestImports...), p.XTestImports...)
		}
		var mine []string
		for _, i := range all {
			if rel, ok := strings.CutPrefix(i, module+"/"); ok {
				mine = append(mine, rel)
			}
		}
		slices.Sort(mine)
		return slices.Compact(mine), nil
	}
	for _, dir := range from {
		pkgs, err := packageDirs(root, dir)
		if err != nil {
			return nil, nil, err
		}
		for _, pkg := range pkgs {
			walked = append(walked, pkg)
			found := map[string]bool{}
			seen := map[string]bool{pkg: true}
			var walk func(rel string, chain []string, tests bool) error
			walk = func(rel string, chain []string, tests bool) error {
				deps, err := imports(rel, tests)
				if err != nil {
					return err
				}
				for _, d := range deps {
					next := append(slices.Clone(chain), d)
					if slices.ContainsFunc(banned, func(b string) bool { return within(d, b) }) {
						if !found[d] {
							found[d] = true
							chains = append(chains, strings.Join(next, " -> "))
						}
						continue
					}
					if seen[d] {
						continue
					}
					seen[d] = true
					if err := walk(d, next, false); err != nil {
						return err
					}
				}
				return nil
			}
			if err := walk(pkg, []string{pkg}, true); err != nil {
				return nil, nil, err
			}
		}
	}
	slices.Sort(chains)
	slices.Sort(walked)
	return chains, walked, nil
}

// within says whether the package pkg is dir or lies below it (both
// slash-separated).
func within(pkg, dir string) bool { return pkg == dir || strings.HasPrefix(pkg, dir+"/") }

// packageDirs returns the directories in or below dir (relative to root,
// slash-separated) that hold Go files, testdata left out; none when dir
// does not exist.
func packageDirs(root, dir string) ([]string, error) {
	var dirs []string
	err := filepath.WalkDir(filepath.Join(root, filepath.FromSlash(dir)), func(p string, d fs.DirEntry, err error) error {
		if errors.Is(err, fs.ErrNotExist) && p == filepath.Join(root, filepath.FromSlash(dir)) {
			return filepath.SkipAll
		}
		if err != nil {
			return err
		}
		if d.IsDir() {
			if d.Name() == "testdata" {
				return filepath.SkipDir
			}
			return nil
		}
		if path.Ext(d.Name()) != ".go" {
			return nil
		}
		rel, err := filepath.Rel(root, filepath.Dir(p))
		if err != nil {
			return err
		}
		if rel = filepath.ToSlash(rel); !slices.Contains(dirs, rel) {
			dirs = append(dirs, rel)
		}
		return nil
	})
	return dirs, err
}

// modulePath returns the module path of root's go.mod.
func modulePath(root string) (string, error) {
	b, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		return "", err
	}
	for line := range strings.Lines(string(b)) {
		if m, ok := strings.CutPrefix(strings.TrimSpace(line), "module "); ok {
			return strings.Trim(strings.TrimSpace(m), `"`), nil
		}
	}
	return "", errors.New("go.mod names no module")
}
