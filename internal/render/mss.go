package render

import (
	"bytes"
	"fmt"
	"slices"
	"strings"

	"github.com/ipsecgw/provider-ipsec/apis/cluster/gateway/v1alpha1"
	"github.com/ipsecgw/provider-ipsec/internal/xfrmi"
)

// Bounds of a tcpMSS, in bytes: 536 is the MSS every IPv4 host must accept
// (RFC 879), 1460 the MSS of a 1500-byte path without a tunnel.
const (
	MinTCPMSS = 536
	MaxTCPMSS = 1460
)

// PathMTU is the path MTU, in bytes, from which the gateway computes a
// tunnel's TCP MSS when neither the tunnel nor the gateway gives one: an
// Ethernet path, as between cloud VPN gateways on the Internet.
const PathMTU = 1500

// Sizes of the headers around a tunnel's inner packet, in bytes: the outer
// IPv4 header, NAT-T's UDP header (always counted: the gateway sits behind
// its floating IP's NAT, so its ESP is encapsulated in UDP 4500), the ESP
// header (SPI and sequence number) and its trailer (pad length and next
// header); and the inner packet's IPv4 and TCP headers, which the MSS does
// not count.
const (
	ipv4Header     = 20
	udpHeader      = 8
	espHeader      = 8
	espTrailer     = 2
	tcpHeader      = 20
	espAlign       = 4 // ESP pads to 4 bytes at least (RFC 4303 2.4)
	espOuterHeader = ipv4Header + udpHeader + espHeader
)

// espCipher is what an ESP encryption or AEAD algorithm adds to a packet,
// in bytes: its IV, the block its payload and trailer are padded to (espAlign
// for counter modes and AEADs) and, for an AEAD, its ICV. The sizes are
// those of Linux' ESP (RFC 4303, 3686, 4106, 4309, 4543, 7634).
type espCipher struct{ iv, block, icv int }

// espCiphers are the ESP sizes of every encryption and AEAD keyword of
// keywords (a unit test keeps the two in step).
var espCiphers = func() map[string]espCipher {
	cbc8, cbc16, ctr := espCipher{8, 8, 0}, espCipher{16, 16, 0}, espCipher{8, espAlign, 0}
	m := map[string]espCipher{
		"3des": cbc8, "cast128": cbc8, "blowfish128": cbc8, "blowfish192": cbc8, "blowfish256": cbc8,
		"aes": cbc16, "aes128": cbc16, "aes192": cbc16, "aes256": cbc16,
		"camellia": cbc16, "camellia128": cbc16, "camellia192": cbc16, "camellia256": cbc16,
		"aes128ctr": ctr, "aes192ctr": ctr, "aes256ctr": ctr,
		"null":             {0, espAlign, 0},
		"chacha20poly1305": {8, espAlign, 16},
		"aes128gmac":       {8, espAlign, 16}, "aes192gmac": {8, espAlign, 16}, "aes256gmac": {8, espAlign, 16},
	}
	for _, mode := range []string{"ccm", "gcm"} {
		for _, size := range []string{"128", "192", "256"} {
			for icv, names := range map[int][]string{8: {"8", "64"}, 12: {"12", "96"}, 16: {"16", "128"}} {
				for _, n := range names {
					m["aes"+size+mode+n] = espCipher{8, espAlign, icv}
				}
			}
		}
	}
	return m
}()

// espICVs are the ICV sizes, in bytes, of the integrity keywords: the
// truncated HMACs of RFC 2403, 2404, 4868 and 3566, the untruncated ones
// strongSwan names with their length.
var espICVs = map[string]int{
	"md5": 12, "md5_128": 16, "sha1": 12, "sha": 12, "sha1_160": 20,
	"sha256": 16, "sha2_256": 16, "sha256_96": 12, "sha2_256_96": 12,
	"sha384": 24, "sha2_384": 24, "sha512": 32, "sha2_512": 32,
	"aesxcbc": 12, "aescmac": 12,
}

