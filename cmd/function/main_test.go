package main

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseFlags(t *testing.T) {
	defaults := options{network: "tcp", address: ":9443", maxRecvB: 4 * 1024 * 1024}
	cases := map[string]struct {
		reason  string
		args    []string
		want    options
		wantErr string
	}{
		"Defaults": {
			reason: "No flags give function-template-go's defaults: TCP on :9443, requests of up to 4 MB.",
			want:   defaults,
		},
		"MaxRecvMessageSizeInMB": {
			reason: "--max-recv-message-size is in MB, as function-template-go's: 16 accepts requests of 16 MiB.",
			args:   []string{"--max-recv-message-size=16"},
			want: func() options {
				o := defaults
				o.maxRecvB = 16 * 1024 * 1024
				return o
			}(),
		},
		"TemplateFlags": {
			reason: "The template's other flags are taken with their names.",
			args:   []string{"--debug", "--network=unix", "--address=/tmp/fn.sock", "--tls-certs-dir=/certs", "--insecure"},
			want: func() options {
				o := defaults
				o.debug, o.network, o.address, o.certs, o.insec = true, "unix", "/tmp/fn.sock", "/certs", true
				return o
			}(),
		},
		"ZeroMaxRecvMessageSize": {
			reason:  "A largest request of 0 MB would refuse every request, and is refused.",
			args:    []string{"--max-recv-message-size=0"},
			wantErr: "cannot accept requests of at most 0 MB: give --max-recv-message-size at least 1",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Setenv("TLS_SERVER_CERTS_DIR", "")
			got, err := parseFlags(tc.args)
			gotErr := ""
			if err != nil {
				gotErr = err.Error()
			}
			if diff := cmp.Diff(tc.wantErr, gotErr); diff != "" {
				t.Fatalf("%s\nparseFlags(%q): -want error, +got error:\n%s", tc.reason, tc.args, diff)
			}
			if err != nil {
				return
			}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(options{})); diff != "" {
				t.Errorf("%s\nparseFlags(%q): -want, +got:\n%s", tc.reason, tc.args, diff)
			}
		})
	}
}
