package contract

import (
	"crypto/sha256"
	"encoding/hex"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestConfigHash(t *testing.T) {
	sum := func(parts ...string) string {
		var b []byte
		for _, p := range parts {
			b = append(b, p...)
		}
		s := sha256.Sum256(b)
		return hex.EncodeToString(s[:])
	}
	type args struct{ swanctlConf, natRules, strongSwanConf, xfrmInterfaces string }
	cases := map[string]struct {
		reason string
		args   args
		want   string
	}{
		"SwanctlAndNAT": {
			reason: "Without a strongswan.conf fragment or XFRM interfaces the hash is that of the first providers, whose Gateways must keep their hash across an upgrade: swanctl.conf, a zero byte, nat.nft.",
			args:   args{swanctlConf: "connections {}", natRules: "table ip ipsecgw {}"},
			want:   sum("connections {}", "\x00", "table ip ipsecgw {}"),
		},
		"StrongSwanConf": {
			reason: "A strongswan.conf fragment follows after another zero byte.",
			args:   args{swanctlConf: "c", natRules: "n", strongSwanConf: "s"},
			want:   sum("c", "\x00", "n", "\x00", "s"),
		},
		"XFRMInterfaces": {
			reason: "The XFRM interfaces follow after a one byte, so that the same bytes as a fragment hash otherwise.",
			args:   args{swanctlConf: "c", natRules: "n", xfrmInterfaces: "s"},
			want:   sum("c", "\x00", "n", "\x01", "s"),
		},
		"Both": {
			reason: "With both, the fragment comes before the XFRM interfaces.",
			args:   args{swanctlConf: "c", natRules: "n", strongSwanConf: "s", xfrmInterfaces: "x"},
			want:   sum("c", "\x00", "n", "\x00", "s", "\x01", "x"),
		},
		"Boundary": {
			reason: "Bytes moved from swanctl.conf to nat.nft change the hash: the zero byte separates the files.",
			args:   args{swanctlConf: "cn", natRules: ""},
			want:   sum("cn", "\x00"),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			a := tc.args
			got := ConfigHash([]byte(a.swanctlConf), []byte(a.natRules), []byte(a.strongSwanConf), []byte(a.xfrmInterfaces))
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\nConfigHash: -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestArg(t *testing.T) {
	cases := map[string]struct {
		reason      string
		flag, value string
		want        string
	}{
		"Value": {
			reason: "The agent's flag package takes --name=value as one argument.",
			flag:   FlagConfigDir, value: ConfigDir,
			want: "--config-dir=/etc/ipsecgw/config",
		},
		"Script": {
			reason: "A value with spaces and newlines stays one argument: the pod template passes no shell.",
			flag:   FlagAddressDown, value: "ip address flush dev net1\nip link set net1 down\n",
			want: "--address-down=ip address flush dev net1\nip link set net1 down\n",
		},
		"Prefix": {
			reason: "An empty value is the prefix by which workload.LegacyTemplate finds the flag.",
			flag:   FlagSecret,
			want:   "--secret=",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, Arg(tc.flag, tc.value)); diff != "" {
				t.Errorf("%s\nArg: -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}
