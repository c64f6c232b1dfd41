package nat

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// run is one command a fake Runner was asked to run.
type run struct {
	Name  string
	Args  []string
	Stdin string
}

// golden reads a rendered nat.nft of the renderer's golden gateways.
func golden(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "render", "testdata", name, "nat.nft"))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestApply(t *testing.T) {
	a, b := golden(t, "single-tunnel"), golden(t, "nat-exposures")
	cases := map[string]struct {
		reason  string
		opts    []Option
		scripts [][]byte
		// fail makes nft fail on the script with this index.
		fail        int
		want        []run
		wantApplied []bool
		wantErr     []string
	}{
		"LoadsWithNftFromStdin": {
			reason:      "A script is loaded with one nft -f - run, the script on standard input.",
			scripts:     [][]byte{a},
			fail:        -1,
			want:        []run{{Name: "nft", Args: []string{"-f", "-"}, Stdin: string(a)}},
			wantApplied: []bool{true},
		},
		"SkipsUnchanged": {
			reason:      "A script identical to the last one loaded is not loaded again; a changed one is.",
			scripts:     [][]byte{a, a, b, a},
			fail:        -1,
			want:        []run{{"nft", []string{"-f", "-"}, string(a)}, {"nft", []string{"-f", "-"}, string(b)}, {"nft", []string{"-f", "-"}, string(a)}},
			wantApplied: []bool{true, false, true, true},
		},
		"RetriesAfterFailure": {
			reason:      "A script nft refused is loaded again next time.",
			scripts:     [][]byte{a, a},
			fail:        0,
			want:        []run{{"nft", []string{"-f", "-"}, string(a)}, {"nft", []string{"-f", "-"}, string(a)}},
			wantApplied: []bool{false, true},
			wantErr:     []string{"nft -f", "Error: syntax"},
		},
		"CommandPrefix": {
			reason:      "WithCommand puts nft behind another command, such as nsenter.",
			opts:        []Option{WithCommand("nsenter", "--net=/proc/1/ns/net", "nft")},
			scripts:     [][]byte{a},
			fail:        -1,
			want:        []run{{"nsenter", []string{"--net=/proc/1/ns/net", "nft", "-f", "-"}, string(a)}},
			wantApplied: []bool{true},
		},
		"RefusesOtherTable": {
			reason:      "A script touching another table never reaches nft.",
			scripts:     [][]byte{[]byte("table ip ipsecgw {\n}\nflush ruleset\n")},
			fail:        -1,
			wantApplied: []bool{false},
			wantErr:     []string{"line 3", "only table ip ipsecgw"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var got []run
			var gotApplied []bool
			var errs []string
			r := func(_ context.Context, stdin []byte, name string, args ...string) ([]byte, error) {
				got = append(got, run{name, args, string(stdin)})
				if len(got)-1 == tc.fail {
					return []byte("Error: syntax error\n"), errors.New("exit status 1")
				}
				return nil, nil
			}
			ap := New(append([]Option{WithRunner(r)}, tc.opts...)...)
			for _, s := range tc.scripts {
				applied, err := ap.Apply(context.Background(), s)
				gotApplied = append(gotApplied, applied)
				if err != nil {
					errs = append(errs, err.Error())
				}
			}
			if diff := cmp.Diff(tc.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("%s\nnft runs: -want, +got:\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(tc.wantApplied, gotApplied); diff != "" {
				t.Errorf("%s\nApply(...) applied: -want, +got:\n%s", tc.reason, diff)
			}
			all := strings.Join(errs, "\n")
			if len(tc.wantErr) == 0 && all != "" {
				t.Errorf("%s\nunexpected errors: %s", tc.reason, all)
			}
			for _, s := range tc.wantErr {
				if !strings.Contains(all, s) {
					t.Errorf("%s\nerrors %q do not hold %q", tc.reason, all, s)
				}
			}
		})
	}
}

func TestCheck(t *testing.T) {
	cases := map[string]struct {
		script  string
		wantErr string
	}{
		"Golden":         {script: "# c\ntable ip ipsecgw {\n}\ndelete table ip ipsecgw\ntable ip ipsecgw {\n\tchain p {\n\t\tip saddr { 1.2.3.0/24, 1.2.4.0/24 } dnat to 1.1.1.1 # x }\n\t}\n}\n"},
		"OtherTable":     {script: "table ip nat {\n}\n", wantErr: "line 1: only table ip ipsecgw"},
		"OtherFamily":    {script: "table inet ipsecgw {\n}\n", wantErr: "line 1"},
		"DeleteOther":    {script: "delete table ip filter\n", wantErr: "line 1"},
		"Include":        {script: "include \"/etc/nftables.conf\"\n", wantErr: "line 1"},
		"AfterBlock":     {script: "table ip ipsecgw {\n}\nadd rule ip filter input drop\n", wantErr: "line 3"},
		"Unclosed":       {script: "table ip ipsecgw {\n", wantErr: "not closed"},
		"ExtraBrace":     {script: "table ip ipsecgw {\n}\n}\n", wantErr: "line 3"},
		"QuotedBrace":    {script: "table ip ipsecgw {\n\tchain p {\n\t\tiifname \"}\" accept\n\t}\n}\n"},
		"UnclosedQuotes": {script: "table ip ipsecgw {\n\"\n}\n", wantErr: "line 2: unterminated"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			err := Check([]byte(tc.script))
			got := ""
			if err != nil {
				got = err.Error()
			}
			if tc.wantErr == "" && got != "" || tc.wantErr != "" && !strings.Contains(got, tc.wantErr) {
				t.Errorf("Check(...): got error %q, want one holding %q", got, tc.wantErr)
			}
		})
	}
}

func TestGoldenScriptsPassCheck(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "..", "render", "testdata", "*", "nat.nft"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no golden nat.nft (err %v)", err)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := Check(b); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
}
