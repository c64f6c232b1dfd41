//go:build integration

package integration

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ipsecgw/provider-ipsec/internal/contract"
)

// TestNATRulesLoad loads every golden gateway's nftables rules with a real
// nft, twice, in a network namespace of the test's own: both loads must
// succeed (the script replaces the table atomically) and the table must
// then hold every translation the script asked for, once.
func TestNATRulesLoad(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("loading nftables rules into a network namespace needs root")
	}
	if _, err := exec.LookPath("nft"); err != nil {
		t.Skip("nft is missing: apt-get install nftables")
	}
	files, err := filepath.Glob(filepath.Join(goldenDir, "*", "nat.nft"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no golden nat.nft files (err %v)", err)
	}
	for _, f := range files {
		t.Run(filepath.Base(filepath.Dir(f)), func(t *testing.T) {
			script := "nft -f \"$0\" && nft -f \"$0\" && nft list table ip " + contract.NATTable
			out, err := exec.Command("unshare", "--net", "sh", "-c", script, f).CombinedOutput()
			if err != nil {
				t.Fatalf("nft refused %s: %v\n%s", f, err, out)
			}
			want, _ := os.ReadFile(f)
			for _, line := range strings.Split(string(want), "\n") {
				if i := strings.Index(line, " dnat to "); i >= 0 {
					target := line[i+1:]
					if n := strings.Count(string(out), target); n != 1 {
						t.Errorf("table holds %q %d times after two loads, want once:\n%s", target, n, out)
					}
				}
			}
		})
	}
}
