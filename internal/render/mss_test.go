package render

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/utils/ptr"

	"github.com/ipsecgw/provider-ipsec/apis/cluster/gateway/v1alpha1"
)

func TestComputedTCPMSS(t *testing.T) {
	cases := map[string]struct {
		reason    string
		proposals []string
		want      int
	}{
		"AESGCM": {
			reason:    "AES-GCM: IV 8, ICV 16, padded to 4: (1500-36-8-16) = 1440, less the trailer 2 and the inner headers 40.",
			proposals: []string{"aes256gcm16"},
			want:      1398,
		},
		"AESCBCSHA256": {
			reason:    "AES-CBC with HMAC-SHA-256-128: IV 16, ICV 16, padded to 16: 1432 down to 1424, less 42.",
			proposals: []string{"aes256-sha256-modp2048"},
			want:      1382,
		},
		"TripleDESSHA1": {
			reason:    "3DES with HMAC-SHA1-96: IV 8, ICV 12, padded to 8: 1444 down to 1440, less 42.",
			proposals: []string{"3des-sha1"},
			want:      1398,
		},
		"ChaCha20Poly1305": {
			reason:    "ChaCha20-Poly1305: IV 8, ICV 16, padded to 4, as AES-GCM.",
			proposals: []string{"chacha20poly1305"},
			want:      1398,
		},
		"AESGCM8": {
			reason:    "AES-GCM with an 8-byte ICV (named by bits, 64): 1448, less 42.",
			proposals: []string{"aes128gcm64"},
			want:      1406,
		},
		"WorstAlgorithmOfAProposal": {
			reason:    "A proposal offering SHA-256 and SHA-512 counts the larger ICV (32): the peer may pick it. 1416 down to 1408, less 42.",
			proposals: []string{"aes256-sha256-sha512"},
			want:      1366,
		},
		"WorstProposal": {
			reason:    "Of several proposals the smallest MSS applies, whichever comes first.",
			proposals: []string{"aes256gcm16", "aes256-sha512-modp2048"},
			want:      1366,
		},
		"NoProposal": {
			reason: "No proposal (refused by validation) leaves the largest MSS.",
			want:   MaxTCPMSS,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, ComputedTCPMSS(tc.proposals)); diff != "" {
				t.Errorf("%s\nComputedTCPMSS(%q): -want, +got:\n%s", tc.reason, tc.proposals, diff)
			}
		})
	}
}

// TestESPSizesCoverKeywords fails when an ESP keyword that validation
// accepts has no sizes for ComputedTCPMSS, which would then undercount the
// tunnel's overhead.
func TestESPSizesCoverKeywords(t *testing.T) {
	for k, kind := range keywords {
		var ok bool
		switch kind {
		case encryption, aead:
			_, ok = espCiphers[k]
		case integrity, integrityESP:
			_, ok = espICVs[k]
		default:
			continue
		}
		if !ok {
			t.Errorf("ESP keyword %q has no sizes for the TCP MSS", k)
		}
	}
	if n := len(espCiphers) + len(espICVs); n > len(keywords) {
		t.Errorf("%d ESP sizes for keywords validation does not know", n-len(keywords))
	}
}