// ComputedTCPMSS returns the TCP MSS, in bytes, of a tunnel with ESP
// proposals espProposals on a path of PathMTU bytes: for each proposal the
// largest IV, block and ICV among its algorithms, and of the proposals the
// smallest result, so that whichever proposal the peer picks, a full
// segment fits:
//
//	MSS = floor((PathMTU − 36 − IV − ICV) / block) × block − 2 − 40
//
// 36 being the outer IPv4, NAT-T UDP and ESP headers, 2 the ESP trailer and
// 40 the inner IPv4 and TCP headers: 1398 for aes256gcm16, 1382 for
// aes256-sha256. It returns MaxTCPMSS for no proposal, and ignores
// keywords it does not know (validation refuses them).
func ComputedTCPMSS(espProposals []string) int {
	mss := MaxTCPMSS
	for _, p := range espProposals {
		worst := espCipher{block: espAlign}
		for tok := range strings.SplitSeq(p, "-") {
			c := espCiphers[tok]
			worst.iv, worst.block = max(worst.iv, c.iv), max(worst.block, c.block)
			worst.icv = max(worst.icv, c.icv, espICVs[tok])
		}
		inner := (PathMTU-espOuterHeader-worst.iv-worst.icv)/worst.block*worst.block - espTrailer
		mss = min(mss, inner-ipv4Header-tcpHeader)
	}
	return mss
}

// tunnelMSS returns tunnel t's TCP MSS, in bytes, and where it comes from:
// t's tcpMSS, else the gateway's, else ComputedTCPMSS of its proposals.
func tunnelMSS(gateway *int32, t v1alpha1.Tunnel) (int, string) {
	switch {
	case t.TCPMSS != nil:
		return int(*t.TCPMSS), "the tunnel's tcpMSS"
	case gateway != nil:
		return int(*gateway), "the gateway's tcpMSS"
	}
	return ComputedTCPMSS(t.ESPProposals), fmt.Sprintf("computed: a %d-byte path, its ESP proposals", PathMTU)
}

// mssRules renders the rules of the forward chain that clamp the MSS of
// TCP SYNs and SYN-ACKs entering and leaving each tunnel to the tunnel's
// (tunnelMSS), lowering it only: the kernel's TCP clamps nothing it
// forwards, and a full 1460-byte segment of a host on an Ethernet would
// not fit the path once ESP is added. A policy-mode tunnel's traffic is
// told by its remote subnets (whatever leaves towards them enters the
// tunnel, and whatever comes from them left it: the kernel drops the rest
// by the inbound policy before the forward hook), a route-mode tunnel's
// by its XFRM interface. Where policy-mode tunnels share a remote subnet,
// a SYN passes both rules and keeps the smaller MSS.
func mssRules(in Input, c *checked) []byte {
	var b bytes.Buffer
	remotes := map[string][]string{}
	for _, p := range c.pairs {
		if r := p.remote.String(); !slices.Contains(remotes[p.tunnel], r) {
			remotes[p.tunnel] = append(remotes[p.tunnel], r)
		}
	}
	for _, t := range in.Spec.Tunnels {
		mss, why := tunnelMSS(in.Spec.TCPMSS, t)
		set := strings.Join(remotes[t.Name], ", ")
		entering, leaving := fmt.Sprintf("ip saddr { %s }", set), fmt.Sprintf("ip daddr { %s }", set)
		if t.Mode == v1alpha1.TunnelModeRoute {
			link := xfrmi.InterfaceName(xfrmi.IfID(t.Name))
			entering, leaving = fmt.Sprintf("iifname %q", link), fmt.Sprintf("oifname %q", link)
		}
		fmt.Fprintf(&b, "\t\t# TCP MSS of tunnel %s: %d (%s)\n", t.Name, mss, why)
		for _, match := range []string{entering, leaving} {
			fmt.Fprintf(&b, "\t\t%s tcp flags syn tcp option maxseg size > %d tcp option maxseg size set %d\n", match, mss, mss)
		}
	}
	return b.Bytes()
}
