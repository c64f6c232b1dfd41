package main

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestParseFlags(t *testing.T) {
	defaults := options{
		poll: time.Minute, sync: time.Hour, maxReconcileRate: 10, leaderElectionNS: "crossplane-system",
		metricsAddr: ":8080", healthAddr: ":8081", pollStateMetrics: 5 * time.Second, managementPolicies: true,
		requestTimeout: time.Minute, requestRate: 20, gatewayImage: "ipsecgw/gateway:v0.1.0",
	}
	cases := map[string]struct {
		reason  string
		args    []string
		want    options
		wantErr string
	}{
		"Defaults": {
			reason: "No flags give the defaults every Crossplane provider has.",
			want:   defaults,
		},
		"CrossplaneFlags": {
			reason: "The flags platform teams know from other providers are taken with their usual names.",
			args:   []string{"--poll=30s", "--sync", "10m", "--max-reconcile-rate=3", "--leader-election", "--debug"},
			want: func() options {
				o := defaults
				o.poll, o.sync, o.maxReconcileRate, o.leaderElection, o.debug = 30*time.Second, 10*time.Minute, 3, true, true
				return o
			}(),
		},
		"RequestRate": {
			reason: "The cap of each ProviderConfig's OpenStack requests is a flag.",
			args:   []string{"--openstack-request-rate=2.5"},
			want: func() options {
				o := defaults
				o.requestRate = 2.5
				return o
			}(),
		},
		"GatewayImage": {
			reason: "The image of Gateways that name none is a flag, so that a cluster pulls it from its own registry.",
			args:   []string{"--gateway-image=127.0.0.1:5000/ipsecgw/gateway:v0.1.0"},
			want: func() options {
				o := defaults
				o.gatewayImage = "127.0.0.1:5000/ipsecgw/gateway:v0.1.0"
				return o
			}(),
		},
		"EmptyGatewayImage": {
			reason:  "An empty gateway image would give pods no image and is refused.",
			args:    []string{"--gateway-image="},
			wantErr: `--gateway-image must be an image reference of 1 to 512 characters, not ""`,
		},
		"ZeroRequestRate": {
			reason:  "A request rate of zero would send nothing and is refused.",
			args:    []string{"--openstack-request-rate=0"},
			wantErr: "--openstack-request-rate must be positive, not 0",
		},
		"ZeroRate": {
			reason:  "A reconcile rate below one would stall every controller and is refused.",
			args:    []string{"--max-reconcile-rate=0"},
			wantErr: "--max-reconcile-rate must be at least 1, not 0",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Setenv("POD_NAMESPACE", "")
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
