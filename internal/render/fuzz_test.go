package render

import (
	"bytes"
	"encoding/hex"
	"slices"
	"strings"
	"testing"

	"github.com/ipsecgw/provider-ipsec/apis/cluster/gateway/v1alpha1"
	"github.com/ipsecgw/provider-ipsec/internal/swanctl"
)

// connectionKeys and childKeys are every key rendering may write.
var (
	connectionKeys = []string{"version", "local_addrs", "remote_addrs", "proposals", "rekey_time", "reauth_time",
		"dpd_delay", "dpd_timeout", "encap", "mobike", "fragmentation", "keyingtries", "unique"}
	childKeys = []string{"local_ts", "remote_ts", "esp_proposals", "rekey_time", "life_time", "dpd_action", "start_action", "close_action"}
)

// FuzzRenderStructure feeds tenant-controlled strings into a gateway and
// asserts that whatever renders parses back into exactly the structure the
// spec asked for: one connection per tunnel, only known keys, the peer's
// address and identity as given, and one secret per tunnel that decodes to
// its PSK. No input may add a section, key or secret.
func FuzzRenderStructure(f *testing.F) {
	f.Add("branch-a", "198.51.100.7", "peer.example.com", "aes256-sha256-modp2048", "aes256gcm16", "100.64.0.0/24", "192.168.1.0/24", []byte("psk"))
	f.Add("x", "1.2.3.4\n}\nsecrets {", "a@b.c", "aes128-sha1-modp1024,x", "aes#1", "100.64.0.0/24", "10.0.0.0/8", []byte("}\n{\"#"))
	f.Add("a-b", "h", "h", "aes128gcm16-prfsha256-x25519", "chacha20poly1305-esn", "0.0.0.0/0", "192.168.0.0/16", []byte{0, 255})
	f.Fuzz(func(t *testing.T, name, peer, peerID, ike, esp, local, remote string, psk []byte) {
		in := valid()
		tn := &in.Spec.Tunnels[0]
		in.PSKs = map[string][]byte{name: psk, "b": []byte("psk-key-b")}
		tn.Name, tn.Peer.Address, tn.Peer.ID = name, peer, peerID
		tn.IKEProposals, tn.ESPProposals = []string{ike}, []string{esp}
		tn.TrafficSelectors[0] = v1alpha1.TrafficSelector{Local: v1alpha1.CIDR(local), Remote: v1alpha1.CIDR(remote)}
		files, err := Render(in)
		if err != nil {
			return
		}
		conf, err := swanctl.Parse(files.SwanctlConf)
		if err != nil {
			t.Fatalf("rendered swanctl.conf does not parse: %v\n%s", err, files.SwanctlConf)
		}
		if names := sectionNames(conf); !slices.Equal(names, []string{"connections"}) {
			t.Fatalf("top-level sections %v, want [connections]", names)
		}
		conns := conf.Lookup("connections")
		if names := sectionNames(conns); !slices.Equal(names, []string{name, "b"}) {
			t.Fatalf("connections %v, want [%s b]", names, name)
		}
		c := conns.Sections[0]
		assertKeys(t, c, connectionKeys)
		if v, _ := c.Get("remote_addrs"); v != peer {
			t.Fatalf("remote_addrs = %q, want %q", v, peer)
		}
		if v, _ := c.Lookup("remote").Get("id"); v != peerID && peerID != "" {
			t.Fatalf("remote.id = %q, want %q", v, peerID)
		}
		if names := sectionNames(c); !slices.Equal(names, []string{"local", "remote", "children"}) {
			t.Fatalf("sections of connection %s: %v", name, names)
		}
		for _, ch := range c.Lookup("children").Sections {
			assertKeys(t, ch, childKeys)
		}

		secrets, err := swanctl.Parse(files.Secrets)
		if err != nil {
			t.Fatalf("rendered secrets do not parse: %v", err)
		}
		s := secrets.Lookup("secrets")
		if names := sectionNames(s); !slices.Equal(names, []string{"ike-" + name, "ike-b"}) {
			t.Fatalf("secrets %v, want [ike-%s ike-b]", names, name)
		}
		v, _ := s.Sections[0].Get("secret")
		got, err := hex.DecodeString(strings.TrimPrefix(v, "0x"))
		if err != nil || !bytes.Equal(got, psk) {
			t.Fatalf("secret of %s does not decode to its PSK", name)
		}
	})
}

func sectionNames(s *swanctl.Section) []string {
	var out []string
	for _, sub := range s.Sections {
		out = append(out, sub.Name)
	}
	return out
}

func assertKeys(t *testing.T, s *swanctl.Section, allowed []string) {
	t.Helper()
	for _, kv := range s.Settings {
		if !slices.Contains(allowed, kv.Key) {
			t.Fatalf("section %s has key %q the renderer never writes", s.Name, kv.Key)
		}
	}
}
