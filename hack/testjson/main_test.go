package main

import (
	"bufio"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// stream is a `go test -json -timeout 2s ./...` run of the module in
// testdata/stream (testdata/README.md).
const stream = "testdata/stream.json"

func TestPrint(t *testing.T) {
	// Lines of testdata/stream.json.
	const (
		uStart    = `{"Action":"start","Package":"github.com/ipsecgw/provider-ipsec/u"}`
		uRun      = `{"Action":"run","Package":"github.com/ipsecgw/provider-ipsec/u","Test":"TestPasses"}`
		uRunOut   = `{"Action":"output","Package":"github.com/ipsecgw/provider-ipsec/u","Test":"TestPasses","Output":"=== RUN   TestPasses\n"}`
		uLog      = `{"Action":"output","Package":"github.com/ipsecgw/provider-ipsec/u","Test":"TestPasses","Output":"    u_test.go:6: only with -v\n"}`
		uPassOut  = `{"Action":"output","Package":"github.com/ipsecgw/provider-ipsec/u","Test":"TestPasses","Output":"--- PASS: TestPasses (0.00s)\n"}`
		uPass     = `{"Action":"pass","Package":"github.com/ipsecgw/provider-ipsec/u","Test":"TestPasses","Elapsed":0}`
		uPASS     = `{"Action":"output","Package":"github.com/ipsecgw/provider-ipsec/u","Output":"PASS\n"}`
		uOk       = `{"Action":"output","Package":"github.com/ipsecgw/provider-ipsec/u","Output":"ok  \tgithub.com/ipsecgw/provider-ipsec/u\t0.002s\n"}`
		uEnd      = `{"Action":"pass","Package":"github.com/ipsecgw/provider-ipsec/u","Elapsed":0.003}`
		pRun      = `{"Action":"output","Package":"github.com/ipsecgw/provider-ipsec/p","Test":"TestFails","Output":"=== RUN   TestFails\n"}`
		pSubRun   = `{"Action":"output","Package":"github.com/ipsecgw/provider-ipsec/p","Test":"TestFails/Bad","Output":"=== RUN   TestFails/Bad\n"}`
		pSubLog   = `{"Action":"output","Package":"github.com/ipsecgw/provider-ipsec/p","Test":"TestFails/Bad","Output":"    p_test.go:21: went wrong\n"}`
		pSubOut   = `{"Action":"output","Package":"github.com/ipsecgw/provider-ipsec/p","Test":"TestFails/Bad","Output":"--- FAIL: TestFails/Bad (0.10s)\n"}`
		pSubFail  = `{"Action":"fail","Package":"github.com/ipsecgw/provider-ipsec/p","Test":"TestFails/Bad","Elapsed":0.1}`
		pFailOut  = `{"Action":"output","Package":"github.com/ipsecgw/provider-ipsec/p","Test":"TestFails","Output":"--- FAIL: TestFails (0.20s)\n"}`
		pFail     = `{"Action":"fail","Package":"github.com/ipsecgw/provider-ipsec/p","Test":"TestFails","Elapsed":0.2}`
		pFAIL     = `{"Action":"output","Package":"github.com/ipsecgw/provider-ipsec/p","Output":"FAIL\n"}`
		pFailLine = `{"Action":"output","Package":"github.com/ipsecgw/provider-ipsec/p","Output":"FAIL\tgithub.com/ipsecgw/provider-ipsec/p\t0.504s\n"}`
		pEnd      = `{"Action":"fail","Package":"github.com/ipsecgw/provider-ipsec/p","Elapsed":0.505}`
		rRun      = `{"Action":"output","Package":"github.com/ipsecgw/provider-ipsec/r","Test":"TestHangs","Output":"=== RUN   TestHangs\n"}`
		rPanic    = `{"Action":"output","Package":"github.com/ipsecgw/provider-ipsec/r","Test":"TestHangs","Output":"panic: test timed out after 2s\n"}`
		rFailLine = `{"Action":"output","Package":"github.com/ipsecgw/provider-ipsec/r","Output":"FAIL\tgithub.com/ipsecgw/provider-ipsec/r\t2.006s\n"}`
		rEnd      = `{"Action":"fail","Package":"github.com/ipsecgw/provider-ipsec/r","Elapsed":2.006}`
		qBuild    = `{"ImportPath":"github.com/ipsecgw/provider-ipsec/q [github.com/ipsecgw/provider-ipsec/q.test]","Action":"build-output","Output":"q/q_test.go:5:33: undefined: undefined\n"}`
		qBuildEnd = `{"ImportPath":"github.com/ipsecgw/provider-ipsec/q [github.com/ipsecgw/provider-ipsec/q.test]","Action":"build-fail"}`
	)
	lines := func(l ...string) string { return strings.Join(l, "\n") + "\n" }
	cases := map[string]struct {
		reason  string
		stream  string
		verbose bool
		want    string
	}{
		"PassedPackage": {
			reason: "A passed package prints its ok line alone, as go test does: not its tests' output nor the PASS line.",
			stream: lines(uStart, uRun, uRunOut, uLog, uPassOut, uPass, uPASS, uOk, uEnd),
			want:   "ok  \tgithub.com/ipsecgw/provider-ipsec/u\t0.002s\n",
		},
		"FailedSubtest": {
			reason: "A failed test prints all its output as -v printed it, its subtests' too, then its package's FAIL lines.",
			stream: lines(pRun, pSubRun, pSubLog, pSubOut, pSubFail, pFailOut, pFail, pFAIL, pFailLine, pEnd),
			want: "=== RUN   TestFails\n=== RUN   TestFails/Bad\n    p_test.go:21: went wrong\n--- FAIL: TestFails/Bad (0.10s)\n" +
				"--- FAIL: TestFails (0.20s)\nFAIL\nFAIL\tgithub.com/ipsecgw/provider-ipsec/p\t0.504s\n",
		},
		"TimedOut": {
			reason: "A test still running when its package fails (a time-out's panic) prints before the package's FAIL line.",
			stream: lines(rRun, rPanic, rFailLine, rEnd),
			want:   "=== RUN   TestHangs\npanic: test timed out after 2s\nFAIL\tgithub.com/ipsecgw/provider-ipsec/r\t2.006s\n",
		},
		"BuildFailed": {
			reason: "A build's errors print as go test prints them.",
			stream: lines(qBuild, qBuildEnd),
			want:   "q/q_test.go:5:33: undefined: undefined\n",
		},
		"NotJSON": {
			reason: "A line that is no event, such as one a tool printed into the pipe, is copied as it is, even without a newline at the end.",
			stream: "go: downloading example.com/m v1.0.0\n" + uOk + "\nno newline",
			want:   "go: downloading example.com/m v1.0.0\nok  \tgithub.com/ipsecgw/provider-ipsec/u\t0.002s\nno newline",
		},
		"Verbose": {
			reason: "With -v every output prints as it comes, a passed test's too.",
			stream: lines(uStart, uRun, uRunOut, uLog, uPassOut, uPass, uPASS, uOk, uEnd),
			want: "=== RUN   TestPasses\n    u_test.go:6: only with -v\n--- PASS: TestPasses (0.00s)\nPASS\n" +
				"ok  \tgithub.com/ipsecgw/provider-ipsec/u\t0.002s\n",
			verbose: true,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var got strings.Builder
			if err := printStream(strings.NewReader(tc.stream), &got, tc.verbose); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got.String()); diff != "" {
				t.Errorf("%s\nprintStream: -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestSlowest(t *testing.T) {
	waits := filepath.Join(t.TempDir(), "waits.txt")
	if err := os.WriteFile(waits, []byte("# comment\n\np TestSlow a fixed sleep of 300 ms\nr TestHangs time.Sleep(time.Minute)\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := map[string]struct {
		reason string
		files  []string
		n      int
		want   string
	}{
		"Three": {
			reason: "The slowest tests come first, a test its package's time-out ended with its time up to that end; subtests and build events do not count.",
			files:  []string{stream},
			n:      3,
			want: "| stream | seconds, first to last event |\n|---|---:|\n| stream.json | 2 |\n\n" +
				"| seconds | package | test | waits on |\n|---:|---|---|---|\n" +
				"| 2.1 | r | TestHangs (unfinished) | time.Sleep(time.Minute) |\n" +
				"| 0.3 | p | TestSlow | a fixed sleep of 300 ms |\n" +
				"| 0.2 | p | TestFails (failed) |  |\n",
		},
		"All": {
			reason: "N larger than the tests lists them all; two streams each have their span and their tests in one table, equal times in the order of package and name.",
			files:  []string{stream, stream},
			n:      100,
			want: "| stream | seconds, first to last event |\n|---|---:|\n| stream.json | 2 |\n| stream.json | 2 |\n\n" +
				"| seconds | package | test | waits on |\n|---:|---|---|---|\n" +
				"| 2.1 | r | TestHangs (unfinished) | time.Sleep(time.Minute) |\n" +
				"| 2.1 | r | TestHangs (unfinished) | time.Sleep(time.Minute) |\n" +
				"| 0.3 | p | TestSlow | a fixed sleep of 300 ms |\n" +
				"| 0.3 | p | TestSlow | a fixed sleep of 300 ms |\n" +
				"| 0.2 | p | TestFails (failed) |  |\n" +
				"| 0.2 | p | TestFails (failed) |  |\n" +
				"| 0.0 | p | TestFast |  |\n" +
				"| 0.0 | p | TestFast |  |\n" +
				"| 0.0 | p | TestSkipped |  |\n" +
				"| 0.0 | p | TestSkipped |  |\n" +
				"| 0.0 | r | TestQuick |  |\n" +
				"| 0.0 | r | TestQuick |  |\n" +
				"| 0.0 | u | TestPasses |  |\n" +
				"| 0.0 | u | TestPasses |  |\n",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var got strings.Builder
			if err := slowest(&got, tc.files, waits, tc.n); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got.String()); diff != "" {
				t.Errorf("%s\nslowest: -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestReadErrors(t *testing.T) {
	cases := map[string]struct {
		reason string
		waits  string
		stream string
		want   string
	}{
		"WaitsWithoutText": {
			reason: "A waits line needs a package, a test and what it waits on.",
			waits:  "test/e2e TestRunbook\n",
			want:   "waits.txt:1: want PACKAGE TEST WHAT IT WAITS ON, without a |",
		},
		"WaitsWithPipe": {
			reason: "A | would break the Markdown table.",
			waits:  "# c\ntest/e2e TestRunbook a | b\n",
			want:   "waits.txt:2: want PACKAGE TEST WHAT IT WAITS ON, without a |",
		},
		"NotAStream": {
			reason: "A stream that is no go test -json output is refused, naming the line: the table would be wrong.",
			waits:  "p TestSlow a sleep\n",
			stream: `{"Action":"start","Package":"p"}` + "\nok  \tp\t0.1s\n",
			want:   "stream.json:2: not a go test -json event",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			waits, s := filepath.Join(dir, "waits.txt"), filepath.Join(dir, "stream.json")
			if err := os.WriteFile(waits, []byte(tc.waits), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(s, []byte(tc.stream), 0o600); err != nil {
				t.Fatal(err)
			}
			err := slowest(&strings.Builder{}, []string{s}, waits, 20)
			got := ""
			if err != nil {
				got = strings.TrimPrefix(err.Error(), dir+string(filepath.Separator))
				got, _, _ = strings.Cut(got, ": invalid")
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\nslowest's error: -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

// TestWaitsNameTests fails when waits.txt names a test that its package
// no longer has: an annotation left behind by a rename or a removal.
func TestWaitsNameTests(t *testing.T) {
	waits, err := readWaits("waits.txt")
	if err != nil {
		t.Fatal(err)
	}
	if len(waits) == 0 {
		t.Fatal("waits.txt names no test")
	}
	for k := range waits {
		pkg, test, _ := strings.Cut(k, " ")
		files, err := filepath.Glob(filepath.Join("..", "..", filepath.FromSlash(pkg), "*_test.go"))
		if err != nil {
			t.Fatal(err)
		}
		def := regexp.MustCompile(`^func ` + regexp.QuoteMeta(test) + `\(t \*testing\.T\)`)
		found := false
		for _, f := range files {
			found = found || hasLine(t, f, def)
		}
		if !found {
			t.Errorf("waits.txt: %s has no test %s", pkg, test)
		}
	}
}

// hasLine says whether a line of file matches re.
func hasLine(t *testing.T, file string, re *regexp.Regexp) bool {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	s.Buffer(nil, 1<<20)
	for s.Scan() {
		if re.MatchString(s.Text()) {
			return true
		}
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	return false
}
