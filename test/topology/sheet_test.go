package topology

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestSwanctlConf(t *testing.T) {
	cases := map[string]struct {
		reason string
		sheet  ClientSheet
		want   string
	}{
		"Minimal": {
			reason: "Identities default to the addresses, IKEv2 is the default version, and unset settings are left to strongSwan.",
			sheet: ClientSheet{
				Name: "vpn", LocalAddress: "198.51.100.2", RemoteAddress: "203.0.113.10", PSK: "s3cret",
				IKEProposals: []string{"aes256-sha256-modp2048"}, ESPProposals: []string{"aes256gcm16"},
				Children: []ClientChild{{Name: "net", LocalTS: []string{"192.168.10.0/24"}, RemoteTS: []string{"10.30.0.0/24"}}},
			},
			want: `connections {
  vpn {
    version = 2
    local_addrs = 198.51.100.2
    remote_addrs = 203.0.113.10
    proposals = aes256-sha256-modp2048
    local {
      auth = psk
      id = 198.51.100.2
    }
    remote {
      auth = psk
      id = 203.0.113.10
    }
    children {
      net {
        local_ts = 192.168.10.0/24
        remote_ts = 10.30.0.0/24
        esp_proposals = aes256gcm16
      }
    }
  }
}
secrets {
  ike-vpn {
    id-local = 198.51.100.2
    id-remote = 203.0.113.10
    secret = "s3cret"
  }
}
`,
		},
		"Full": {
			reason: "Every field of the sheet reaches its swanctl.conf setting, each child gets the ESP proposals and actions.",
			sheet: ClientSheet{
				Name: "vpn", IKEVersion: 1, LocalAddress: "198.51.100.2", RemoteAddress: "203.0.113.10",
				LocalID: "client.example", RemoteID: "203.0.113.10", PSK: "k",
				IKEProposals: []string{"aes128-sha1-modp2048", "aes256-sha256-modp2048"}, ESPProposals: []string{"aes128-sha1-modp2048"},
				Children: []ClientChild{
					{Name: "a", LocalTS: []string{"192.168.10.0/24"}, RemoteTS: []string{"10.30.0.0/24"}, RekeyTime: "20s", LifeTime: "30s"},
					{Name: "b", LocalTS: []string{"192.168.11.0/24"}, RemoteTS: []string{"10.31.0.0/24", "10.32.0.0/24"}},
				},
				StartAction: "start", DPDDelay: "5s", DPDAction: "restart", RekeyTime: "1h",
				KeyingTries: "0", CloseAction: "start", Unique: "replace",
			},
			want: `connections {
  vpn {
    version = 1
    local_addrs = 198.51.100.2
    remote_addrs = 203.0.113.10
    proposals = aes128-sha1-modp2048,aes256-sha256-modp2048
    rekey_time = 1h
    dpd_delay = 5s
    keyingtries = 0
    unique = replace
    local {
      auth = psk
      id = client.example
    }
    remote {
      auth = psk
      id = 203.0.113.10
    }
    children {
      a {
        local_ts = 192.168.10.0/24
        remote_ts = 10.30.0.0/24
        esp_proposals = aes128-sha1-modp2048
        rekey_time = 20s
        life_time = 30s
        start_action = start
        dpd_action = restart
        close_action = start
      }
      b {
        local_ts = 192.168.11.0/24
        remote_ts = 10.31.0.0/24,10.32.0.0/24
        esp_proposals = aes128-sha1-modp2048
        start_action = start
        dpd_action = restart
        close_action = start
      }
    }
  }
}
secrets {
  ike-vpn {
    id-local = client.example
    id-remote = 203.0.113.10
    secret = "k"
  }
}
`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, string(tc.sheet.SwanctlConf())); diff != "" {
				t.Errorf("%s\nSwanctlConf(): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}