func TestMSSRules(t *testing.T) {
	cases := map[string]struct {
		reason string
		mod    func(*Input)
		want   []string
	}{
		"Computed": {
			reason: "Left out, each policy-mode tunnel's MSS is computed from its proposals and clamps the SYNs from and to its remote subnets.",
			mod:    func(*Input) {},
			want: []string{
				"# TCP MSS of tunnel a: 1398 (computed: a 1500-byte path, its ESP proposals)",
				"ip saddr { 192.168.1.0/24 } tcp flags syn tcp option maxseg size > 1398 tcp option maxseg size set 1398",
				"ip daddr { 192.168.1.0/24 } tcp flags syn tcp option maxseg size > 1398 tcp option maxseg size set 1398",
				"# TCP MSS of tunnel b: 1382 (computed: a 1500-byte path, its ESP proposals)",
				"ip saddr { 192.168.2.0/24, 192.168.3.0/24 } tcp flags syn tcp option maxseg size > 1382 tcp option maxseg size set 1382",
				"ip daddr { 192.168.2.0/24, 192.168.3.0/24 } tcp flags syn tcp option maxseg size > 1382 tcp option maxseg size set 1382",
			},
		},
		"GatewayOverride": {
			reason: "The gateway's tcpMSS replaces the computed MSS of every tunnel without one of its own; a tunnel's own wins.",
			mod: func(in *Input) {
				in.Spec.TCPMSS, in.Spec.Tunnels[1].TCPMSS = ptr.To[int32](1300), ptr.To[int32](1200)
			},
			want: []string{
				"# TCP MSS of tunnel a: 1300 (the gateway's tcpMSS)",
				"ip saddr { 192.168.1.0/24 } tcp flags syn tcp option maxseg size > 1300 tcp option maxseg size set 1300",
				"ip daddr { 192.168.1.0/24 } tcp flags syn tcp option maxseg size > 1300 tcp option maxseg size set 1300",
				"# TCP MSS of tunnel b: 1200 (the tunnel's tcpMSS)",
				"ip saddr { 192.168.2.0/24, 192.168.3.0/24 } tcp flags syn tcp option maxseg size > 1200 tcp option maxseg size set 1200",
				"ip daddr { 192.168.2.0/24, 192.168.3.0/24 } tcp flags syn tcp option maxseg size > 1200 tcp option maxseg size set 1200",
			},
		},
		"RouteMode": {
			reason: "A route-mode tunnel's SYNs are told by its XFRM interface, in and out: its 0.0.0.0/0 selectors name no subnet.",
			mod: func(in *Input) {
				in.Spec.Mode, in.Spec.TenantSubnets = v1alpha1.ModeRouted, []v1alpha1.CIDR{"100.64.0.0/24"}
				tn := &in.Spec.Tunnels[1]
				tn.Mode, tn.Routes, tn.TCPMSS = v1alpha1.TunnelModeRoute, []v1alpha1.CIDR{"192.168.2.0/24"}, ptr.To[int32](1250)
				tn.TrafficSelectors = []v1alpha1.TrafficSelector{{Local: "0.0.0.0/0", Remote: "0.0.0.0/0"}}
			},
			want: []string{
				"# TCP MSS of tunnel a: 1398 (computed: a 1500-byte path, its ESP proposals)",
				"ip saddr { 192.168.1.0/24 } tcp flags syn tcp option maxseg size > 1398 tcp option maxseg size set 1398",
				"ip daddr { 192.168.1.0/24 } tcp flags syn tcp option maxseg size > 1398 tcp option maxseg size set 1398",
				"# TCP MSS of tunnel b: 1250 (the tunnel's tcpMSS)",
				`iifname "xfrm3e23e816" tcp flags syn tcp option maxseg size > 1250 tcp option maxseg size set 1250`,
				`oifname "xfrm3e23e816" tcp flags syn tcp option maxseg size > 1250 tcp option maxseg size set 1250`,
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			in := valid()
			// Tunnel b: CBC proposals, a second pair with the first's
			// remote subnet listed once.
			b := &in.Spec.Tunnels[1]
			b.ESPProposals = []string{"aes256gcm16", "aes256-sha256"}
			b.TrafficSelectors = append(b.TrafficSelectors,
				v1alpha1.TrafficSelector{Local: "100.64.2.0/24", Remote: "192.168.3.0/24"},
				v1alpha1.TrafficSelector{Local: "100.64.3.0/24", Remote: "192.168.2.0/24"})
			tc.mod(&in)
			f, err := Render(in)
			if err != nil {
				t.Fatalf("%s\nRender(): %v", tc.reason, err)
			}
			if diff := cmp.Diff(tc.want, forwardChain(string(f.NATRules))); diff != "" {
				t.Errorf("%s\nthe forward chain's rules: -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

// forwardChain returns the lines of script's forward chain after its type,
// trimmed.
func forwardChain(script string) []string {
	_, chain, _ := strings.Cut(script, "\tchain forward {\n")
	chain, _, _ = strings.Cut(chain, "\n\t}\n")
	lines := strings.Split(chain, "\n")[1:]
	for i := range lines {
		lines[i] = strings.TrimSpace(lines[i])
	}
	return lines
}
