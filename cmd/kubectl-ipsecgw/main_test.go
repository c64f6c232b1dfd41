package main

import (
	"bytes"
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestImportKeepsSecretsInSecrets runs the command on the fleet case of
// internal/migrate and greps everything it writes, except the Secret
// manifests, for the PSKs (as written and base64-encoded).
func TestImportKeepsSecretsInSecrets(t *testing.T) {
	conf := filepath.Join("..", "..", "internal", "migrate", "testdata", "stroke-fleet", "ipsec.conf")
	report := filepath.Join(t.TempDir(), "report.json")
	psks := []string{`branch-a \`, "branch-b-key", "branch-c-key", "catch-all-not-picked", "branch-c-later-entry-wins"}
	cases := map[string]struct {
		reason string
		args   []string
		code   int
	}{
		"TextReport": {
			reason: "the report on stderr; a refused local identity exits 3",
			args:   []string{"import", "--name", "vm-gw", "--namespace", "tenant-a", "--floating-ip", "203.0.113.10", "--vm-address", "10.20.0.5", conf},
			code:   exitRefused,
		},
		"JSONReportFile": {
			reason: "the JSON report in a file",
			args:   []string{"import", "--name", "vm-gw", "--floating-ip", "203.0.113.10", "--vm-address", "10.20.0.5", "-o", "json", "--report", report, conf},
			code:   exitRefused,
		},
		"BadSecrets": {
			reason: "an unreadable secrets file is an error naming the file, not a secret",
			args:   []string{"import", "--name", "vm-gw", "--floating-ip", "203.0.113.10", "--secrets", conf + ".missing", conf},
			code:   exitError,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(tc.args, &stdout, &stderr)
			if diff := cmp.Diff(tc.code, code); diff != "" {
				t.Fatalf("%s\nexit code: -want +got:\n%s\nstderr:\n%s", tc.reason, diff, stderr.String())
			}
			var rest []string
			for doc := range strings.SplitSeq(stdout.String(), "\n---\n") {
				if !strings.Contains(doc, "\nkind: Secret\n") {
					rest = append(rest, doc)
				}
			}
			rest = append(rest, stderr.String())
			if b, err := os.ReadFile(report); err == nil {
				rest = append(rest, string(b))
			}
			all := strings.Join(rest, "\n")
			for _, p := range psks {
				for _, form := range []string{p, base64.StdEncoding.EncodeToString([]byte(p))} {
					if strings.Contains(all, form) {
						t.Errorf("%s: the output outside the Secret manifests holds a PSK (%d bytes)", tc.reason, len(p))
					}
				}
			}
			if tc.code != exitError && !strings.Contains(stdout.String(), "kind: IPsecGateway") {
				t.Errorf("%s: no IPsecGateway on stdout", tc.reason)
			}
		})
	}
}
