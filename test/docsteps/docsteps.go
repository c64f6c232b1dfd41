// Package docsteps runs the sh blocks of the project's Markdown documents,
// so that what a document tells a user to run is what the tests run.
package docsteps

import (
	"context"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"
)

// A Doc is the sh blocks of one Markdown file whose first line is
// "# step: NAME", by name, with the step line and the list indentation
// taken off.
type Doc struct {
	// Path names the file in messages.
	Path  string
	Steps map[string]string
}

// Read reads the file path (a file name, as given) and fails t when it
// cannot.
func Read(t *testing.T, path string) Doc {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	steps := map[string]string{}
	var name, indent string
	var block []string
	in := false
	for l := range strings.Lines(string(b)) {
		trimmed := strings.TrimSpace(l)
		switch {
		case !in && trimmed == "```sh":
			in, name, block = true, "", block[:0]
			indent = l[:len(l)-len(strings.TrimLeft(l, " "))]
		case in && trimmed == "```":
			in = false
			if name != "" {
				steps[name] = strings.Join(block, "")
			}
		case in && name == "" && strings.HasPrefix(trimmed, "# step: "):
			name = strings.TrimPrefix(trimmed, "# step: ")
		case in:
			block = append(block, strings.TrimPrefix(l, indent))
		}
	}
	return Doc{Path: path, Steps: steps}
}

// Require fails t unless d has a step of each of names.
func (d Doc) Require(t *testing.T, names ...string) {
	t.Helper()
	for _, n := range names {
		if _, ok := d.Steps[n]; !ok {
			t.Fatalf("%s has no sh block of step %s", d.Path, n)
		}
	}
}

// Run runs, with bash -euo pipefail in dir with env, the steps of d named
// prelude and then names, as one script that must end within timeout; it
// fails t with the script's output when the script fails, and logs the
// output and the time it took.
func (d Doc) Run(t *testing.T, env []string, dir string, timeout time.Duration, prelude []string, names ...string) {
	t.Helper()
	start := time.Now()
	var script strings.Builder
	script.WriteString("set -euo pipefail\n")
	for _, n := range append(slices.Clone(prelude), names...) {
		script.WriteString(d.Steps[n])
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-c", script.String())
	cmd.Env, cmd.Dir = env, dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s steps %v: %v\n%s", d.Path, names, err, out)
	}
	t.Logf("%s steps %v (%s):\n%s", d.Path, names, time.Since(start).Round(100*time.Millisecond), out)
}
