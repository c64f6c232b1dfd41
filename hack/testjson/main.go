// Command testjson reads the `go test -json` streams that make's test
// targets keep in _output/test-<stage>.json.
//
// Usage:
//
//	testjson print [-v] < STREAM
//	testjson slowest [-n N] [-waits FILE] STREAM...
//
// print copies a stream from stdin to stdout as text while go test writes
// it: with -v all that `go test -v` prints; without, what plain `go test`
// prints (build errors, each package's ok or FAIL line and whatever a
// package printed outside its tests), each failed test as -v printed it,
// and every line of a test still running when its package failed (a
// time-out's panic). Lines that are no JSON are copied as they are. It
// exits 0 whatever the tests did (go test's exit code is make's), 1 when
// it cannot read or write.
//
// slowest prints, as a Markdown table, the N slowest top-level tests of the
// streams (seconds, package relative to the module, test, what it waits on
// from the waits file), preceded by each stream's span (first to last
// event, in seconds: go test's part of its stage). A test still running
// when its package ended counts with the time up to that end and is marked
// "(unfinished)", a failed one "(failed)".
//
// The waits file (default hack/testjson/waits.txt) names, a line each,
// "PACKAGE TEST WHAT IT WAITS ON" (the package relative to the module);
// # starts a comment.
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// module prefixes the packages the streams name; the table and the waits
// file leave it out.
const module = "github.com/ipsecgw/provider-ipsec/"

// event is one line of a `go test -json` stream (go doc test2json; Go
// 1.24's build events: ImportPath with the actions build-output and
// build-fail).
type event struct {
	Time    time.Time `json:"Time"`
	Action  string    `json:"Action"`
	Package string    `json:"Package"`
	Test    string    `json:"Test"`
	// Elapsed is the test's or the package's run time in seconds, on its
	// last event (pass, fail, skip).
	Elapsed float64 `json:"Elapsed"`
	Output  string  `json:"Output"`
}

// The actions of the events this command reads.
const (
	actionRun         = "run"
	actionOutput      = "output"
	actionBuildOutput = "build-output"
	actionFail        = "fail"
)

// ends says whether e is the last event of its test (a top-level test's
// when top) or, without a test, of its package.
func (e event) ends(top bool) bool {
	if e.Action != "pass" && e.Action != actionFail && e.Action != "skip" {
		return false
	}
	return !top || e.Test != "" && !strings.Contains(e.Test, "/")
}

func main() {
	if len(os.Args) < 2 {
		usage()
	}
	var err error
	switch flags := flag.NewFlagSet(os.Args[1], flag.ExitOnError); os.Args[1] {
	case "print":
		verbose := flags.Bool("v", false, "print all that go test -v prints")
		_ = flags.Parse(os.Args[2:])
		err = printStream(os.Stdin, os.Stdout, *verbose)
	case "slowest":
		n := flags.Int("n", 20, "how many tests")
		waitsFile := flags.String("waits", "hack/testjson/waits.txt", "what each test waits on: PACKAGE TEST TEXT a line")
		_ = flags.Parse(os.Args[2:])
		if flags.NArg() == 0 {
			usage()
		}
		err = slowest(os.Stdout, flags.Args(), *waitsFile, *n)
	default:
		usage()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "testjson:", err)
		os.Exit(1)
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: testjson print [-v] < STREAM\n       testjson slowest [-n N] [-waits FILE] STREAM...")
	os.Exit(2)
}

// printer prints a stream as text (see the package's doc).
type printer struct {
	w       io.Writer
	verbose bool
	// held is the output of each running top-level test, by "package
	// test", without -v; order is the order they started in.
	held  map[string][]string
	order []string
}

