package apply

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/strongswan/govici/vici"

	"github.com/ipsecgw/provider-ipsec/internal/swanctl"
)

// flatten lists every setting of m as path = value.
func flatten(m *vici.Message, prefix string, out map[string]string) map[string]string {
	for _, k := range m.Keys() {
		switch v := m.Get(k).(type) {
		case *vici.Message:
			flatten(v, prefix+k+".", out)
		default:
			out[prefix+k] = fmt.Sprint(v)
		}
	}
	return out
}

func TestInert(t *testing.T) {
	cases := map[string]struct {
		reason string
		conf   string
		want   map[string]string
	}{
		"StartActions": {
			reason: "Every child's start_action becomes none; everything else stays.",
			conf: `connections {
  a {
    remote_addrs = 192.0.2.1
    children {
      a-1 {
        start_action = start
        esp_proposals = aes128-sha256
      }
      a-2 {
        start_action = trap
      }
    }
  }
}`,
			want: map[string]string{
				"a.remote_addrs":               "[192.0.2.1]",
				"a.children.a-1.start_action":  "none",
				"a.children.a-1.esp_proposals": "[aes128-sha256]",
				"a.children.a-2.start_action":  "none",
			},
		},
		"NoStartAction": {
			reason: "A child without start_action keeps none (charon's default); sections named start_action are left alone.",
			conf: `connections {
  start_action {
    children {
      start_action {
        local_ts = 10.0.0.0/24
      }
    }
  }
}`,
			want: map[string]string{"start_action.children.start_action.local_ts": "[10.0.0.0/24]"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			doc, err := swanctl.Parse([]byte(tc.conf))
			if err != nil {
				t.Fatal(err)
			}
			conns, err := swanctl.LoadConns(doc)
			if err != nil {
				t.Fatal(err)
			}
			before := flatten(conns[0].Message, "", map[string]string{})
			got := flatten(inert(conns[0].Message, nil), "", map[string]string{})
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\ninert(): -want, +got:\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(before, flatten(conns[0].Message, "", map[string]string{})); diff != "" {
				t.Errorf("%s\ninert() changed its input: -before, +after:\n%s", tc.reason, diff)
			}
		})
	}
}
