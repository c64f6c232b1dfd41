package main

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/ipsecgw/provider-ipsec/internal/contract"
)

func TestParseFlags(t *testing.T) {
	defaults := options{
		configDir: "/etc/ipsecgw/config", secretsDir: "/etc/ipsecgw/secrets", viciSocket: "/var/run/charon/charon.vici",
		metricsAddr: ":9100", healthAddr: ":9101", interval: 2 * time.Second, poll: 10 * time.Second,
		publishInterval: 5 * time.Second, reinitiateAfterSeconds: 30, unansweredAfterSeconds: 10, validate: true, iface: "net1",
		podName: "vpn-5d9f-abcde", nodeName: "node-2",
	}
	cases := map[string]struct {
		reason  string
		args    []string
		env     string
		want    options
		wantErr string
	}{
		"Defaults": {
			reason: "No flags: the paths the gateway pod mounts.",
			want:   defaults,
		},
		"AsThePodRunsIt": {
			reason: "The arguments internal/workload gives the agent container, with the namespace from the downward API.",
			args:   []string{"--config-dir=/c", "--secrets-dir=/s", "--vici-socket=/v.sock", "--status-configmap=vpn-status"},
			env:    "tenant-a",
			want: func() options {
				o := defaults
				o.configDir, o.secretsDir, o.viciSocket, o.statusConfigMap, o.namespace = "/c", "/s", "/v.sock", "vpn-status", "tenant-a"
				return o
			}(),
		},
		"EveryContractFlag": {
			reason: "Every flag the provider may set (internal/contract) is one the agent knows, and sets its option.",
			args: []string{
				contract.Arg(contract.FlagConfigDir, "/c"), contract.Arg(contract.FlagSecretsDir, "/s"),
				contract.Arg(contract.FlagViciSocket, "/v.sock"), contract.Arg(contract.FlagStatusConfigMap, "vpn-status"),
				contract.Arg(contract.FlagConfigConfigMap, "vpn-config"), contract.Arg(contract.FlagSecret, "vpn-secrets"),
				contract.Arg(contract.FlagLease, "vpn"), contract.Arg(contract.FlagInterface, "net9"),
				contract.Arg(contract.FlagAddress, "10.20.0.10"),
				contract.Arg(contract.FlagAddressUp, "ip link set net9 up"), contract.Arg(contract.FlagAddressDown, "ip link set net9 down"),
			},
			env: "tenant-a",
			want: func() options {
				o := defaults
				o.configDir, o.secretsDir, o.viciSocket, o.statusConfigMap, o.namespace = "/c", "/s", "/v.sock", "vpn-status", "tenant-a"
				o.configMap, o.secret, o.lease, o.iface = "vpn-config", "vpn-secrets", "vpn", "net9"
				o.address, o.addressUp, o.addressDown = "10.20.0.10", "ip link set net9 up", "ip link set net9 down"
				return o
			}(),
		},
		"WatchdogOff": {
			reason: "0 turns the re-initiation of tunnels that stay down off.",
			args:   []string{"--reinitiate-after-seconds=0"},
			want: func() options {
				o := defaults
				o.reinitiateAfterSeconds = 0
				return o
			}(),
		},
		"WatchdogNegative": {
			reason:  "A negative bound is refused, not taken as off.",
			args:    []string{"--reinitiate-after-seconds=-5"},
			wantErr: "--reinitiate-after-seconds must be 0 or more, not -5",
		},
		"UnansweredOff": {
			reason: "0 turns the check that peers answer off.",
			args:   []string{"--unanswered-after-seconds=0"},
			want: func() options {
				o := defaults
				o.unansweredAfterSeconds = 0
				return o
			}(),
		},
		"UnansweredNegative": {
			reason:  "A negative bound is refused, not taken as off.",
			args:    []string{"--unanswered-after-seconds=-1"},
			wantErr: "--unanswered-after-seconds must be 0 or more, not -1",
		},
		"StatusWithoutNamespace": {
			reason:  "A status ConfigMap needs a namespace.",
			args:    []string{"--status-configmap=vpn-status"},
			wantErr: "--status-configmap needs --namespace or $POD_NAMESPACE",
		},
		"ActiveStandby": {
			reason: "The arguments of a pod of replicas 2, with its name and node from the downward API.",
			args:   []string{"--lease=vpn", "--address=10.20.0.10", "--address-up=ip link set net1 up", "--address-down=ip link set net1 down"},
			env:    "tenant-a",
			want: func() options {
				o := defaults
				o.namespace, o.lease = "tenant-a", "vpn"
				o.address, o.addressUp, o.addressDown = "10.20.0.10", "ip link set net1 up", "ip link set net1 down"
				return o
			}(),
		},
		"LeaseWithoutAddress": {
			reason:  "An elected pod must know the address it holds while active.",
			args:    []string{"--lease=vpn", "--address-up=up", "--address-down=down"},
			env:     "tenant-a",
			wantErr: `--address "" is not an IP address`,
		},
		"LeaseWithoutScripts": {
			reason:  "An elected pod must be able to take the address and give it up.",
			args:    []string{"--lease=vpn", "--address=10.20.0.10"},
			env:     "tenant-a",
			wantErr: "--lease needs --namespace, --pod-name, --address-up and --address-down",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Setenv("POD_NAMESPACE", tc.env)
			t.Setenv("POD_NAME", "vpn-5d9f-abcde")
			t.Setenv("NODE_NAME", "node-2")
			got, err := parseFlags(tc.args)
			gotErr := ""
			if err != nil {
				gotErr = err.Error()
			}
			if diff := cmp.Diff(tc.wantErr, gotErr); diff != "" {
				t.Fatalf("%s\nparseFlags(): -want error, +got error:\n%s", tc.reason, diff)
			}
			if err == nil {
				if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(options{})); diff != "" {
					t.Errorf("%s\nparseFlags(): -want, +got:\n%s", tc.reason, diff)
				}
			}
		})
	}
}
