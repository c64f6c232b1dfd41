package render

import (
	"fmt"
	"testing"

	"github.com/ipsecgw/provider-ipsec/apis/cluster/gateway/v1alpha1"
)

// fiftyTunnels is a gateway with 50 tunnels of 4 subnet pairs each.
func fiftyTunnels() Input {
	in := valid()
	in.Spec.Tunnels = nil
	in.PSKs = map[string][]byte{}
	for i := range 50 {
		name := fmt.Sprintf("site-%02d", i)
		t := v1alpha1.Tunnel{
			Name: name, Peer: v1alpha1.Peer{Address: fmt.Sprintf("198.51.100.%d", i+1)}, IKEVersion: 2,
			IKEProposals: []string{"aes256gcm16-prfsha384-ecp384", "aes256-sha256-modp2048"},
			ESPProposals: []string{"aes256gcm16-ecp384"},
		}
		for j := range 4 {
			t.TrafficSelectors = append(t.TrafficSelectors, v1alpha1.TrafficSelector{
				Local:  v1alpha1.CIDR(fmt.Sprintf("100.64.%d.0/24", i)),
				Remote: v1alpha1.CIDR(fmt.Sprintf("172.%d.%d.0/24", 16+i/16, (i%16)*16+j)),
			})
		}
		in.Spec.Tunnels = append(in.Spec.Tunnels, t)
		in.PSKs[name] = []byte("psk-" + name)
	}
	return in
}

// BenchmarkRender50Tunnels renders a 50-tunnel, 200-pair gateway: the cost
// of one Observe's rendering (validation included, whose overlap check is
// quadratic in the pairs).
func BenchmarkRender50Tunnels(b *testing.B) {
	in := fiftyTunnels()
	if _, err := Render(in); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Render(in); err != nil {
			b.Fatal(err)
		}
	}
}