// printStream copies the stream r to w as text. Its errors are r's and
// w's.
func printStream(r io.Reader, w io.Writer, verbose bool) error {
	p := &printer{w: w, verbose: verbose, held: map[string][]string{}}
	in := bufio.NewReader(r)
	for {
		line, err := in.ReadBytes('\n')
		if len(line) > 0 {
			if err := p.line(line); err != nil {
				return err
			}
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// line prints or holds one line of the stream.
func (p *printer) line(line []byte) error {
	var e event
	if json.Unmarshal(line, &e) != nil || e.Action == "" {
		_, err := p.w.Write(line)
		return err
	}
	switch {
	case p.verbose || e.Action == actionBuildOutput:
		_, err := io.WriteString(p.w, e.Output)
		return err
	case e.Test == "":
		return p.packageEvent(e)
	}
	top, _, _ := strings.Cut(e.Test, "/")
	key := e.Package + " " + top
	switch {
	case e.Action == actionOutput:
		if _, ok := p.held[key]; !ok {
			p.order = append(p.order, key)
		}
		p.held[key] = append(p.held[key], e.Output)
	case e.ends(true):
		return p.flush(key, e.Action == actionFail)
	}
	return nil
}

// packageEvent prints an event of a package outside its tests, without -v.
func (p *printer) packageEvent(e event) error {
	switch {
	case e.Action == actionOutput && e.Output == "PASS\n":
		// go test prints a passed package's ok line alone.
		return nil
	case e.Action == actionOutput:
		// A failed package's tests that never ended (a time-out's panic, a
		// crash) print before its FAIL lines.
		if strings.HasPrefix(e.Output, "FAIL") {
			if err := p.flushPackage(e.Package, true); err != nil {
				return err
			}
		}
		_, err := io.WriteString(p.w, e.Output)
		return err
	case e.ends(false):
		return p.flushPackage(e.Package, e.Action == actionFail)
	}
	return nil
}

// flushPackage flushes the tests of package pkg that are held.
func (p *printer) flushPackage(pkg string, print bool) error {
	for _, k := range slices.Clone(p.order) {
		if strings.HasPrefix(k, pkg+" ") {
			if err := p.flush(k, print); err != nil {
				return err
			}
		}
	}
	return nil
}

// flush prints the held output of a test if print, and forgets it.
func (p *printer) flush(key string, print bool) error {
	out := strings.Join(p.held[key], "")
	delete(p.held, key)
	p.order = slices.DeleteFunc(p.order, func(k string) bool { return k == key })
	if !print {
		return nil
	}
	_, err := io.WriteString(p.w, out)
	return err
}

// result is one top-level test's run in a stream.
type result struct {
	Package, Test string
	Seconds       float64
	// Note is "", "failed" or "unfinished".
	Note string
}

// span is the time from a stream's first event to its last.
type span struct {
	Stream  string
	Seconds float64
}

// collector collects the top-level tests of a stream as they end.
type collector struct {
	results     []result
	first, last time.Time
	// started is when each running top-level test started, by "package
	// test".
	started map[string]time.Time
}

// event takes one event of the stream.
func (s *collector) event(e event) {
	if e.Time.IsZero() {
		// A build event.
		return
	}
	if s.first.IsZero() {
		s.first = e.Time
	}
	s.last = e.Time
	pkg := strings.TrimPrefix(e.Package, module)
	switch {
	case e.Action == actionRun && !strings.Contains(e.Test, "/"):
		s.started[e.Package+" "+e.Test] = e.Time
	case e.ends(true):
		delete(s.started, e.Package+" "+e.Test)
		r := result{Package: pkg, Test: e.Test, Seconds: e.Elapsed}
		if e.Action == actionFail {
			r.Note = "failed"
		}
		s.results = append(s.results, r)
	case e.Test == "" && e.ends(false):
		for k, at := range s.started {
			if p, test, _ := strings.Cut(k, " "); p == e.Package {
				s.results = append(s.results, result{Package: pkg, Test: test, Seconds: e.Time.Sub(at).Seconds(), Note: "unfinished"})
				delete(s.started, k)
			}
		}
	}
}

// readStream returns the top-level tests of the stream in file, as they
// ended, and its span. Its errors name the file and the line.
func readStream(file string) ([]result, span, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, span{}, err
	}
	s := &collector{started: map[string]time.Time{}}
	for n, line := range bytes.Split(b, []byte("\n")) {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var e event
		if err := json.Unmarshal(line, &e); err != nil {
			return nil, span{}, fmt.Errorf("%s:%d: not a go test -json event: %w", file, n+1, err)
		}
		s.event(e)
	}
	return s.results, span{Stream: filepath.Base(file), Seconds: s.last.Sub(s.first).Seconds()}, nil
}

// readWaits returns what each test waits on, by "package test", from the
// waits file. Its errors name the file and the line.
func readWaits(file string) (map[string]string, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	waits := map[string]string{}
	for n, line := range strings.Split(string(b), "\n") {
		if line = strings.TrimSpace(line); line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		if len(f) < 3 || strings.Contains(line, "|") {
			return nil, fmt.Errorf("%s:%d: want PACKAGE TEST WHAT IT WAITS ON, without a |", file, n+1)
		}
		waits[f[0]+" "+f[1]] = strings.Join(f[2:], " ")
	}
	return waits, nil
}

// slowest writes the spans of the streams in files and the table of their
// n slowest tests (see the package's doc) to w.
func slowest(w io.Writer, files []string, waitsFile string, n int) error {
	waits, err := readWaits(waitsFile)
	if err != nil {
		return err
	}
	var (
		all   []result
		spans []span
	)
	for _, f := range files {
		r, s, err := readStream(f)
		if err != nil {
			return err
		}
		all = append(all, r...)
		spans = append(spans, s)
	}
	slices.SortStableFunc(all, func(a, b result) int {
		switch {
		case a.Seconds > b.Seconds:
			return -1
		case a.Seconds < b.Seconds:
			return 1
		}
		return strings.Compare(a.Package+" "+a.Test, b.Package+" "+b.Test)
	})
	var out strings.Builder
	out.WriteString("| stream | seconds, first to last event |\n|---|---:|\n")
	for _, s := range spans {
		fmt.Fprintf(&out, "| %s | %.0f |\n", s.Stream, s.Seconds)
	}
	out.WriteString("\n| seconds | package | test | waits on |\n|---:|---|---|---|\n")
	for _, r := range all[:min(n, len(all))] {
		test := r.Test
		if r.Note != "" {
			test += " (" + r.Note + ")"
		}
		fmt.Fprintf(&out, "| %.1f | %s | %s | %s |\n", r.Seconds, r.Package, test, waits[r.Package+" "+r.Test])
	}
	_, err = io.WriteString(w, out.String())
	return err
}
