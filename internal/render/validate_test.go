package render

import (
	"encoding/hex"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/ipsecgw/provider-ipsec/apis/cluster/gateway/v1alpha1"
)

// valid returns a gateway that renders, for cases to break one thing in.
func valid() Input {
	tunnel := func(name, peer, local, remote string) v1alpha1.Tunnel {
		return v1alpha1.Tunnel{
			Name: name, Peer: v1alpha1.Peer{Address: peer}, IKEVersion: 2,
			IKEProposals: []string{"aes256-sha256-modp2048"}, ESPProposals: []string{"aes256gcm16"},
			TrafficSelectors: []v1alpha1.TrafficSelector{{Local: v1alpha1.CIDR(local), Remote: v1alpha1.CIDR(remote)}},
		}
	}
	return Input{
		Spec: v1alpha1.GatewayParameters{
			Namespace: "tenant-a",
			GatewayConfig: v1alpha1.GatewayConfig{
				Endpoint: v1alpha1.Endpoint{
					PrivateAddress: "10.20.0.10", PrefixLength: 24, Gateway: "10.20.0.1",
					MACAddress: "fa:16:3e:00:00:0a", LocalID: "203.0.113.10",
				},
				TenantSubnets: []v1alpha1.CIDR{"10.244.0.0/16"},
				Tunnels: []v1alpha1.Tunnel{
					tunnel("a", "198.51.100.1", "100.64.0.0/24", "192.168.1.0/24"),
					tunnel("b", "198.51.100.2", "100.64.1.0/24", "192.168.2.0/24"),
				},
			}},
		PSKs: map[string][]byte{"a": []byte("psk-key-a"), "b": []byte("psk-key-b")},
	}
}

func TestValidate(t *testing.T) {
	addr := func(s string) *v1alpha1.IPv4 { a := v1alpha1.IPv4(s); return &a }
	cases := map[string]struct {
		reason string
		mod    func(*Input)
		want   []problem
	}{
		"Valid": {
			reason: "The base gateway has no problem.",
			mod:    func(*Input) {},
		},
		"OverlapAcrossTunnels": {
			reason: "Two tunnels whose pairs overlap on both sides would both match the same traffic.",
			mod: func(in *Input) {
				in.Spec.Tunnels[1].TrafficSelectors[0] = v1alpha1.TrafficSelector{Local: "100.64.0.128/25", Remote: "192.168.0.0/16"}
			},
			want: []problem{{"tunnels[b].trafficSelectors[0]", "local 100.64.0.128/25 and remote 192.168.0.0/16 overlap tunnels[a].trafficSelectors[0] (local 100.64.0.0/24, remote 192.168.1.0/24): traffic would match both"}},
		},
		"OverlapWithinTunnel": {
			reason: "A repeated pair in one tunnel overlaps itself.",
			mod: func(in *Input) {
				ts := &in.Spec.Tunnels[0].TrafficSelectors
				*ts = append(*ts, (*ts)[0])
			},
			want: []problem{{"tunnels[a].trafficSelectors[1]", "local 100.64.0.0/24 and remote 192.168.1.0/24 overlap tunnels[a].trafficSelectors[0] (local 100.64.0.0/24, remote 192.168.1.0/24): traffic would match both"}},
		},
		"TCPMSSBounds": {
			reason: "A tcpMSS at either bound, the tunnel's and the gateway's, is no problem.",
			mod: func(in *Input) {
				in.Spec.TCPMSS, in.Spec.Tunnels[0].TCPMSS = ptr.To[int32](MaxTCPMSS), ptr.To[int32](MinTCPMSS)
			},
		},
		"TCPMSSOutOfBounds": {
			reason: "A tcpMSS outside 536..1460, the gateway's or a tunnel's, is refused at its field (the schema's bounds, for a spec that skipped admission).",
			mod: func(in *Input) {
				in.Spec.TCPMSS, in.Spec.Tunnels[1].TCPMSS = ptr.To[int32](1461), ptr.To[int32](535)
			},
			want: []problem{
				{"tcpMSS", "1461 is not a TCP MSS between 536 and 1460 bytes (below, hosts may refuse it; above, a segment does not fit a 1500-byte path even without a tunnel): leave it out for the MSS computed from the tunnel's ESP proposals"},
				{"tunnels[b].tcpMSS", "535 is not a TCP MSS between 536 and 1460 bytes (below, hosts may refuse it; above, a segment does not fit a 1500-byte path even without a tunnel): leave it out for the MSS computed from the tunnel's ESP proposals"},
			},
		},
		"SameRemoteDifferentLocal": {
			reason: "One remote subnet reached from two distinct inside subnets is no overlap.",
			mod: func(in *Input) {
				in.Spec.Tunnels[1].TrafficSelectors[0].Remote = "192.168.1.0/24"
				in.Spec.Tunnels[1].Peer.Address = "198.51.100.1"
				in.Spec.Tunnels[1].Peer.ID = "other.example.com"
			},
		},
		"RemoteOverlapsTenant": {
			reason: "A client subnet inside the tenant's own networks cannot be routed to the tunnel.",
			mod:    func(in *Input) { in.Spec.Tunnels[0].TrafficSelectors[0].Remote = "10.244.8.0/24" },
			want:   []problem{{"tunnels[a].trafficSelectors[0].remote", "10.244.8.0/24 overlaps tenant subnet 10.244.0.0/16"}},
		},
		"RemoteOverlapsOwnNetwork": {
			reason: "A client subnet overlapping the gateway's own network would capture its own traffic.",
			mod:    func(in *Input) { in.Spec.Tunnels[0].TrafficSelectors[0].Remote = "10.20.0.0/16" },
			want:   []problem{{"tunnels[a].trafficSelectors[0].remote", "10.20.0.0/16 overlaps the gateway's own network 10.20.0.0/24"}},
		},
		"HostBits": {
			reason: "A subnet with host bits set is refused with the network it probably means.",
			mod:    func(in *Input) { in.Spec.Tunnels[0].TrafficSelectors[0].Local = "100.64.0.1/24" },
			want:   []problem{{"tunnels[a].trafficSelectors[0].local", "100.64.0.1/24 has host bits set: did you mean 100.64.0.0/24?"}},
		},
		"UnknownProposalKeyword": {
			reason: "A keyword strongSwan does not know is named.",
			mod:    func(in *Input) { in.Spec.Tunnels[0].IKEProposals = []string{"aes256-sha256-modp2047"} },
			want:   []problem{{"tunnels[a].ikeProposals[0]", `"aes256-sha256-modp2047": "modp2047" is not a strongSwan proposal keyword`}},
		},
		"IKEProposalWithoutDH": {
			reason: "An IKE proposal needs a DH group.",
			mod:    func(in *Input) { in.Spec.Tunnels[0].IKEProposals = []string{"aes256-sha256"} },
			want:   []problem{{"tunnels[a].ikeProposals[0]", `"aes256-sha256": no DH group`}},
		},
		"ESPWithoutIntegrity": {
			reason: "Non-AEAD encryption needs an integrity algorithm.",
			mod:    func(in *Input) { in.Spec.Tunnels[0].ESPProposals = []string{"aes256-modp2048"} },
			want:   []problem{{"tunnels[a].espProposals[0]", `"aes256-modp2048": no integrity algorithm for non-AEAD encryption`}},
		},
		"MixedAEADProposals": {
			reason: "AEAD and non-AEAD encryption in one proposal, in either order, ESP or IKE, is refused (charon refuses to load the connection), naming the two proposals charon loads; with an IKE proposal the AEAD one gets the PRF charon would have derived.",
			mod: func(in *Input) {
				in.Spec.Tunnels[0].ESPProposals = []string{"aes256-sha256-aes256gcm16", "aes256-sha256-aes128gmac", "aes128-md5-modp2048s256-aes128gmac", "aes256gcm16-aes256-sha2_256"}
				in.Spec.Tunnels[1].IKEProposals = []string{"aes256-sha256-aes256gcm16-prfsha256-ecp256", "aes256-sha384-aes128gcm16-ecp256"}
			},
			want: []problem{
				{"tunnels[a].espProposals[0]", `"aes256-sha256-aes256gcm16": mixes AEAD encryption (aes256gcm16) with non-AEAD encryption: charon refuses to load such a proposal; write them as two proposals, such as aes256-sha256,aes256gcm16`},
				{"tunnels[a].espProposals[1]", `"aes256-sha256-aes128gmac": mixes AEAD encryption (aes128gmac) with non-AEAD encryption: charon refuses to load such a proposal; write them as two proposals, such as aes256-sha256,aes128gmac`},
				{"tunnels[a].espProposals[2]", `"aes128-md5-modp2048s256-aes128gmac": mixes AEAD encryption (aes128gmac) with non-AEAD encryption: charon refuses to load such a proposal; write them as two proposals, such as aes128-md5-modp2048s256,aes128gmac-modp2048s256`},
				{"tunnels[a].espProposals[3]", `"aes256gcm16-aes256-sha2_256": mixes AEAD encryption (aes256gcm16) with non-AEAD encryption: charon refuses to load such a proposal; write them as two proposals, such as aes256-sha2_256,aes256gcm16`},
				{"tunnels[b].ikeProposals[0]", `"aes256-sha256-aes256gcm16-prfsha256-ecp256": mixes AEAD encryption (aes256gcm16) with non-AEAD encryption: charon refuses to load such a proposal; write them as two proposals, such as aes256-sha256-prfsha256-ecp256,aes256gcm16-prfsha256-ecp256`},
				{"tunnels[b].ikeProposals[1]", `"aes256-sha384-aes128gcm16-ecp256": mixes AEAD encryption (aes128gcm16) with non-AEAD encryption: charon refuses to load such a proposal; write them as two proposals, such as aes256-sha384-ecp256,aes128gcm16-prfsha384-ecp256`},
			},
		},
		"IKEv1SingleChild": {
			reason: "IKEv1 cannot carry several subnet pairs in one CHILD_SA.",
			mod: func(in *Input) {
				tn := &in.Spec.Tunnels[0]
				tn.IKEVersion, tn.ChildSALayout = 1, v1alpha1.ChildSASingle
				tn.TrafficSelectors = append(tn.TrafficSelectors, v1alpha1.TrafficSelector{Local: "100.64.0.0/24", Remote: "192.168.9.0/24"})
			},
			want: []problem{{"tunnels[a].childSALayout", "IKEv1 negotiates one subnet pair per CHILD_SA: use PerSubnetPair"}},
		},
		"DPDTimeoutIKEv2": {
			reason: "dpd_timeout is an IKEv1 setting; charon would ignore it for IKEv2 and the user would believe it applies.",
			mod:    func(in *Input) { in.Spec.Tunnels[0].DPD.Timeout = ptr.To[v1alpha1.Duration]("60s") },
			want:   []problem{{"tunnels[a].dpd.timeout", "is an IKEv1 setting: an IKEv2 peer is declared dead when the retransmissions of a DPD check run out; remove it"}},
		},
		"MOBIKEReplicas2": {
			reason: "With replicas 2 a pod that gives the address up must not move its IKE SAs to the pod network: MOBIKE is refused.",
			mod: func(in *Input) {
				in.Spec.Replicas = ptr.To[int32](2)
				in.Spec.Tunnels[0].MOBIKE = true
			},
			want: []problem{{"tunnels[a].mobike", "must be false with replicas 2: a pod that gives the gateway's address up would move its IKE SAs to the pod network's interface (MOBIKE); leave it out, or use replicas 1"}},
		},
		"MOBIKEReplicas1": {
			reason: "One pod keeps MOBIKE as the user asked for it.",
			mod: func(in *Input) {
				in.Spec.Replicas = ptr.To[int32](1)
				in.Spec.Tunnels[0].MOBIKE = true
			},
		},
		"NoMOBIKEReplicas2": {
			reason: "Replicas 2 with MOBIKE off (the default) is valid.",
			mod:    func(in *Input) { in.Spec.Replicas = ptr.To[int32](2) },
		},
		"DPDTimeoutIKEv1": {
			reason: "An IKEv1 tunnel takes a DPD timeout.",
			mod: func(in *Input) {
				in.Spec.Tunnels[0].IKEVersion = 1
				in.Spec.Tunnels[0].DPD.Timeout = ptr.To[v1alpha1.Duration]("60s")
			},
		},
		"DPDTimeoutNotDuration": {
			reason: "A DPD timeout must parse as a duration.",
			mod: func(in *Input) {
				in.Spec.Tunnels[0].IKEVersion = 1
				in.Spec.Tunnels[0].DPD.Timeout = ptr.To[v1alpha1.Duration]("a minute")
			},
			want: []problem{{"tunnels[a].dpd.timeout", `"a minute" is not a duration such as 90m or 4h`}},
		},
		"UniqueUnknown": {
			reason: "Only the uniqueness policies the API offers reach swanctl.conf.",
			mod:    func(in *Input) { in.Spec.Tunnels[0].Unique = "never" },
			want:   []problem{{"tunnels[a].unique", `"never" is not no, replace or keep`}},
		},
		"TrapWithLibipsec": {
			reason: "kernel-libipsec raises no acquires: a trapped tunnel on the userspace data plane would never initiate.",
			mod: func(in *Input) {
				in.Spec.DataPlane = v1alpha1.DataPlaneLibipsec
				in.Spec.Tunnels[0].StartAction = "trap"
			},
			want: []problem{{"tunnels[a].startAction", "trap never initiates with dataPlane Libipsec (kernel-libipsec raises no acquires, so matching traffic is dropped and no IKE SA starts): use start (or respond), or dataPlane KernelXFRM"}},
		},
		"TrapWithKernelXFRM": {
			reason: "The kernel's XFRM raises acquires: trap works there.",
			mod: func(in *Input) {
				in.Spec.DataPlane = v1alpha1.DataPlaneKernelXFRM
				in.Spec.Tunnels[0].StartAction = "trap"
			},
		},
		"StartWithLibipsec": {
			reason: "start and respond need no acquires: they work on the userspace data plane.",
			mod: func(in *Input) {
				in.Spec.DataPlane = v1alpha1.DataPlaneLibipsec
				in.Spec.Tunnels[0].StartAction = "start"
				in.Spec.Tunnels[1].StartAction = "respond"
			},
		},
		"ShortChildRekeyWithoutLifeTime": {
			reason: "charon would give a CHILD_SA rekeyed after 9.5s (rendered 10s) a life of 11s, but one rekeyed after 9s a life of 9s: it would expire, not be rekeyed.",
			mod: func(in *Input) {
				in.Spec.Tunnels[0].ChildLifetime.RekeyTime = ptr.To[v1alpha1.Duration]("9s")
				in.Spec.Tunnels[1].ChildLifetime.RekeyTime = ptr.To[v1alpha1.Duration]("9.5s")
			},
			want: []problem{{"tunnels[a].childLifetime.lifeTime", "must be given with a rekeyTime under 10s: strongSwan's default (110% of rekeyTime in whole seconds) would equal it, and the CHILD_SA would expire instead of being rekeyed"}},
		},
		"IKERandTimeNotShorter": {
			reason: "An IKE randTime as long as rekeyTime (strongSwan's 4h when absent) could wrap the rekey time around; so could one as long as reauthTime.",
			mod: func(in *Input) {
				in.Spec.Tunnels[0].IKELifetime = v1alpha1.IKELifetime{RandTime: ptr.To[v1alpha1.Duration]("4h")}
				in.Spec.Tunnels[1].IKELifetime = v1alpha1.IKELifetime{RekeyTime: ptr.To[v1alpha1.Duration]("8h"), ReauthTime: ptr.To[v1alpha1.Duration]("1h"), RandTime: ptr.To[v1alpha1.Duration]("90m")}
			},
			want: []problem{
				{"tunnels[a].ikeLifetime.randTime", "14400s is not shorter than ikeLifetime.rekeyTime (14400s): give a randTime below it (strongSwan's default is 10% of it)"},
				{"tunnels[b].ikeLifetime.randTime", "5400s is not shorter than ikeLifetime.reauthTime (3600s): give a randTime below it (strongSwan's default is 10% of it)"},
			},
		},
		"ChildRandTimeNotShorter": {
			reason: "A CHILD_SA randTime as long as its rekeyTime could wrap the rekey time around.",
			mod: func(in *Input) {
				in.Spec.Tunnels[0].ChildLifetime = v1alpha1.ChildLifetime{RekeyTime: ptr.To[v1alpha1.Duration]("10m"), RandTime: ptr.To[v1alpha1.Duration]("10m")}
			},
			want: []problem{{"tunnels[a].childLifetime.randTime", "600s is not shorter than childLifetime.rekeyTime (600s): give a randTime below it (strongSwan's default is lifeTime - rekeyTime)"}},
		},
		"RandTimesShorterOrOff": {
			reason: "randTimes below their rekey times are fine, and so is any randTime when rekeying is off (0).",
			mod: func(in *Input) {
				in.Spec.Tunnels[0].IKELifetime = v1alpha1.IKELifetime{RekeyTime: ptr.To[v1alpha1.Duration]("1h"), RandTime: ptr.To[v1alpha1.Duration]("5m")}
				in.Spec.Tunnels[0].ChildLifetime = v1alpha1.ChildLifetime{RekeyTime: ptr.To[v1alpha1.Duration]("1h"), RandTime: ptr.To[v1alpha1.Duration]("0")}
				in.Spec.Tunnels[1].IKELifetime = v1alpha1.IKELifetime{RekeyTime: ptr.To[v1alpha1.Duration]("0"), RandTime: ptr.To[v1alpha1.Duration]("5h")}
			},
		},
		"ShortChildRekeyWithLifeTime": {
			reason: "A short rekeyTime with its lifeTime is fine.",
			mod: func(in *Input) {
				in.Spec.Tunnels[0].ChildLifetime = v1alpha1.ChildLifetime{RekeyTime: ptr.To[v1alpha1.Duration]("3s"), LifeTime: ptr.To[v1alpha1.Duration]("5s")}
			},
		},
		"UnparsableDuration": {
			reason: "A duration that does not parse (admission refuses it too) is named, not rendered as 0.",
			mod: func(in *Input) {
				in.Spec.Tunnels[0].DPD.Delay = ptr.To[v1alpha1.Duration]("30 s")
				in.Spec.Tunnels[0].ChildLifetime.RekeyTime = ptr.To[v1alpha1.Duration]("1d")
			},
			want: []problem{
				{"tunnels[a].childLifetime.rekeyTime", `"1d" is not a duration such as 90m or 4h`},
				{"tunnels[a].dpd.delay", `"30 s" is not a duration such as 90m or 4h`},
			},
		},
		"ChildNameCollision": {
			reason: "Two pairs whose CHILD_SA names collide (found by search: the first 32 bits of their hashes are d93db0d6) are refused rather than merged into one child.",
			mod: func(in *Input) {
				in.Spec.Tunnels[0].TrafficSelectors = []v1alpha1.TrafficSelector{
					{Local: "100.64.0.0/24", Remote: "172.16.17.17/32"},
					{Local: "100.64.0.0/24", Remote: "172.16.88.244/32"},
				}
			},
			want: []problem{{"tunnels[a].trafficSelectors[1]", "its CHILD_SA name a-d93db0d6 is also that of tunnels[a].trafficSelectors[0]: change the subnets of either pair"}},
		},
		"DuplicatePeer": {
			reason: "Two tunnels to one peer address and identity would share one IKE SA.",
			mod:    func(in *Input) { in.Spec.Tunnels[1].Peer.Address = "198.51.100.1" },
			want:   []problem{{"tunnels[b].peer", "tunnel a already connects to 198.51.100.1 with identity 198.51.100.1: strongSwan negotiates one IKE SA per peer, so put the subnet pairs into one tunnel"}},
		},
		"MissingPSK": {
			reason: "A tunnel without a PSK cannot authenticate.",
			mod:    func(in *Input) { delete(in.PSKs, "b") },
			want:   []problem{{"tunnels[b].preSharedKeySecretRef", "the pre-shared key is missing or empty"}},
		},
		"PeerAddressInjection": {
			reason: "A peer address that is neither IP nor DNS name is refused before it can reach swanctl.conf.",
			mod:    func(in *Input) { in.Spec.Tunnels[0].Peer.Address = "1.2.3.4\n}\nsecrets {" },
			want:   []problem{{"tunnels[a].peer.address", `"1.2.3.4\n}\nsecrets {" is neither an IPv4 address nor a DNS name`}},
		},
		"ExposureOutsideTS": {
			reason: "An exposure at an inside address no tunnel carries cannot be reached.",
			mod: func(in *Input) {
				in.Spec.Exposures = []v1alpha1.Exposure{{Name: "web", Protocol: "tcp", InsideAddress: "100.64.9.1", Port: 443,
					Target: v1alpha1.ExposureTarget{Address: addr("10.96.0.1"), Port: 443}}}
			},
			want: []problem{{"exposures[web].insideAddress", "100.64.9.1 is in no tunnel's local traffic selector"}},
		},
		"ExposureUnresolvedService": {
			reason: "An exposure to a Service whose cluster IP is unknown cannot be rendered.",
			mod: func(in *Input) {
				svc := "web"
				in.Spec.Exposures = []v1alpha1.Exposure{{Name: "web", Protocol: "tcp", InsideAddress: "100.64.0.1", Port: 443,
					Target: v1alpha1.ExposureTarget{ServiceName: &svc, Port: 443}}}
			},
			want: []problem{{"exposures[web].target.serviceName", "the Service's cluster IP is not known"}},
		},
		"ReverseExposureWrongTunnel": {
			reason: "A reverse exposure whose source and client are in different tunnels matches no CHILD_SA.",
			mod: func(in *Input) {
				in.Spec.ReverseExposures = []v1alpha1.ReverseExposure{{Name: "db", Protocol: "tcp", ListenPort: 5432,
					ClientAddress: "192.168.2.5", ClientPort: 5432, SourceAddress: "100.64.0.9"}}
			},
			want: []problem{{"reverseExposures[db]", "no tunnel carries traffic from 100.64.0.9 (sourceAddress, a local traffic selector) to 192.168.2.5 (clientAddress, a remote one)"}},
		},
		"RoutedWithExposures": {
			reason: "Exposures need mode nat.",
			mod: func(in *Input) {
				in.Spec.Mode = v1alpha1.ModeRouted
				in.Spec.ReverseExposures = []v1alpha1.ReverseExposure{{Name: "db", Protocol: "tcp", ListenPort: 5432,
					ClientAddress: "192.168.1.5", ClientPort: 5432, SourceAddress: "100.64.0.9"}}
			},
			want: []problem{{"mode", "exposures and reverse exposures need mode nat"}},
		},
		"GatewayOutsideNetwork": {
			reason: "The default gateway must be on the endpoint's network.",
			mod:    func(in *Input) { in.Spec.Endpoint.Gateway = "10.21.0.1" },
			want:   []problem{{"endpoint.gateway", "10.21.0.1 is not in the endpoint's network 10.20.0.0/24"}},
		},
		"AEADIKEProposalWithoutPRF": {
			reason: "charon refuses an AEAD IKE proposal without a PRF (a PRF algorithm is mandatory in IKE proposals); with one, or with an integrity algorithm it derives the PRF from, it loads.",
			mod: func(in *Input) {
				in.Spec.Tunnels[0].IKEProposals = []string{"aes128gcm16-ecp256", "aes128gcm16-prfsha256-ecp256"}
				in.Spec.Tunnels[1].IKEProposals = []string{"chacha20poly1305-prfsha256-x25519"}
			},
			want: []problem{{"tunnels[a].ikeProposals[0]", `"aes128gcm16-ecp256": an AEAD IKE proposal needs a PRF, such as aes128gcm16-prfsha256-...: charon refuses it (a PRF algorithm is mandatory in IKE proposals)`}},
		},
		"PSKLineBreak": {
			reason: "A PSK with a line break (the trailing newline of echo) cannot be typed into a peer's configuration; the message never quotes the key.",
			mod: func(in *Input) {
				in.PSKs["a"] = []byte("secret-key\n")
				in.PSKs["b"] = []byte("secret\r\nkey")
			},
			want: []problem{
				{"tunnels[a].preSharedKeySecretRef", "the pre-shared key contains a line break (often a trailing newline from echo or a file): no peer's configuration can type it, so authentication would fail; write the Secret with printf '%s' or kubectl create secret --from-literal"},
				{"tunnels[b].preSharedKeySecretRef", "the pre-shared key contains a line break (often a trailing newline from echo or a file): no peer's configuration can type it, so authentication would fail; write the Secret with printf '%s' or kubectl create secret --from-literal"},
			},
		},
		"PSKNUL": {
			reason: "A PSK with a NUL byte is cut there by peers' configurations.",
			mod:    func(in *Input) { in.PSKs["a"] = []byte("secret\x00key") },
			want:   []problem{{"tunnels[a].preSharedKeySecretRef", "the pre-shared key contains a NUL byte, which peers' configurations end the key at: write it without"}},
		},
		"PSKShort": {
			reason: "A PSK under minPSK bytes is refused; one of minPSK is accepted.",
			mod: func(in *Input) {
				in.PSKs["a"] = []byte("abcde")
				in.PSKs["b"] = []byte("abcdef")
			},
			want: []problem{{"tunnels[a].preSharedKeySecretRef", "the pre-shared key is 5 bytes: at least 6 are needed (20 or more random characters are advised)"}},
		},
		"LocalOverlapsRemote": {
			reason: "A pair whose local and remote subnets overlap puts the same addresses on both sides of the tunnel.",
			mod: func(in *Input) {
				in.Spec.Tunnels[0].TrafficSelectors[0] = v1alpha1.TrafficSelector{Local: "192.168.1.0/25", Remote: "192.168.1.0/24"}
			},
			want: []problem{{"tunnels[a].trafficSelectors[0]", "local 192.168.1.0/25 overlaps remote 192.168.1.0/24: the same addresses cannot be on both sides of the tunnel; give the client's subnet as remote and a local subnet apart from it"}},
		},
		"PresentedOverlapsTenant": {
			reason: "In mode nat a presented (local) subnet inside the tenant's real subnets cannot be told apart from them by the NAT.",
			mod: func(in *Input) {
				in.Spec.Tunnels[0].TrafficSelectors[0].Local = "10.244.1.0/24"
			},
			want: []problem{{"tunnels[a].trafficSelectors[0].local", "10.244.1.0/24 overlaps tenant subnet 10.244.0.0/16: in mode nat the local subnets are the addresses presented to the client, apart from the tenant's real ones; pick a range of its own (such as in 100.64.0.0/10)"}},
		},
		"PresentedOverlapsClient": {
			reason: "In mode nat a presented subnet that is another client's subnet is refused.",
			mod: func(in *Input) {
				in.Spec.Tunnels[1].TrafficSelectors[0].Local = "192.168.1.0/24"
			},
			want: []problem{{"tunnels[b].trafficSelectors[0].local", "192.168.1.0/24 overlaps client subnet 192.168.1.0/24 (tunnels[a].trafficSelectors[0].remote): in mode nat the presented addresses must be apart from every client's; pick a range of its own"}},
		},
		"RoutedLocalIsAnotherClient": {
			reason: "In mode routed a local subnet may be another client's (a hub routing between sites): no nat rule applies.",
			mod: func(in *Input) {
				in.Spec.Mode = v1alpha1.ModeRouted
				in.Spec.Tunnels[1].TrafficSelectors[0].Local = "192.168.1.0/24"
			},
		},
		"LocalIDIsPrivateAddress": {
			reason: "Peers know the gateway by its floating IP: the private address as localId fails IKE_AUTH on the identity.",
			mod:    func(in *Input) { in.Spec.Endpoint.LocalID = "10.20.0.10" },
			want:   []problem{{"endpoint.localId", "10.20.0.10 is the gateway's private address: peers reach the gateway through its floating IP and know it by that address, so IKE_AUTH would fail on the identity; set localId to the floating IP"}},
		},
		"ChildRekeyZero": {
			reason: "rekeyTime 0 (no rekeying) without lifeTime is strongSwan's 'no lifetime': accepted, not refused as a rekeyTime under 10s.",
			mod:    func(in *Input) { in.Spec.Tunnels[0].ChildLifetime.RekeyTime = ptr.To[v1alpha1.Duration]("0") },
		},
		"ChildRekeyZeroWithLifeTime": {
			reason: "rekeyTime 0 with a lifeTime would let every CHILD_SA expire without a rekey: the message says so.",
			mod: func(in *Input) {
				in.Spec.Tunnels[0].ChildLifetime = v1alpha1.ChildLifetime{RekeyTime: ptr.To[v1alpha1.Duration]("0"), LifeTime: ptr.To[v1alpha1.Duration]("1h")}
			},
			want: []problem{{"tunnels[a].childLifetime.rekeyTime", "0 turns rekeying off, so every CHILD_SA would expire at lifeTime 1h and the tunnel drop until a new one is negotiated: give a rekeyTime below lifeTime, or leave lifeTime out (with rekeyTime 0 the CHILD_SA then lives until the peer rekeys it)"}},
		},
		"SeveralProblems": {
			reason: "Every problem is reported at once, in spec order.",
			mod: func(in *Input) {
				in.Spec.Endpoint.LocalID = "not-an-ip"
				in.Spec.Tunnels[1].IKEVersion = 3
			},
			want: []problem{
				{"endpoint.localId", `"not-an-ip" is not an IPv4 address`},
				{"tunnels[b].ikeVersion", "3 is not 1 or 2"},
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			in := valid()
			tc.mod(&in)
			wantErrors(t, tc.reason, in, tc.want)
		})
	}
}

// TestValidateHideNAT checks the tunnels' hideNAT rules at reconcile: each
// message names the field and the fix.
func TestValidateHideNAT(t *testing.T) {
	addr := func(s string) *v1alpha1.IPv4 { a := v1alpha1.IPv4(s); return &a }
	pool := func(s string) *v1alpha1.CIDR { c := v1alpha1.CIDR(s); return &c }
	rule := func(name, tenant, remote string, address *v1alpha1.IPv4, pool *v1alpha1.CIDR) v1alpha1.HideNAT {
		return v1alpha1.HideNAT{Name: name, TenantSubnets: []v1alpha1.CIDR{v1alpha1.CIDR(tenant)}, RemoteSubnets: []v1alpha1.CIDR{v1alpha1.CIDR(remote)},
			PresentedAddress: address, PresentedPool: pool}
	}
	const path = "tunnels[a].hideNAT[out]"
	cases := map[string]struct {
		reason string
		mod    func(*Input)
		want   []problem
	}{
		"Address": {
			reason: "A presented address of the local subnet, for a tenant subnet and a client subnet of the tunnel, is valid.",
			mod:    func(*Input) {},
		},
		"Pool": {
			reason: "A presented pool inside the local subnet is valid.",
			mod: func(in *Input) {
				in.Spec.Tunnels[0].HideNAT[0].PresentedAddress, in.Spec.Tunnels[0].HideNAT[0].PresentedPool = nil, pool("100.64.0.32/28")
			},
		},
		"NeitherPresented": {
			reason: "A rule needs a presented address or pool.",
			mod:    func(in *Input) { in.Spec.Tunnels[0].HideNAT[0].PresentedAddress = nil },
			want:   []problem{{path, "needs exactly one of presentedAddress or presentedPool"}},
		},
		"BothPresented": {
			reason: "A rule with both a presented address and a pool is ambiguous.",
			mod:    func(in *Input) { in.Spec.Tunnels[0].HideNAT[0].PresentedPool = pool("100.64.0.32/28") },
			want:   []problem{{path, "needs exactly one of presentedAddress or presentedPool"}},
		},
		"PresentedOutsideLocal": {
			reason: "An address of another tunnel's local subnet is not carried by this tunnel to the client subnet.",
			mod:    func(in *Input) { in.Spec.Tunnels[0].HideNAT[0].PresentedAddress = addr("100.64.1.20") },
			want:   []problem{{path + ".presentedAddress", "100.64.1.20 lies in no local subnet of a traffic selector of tunnel a whose remote subnet holds 192.168.1.0/24 (remoteSubnets[0]): the tunnel carries only its selectors' pairs; present an address of that local subnet, or add the pair to trafficSelectors"}},
		},
		"PoolBeyondLocal": {
			reason: "A pool larger than the local subnet is not carried whole.",
			mod: func(in *Input) {
				in.Spec.Tunnels[0].HideNAT[0].PresentedAddress, in.Spec.Tunnels[0].HideNAT[0].PresentedPool = nil, pool("100.64.0.0/23")
			},
			want: []problem{{path + ".presentedPool", "100.64.0.0/23 lies in no local subnet of a traffic selector of tunnel a whose remote subnet holds 192.168.1.0/24 (remoteSubnets[0]): the tunnel carries only its selectors' pairs; present an address of that local subnet, or add the pair to trafficSelectors"}},
		},
		"RemoteOfAnotherTunnel": {
			reason: "A remote subnet the tunnel does not carry is refused.",
			mod:    func(in *Input) { in.Spec.Tunnels[0].HideNAT[0].RemoteSubnets[0] = "192.168.2.0/24" },
			want:   []problem{{path + ".presentedAddress", "100.64.0.20 lies in no local subnet of a traffic selector of tunnel a whose remote subnet holds 192.168.2.0/24 (remoteSubnets[0]): the tunnel carries only its selectors' pairs; present an address of that local subnet, or add the pair to trafficSelectors"}},
		},
		"PresentedOverlapsTenant": {
			reason: "A presented address among the tenant's real ones is refused, beside the local subnet's own overlap.",
			mod:    func(in *Input) { in.Spec.TenantSubnets = append(in.Spec.TenantSubnets, "100.64.0.16/28") },
			want: []problem{
				{"tunnels[a].trafficSelectors[0].local", "100.64.0.0/24 overlaps tenant subnet 100.64.0.16/28: in mode nat the local subnets are the addresses presented to the client, apart from the tenant's real ones; pick a range of its own (such as in 100.64.0.0/10)"},
				{path + ".presentedAddress", "100.64.0.20 overlaps tenant subnet 100.64.0.16/28: the presented addresses must be apart from the tenant's real ones; present addresses of the tunnel's local subnet (such as in 100.64.0.0/10)"},
			},
		},
		"PresentedOverlapsClient": {
			reason: "A presented address that is another client's address is refused, beside the local subnet's own overlap.",
			mod: func(in *Input) {
				in.Spec.Tunnels[0].TrafficSelectors[0].Local = "100.64.0.0/16"
				in.Spec.Tunnels[1].TrafficSelectors[0] = v1alpha1.TrafficSelector{Local: "100.65.0.0/24", Remote: "100.64.0.16/28"}
			},
			want: []problem{
				{"tunnels[a].trafficSelectors[0].local", "100.64.0.0/16 overlaps client subnet 100.64.0.16/28 (tunnels[b].trafficSelectors[0].remote): in mode nat the presented addresses must be apart from every client's; pick a range of its own"},
				{path + ".presentedAddress", "100.64.0.20 overlaps client subnet 100.64.0.16/28 (tunnels[b].trafficSelectors[0].remote): the client would see its own addresses as the source; present addresses of the tunnel's local subnet"},
			},
		},
		"TenantSubnetNotListed": {
			reason: "A tenant subnet outside the gateway's tenantSubnets is refused: the security group admits those only.",
			mod:    func(in *Input) { in.Spec.Tunnels[0].HideNAT[0].TenantSubnets[0] = "10.99.0.0/24" },
			want:   []problem{{path + ".tenantSubnets[0]", "10.99.0.0/24 lies in no tenantSubnets entry of the gateway: add it there (the security group admits traffic from those only)"}},
		},
		"Routed": {
			reason: "Hide NAT is for mode nat.",
			mod:    func(in *Input) { in.Spec.Mode = v1alpha1.ModeRouted },
			want:   []problem{{path, "hideNAT needs mode nat: in mode routed the tenant network reaches client subnets untranslated"}},
		},
		"OverlappingRules": {
			reason: "Two rules translating the same connections are refused: only the first would apply.",
			mod: func(in *Input) {
				in.Spec.Tunnels[0].HideNAT = append(in.Spec.Tunnels[0].HideNAT, rule("more", "10.244.1.0/24", "192.168.1.128/25", addr("100.64.0.21"), nil))
			},
			want: []problem{{"tunnels[a].hideNAT[more]", "translates connections tunnels[a].hideNAT[out] also translates (their tenantSubnets and remoteSubnets overlap): give each connection one rule"}},
		},
		"DisjointRules": {
			reason: "Rules for distinct tenant subnets may present distinct addresses to the same client subnet.",
			mod: func(in *Input) {
				in.Spec.Tunnels[0].HideNAT[0].TenantSubnets[0] = "10.244.0.0/17"
				in.Spec.Tunnels[0].HideNAT = append(in.Spec.Tunnels[0].HideNAT, rule("more", "10.244.128.0/17", "192.168.1.0/24", nil, pool("100.64.0.32/28")))
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			in := valid()
			in.Spec.Tunnels[0].HideNAT = []v1alpha1.HideNAT{rule("out", "10.244.0.0/16", "192.168.1.0/24", addr("100.64.0.20"), nil)}
			tc.mod(&in)
			wantErrors(t, tc.reason, in, tc.want)
		})
	}
}

// wantErrors renders in and fails t unless Render returns exactly want
// (nil: no error), saying reason.
// problem is what a test wants of one field error of Errors: its path and
// its detail.
type problem struct{ Path, Detail string }

func wantErrors(t *testing.T, reason string, in Input, want []problem) {
	t.Helper()
	_, err := Render(in)
	var errs Errors
	if err != nil && !errors.As(err, &errs) {
		t.Fatalf("%s\nRender() error %v is not Errors", reason, err)
	}
	var got []problem
	for _, fe := range errs {
		if fe.Type != field.ErrorTypeInvalid {
			t.Errorf("%s\nRender() error %q is of type %s, want %s", reason, fe.Field, fe.Type, field.ErrorTypeInvalid)
		}
		got = append(got, problem{Path: fe.Field, Detail: fe.Detail})
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("%s\nRender() errors: -want, +got:\n%s", reason, diff)
	}
}

func TestPeerID(t *testing.T) {
	cases := map[string]struct {
		reason string
		id     string
		// want is swanctl's remote.id as rendered; for a DN, wantDN is
		// a subject it must match as strongSwan compares them (sameDN).
		want   string
		wantDN []byte
		errs   []problem
	}{
		"Default": {
			reason: "No peer.id: the peer's address.",
			want:   "198.51.100.1",
		},
		"AtFQDN": {
			reason: "strongSwan's '@' (a DNS name even when it looks like an address) is kept: charon reads it.",
			id:     "@fw.example.net",
			want:   "@fw.example.net",
		},
		"Underscore": {
			reason: "A DNS name with '_', as peers' host names carry.",
			id:     "fw_1.example.net",
			want:   "fw_1.example.net",
		},
		"Email": {
			reason: "user@domain, '_' in the user part.",
			id:     "vpn_gw@example.net",
			want:   "vpn_gw@example.net",
		},
		"DN": {
			reason: "A DN, multi-valued RDN included, is rendered as its DER, as a certificate identity's dn (the subject of openssl's -multivalue-rdn certificate).",
			id:     "C=DE, O=Example AG, OU=Net + CN=rtr1.example.net",
			wantDN: opensslMultiRDN,
		},
		"DER": {
			reason: "asn1dn:#<hex> is rendered as given.",
			id:     "asn1dn:#" + hex.EncodeToString(opensslMultiRDN),
			want:   "asn1dn:#" + hex.EncodeToString(opensslMultiRDN),
		},
		"BadDN": {
			reason: "A DN with an attribute strongSwan does not know is refused at peer.id, as what it is taken for.",
			id:     "X=1, CN=fw",
			errs:   []problem{{"tunnels[a].peer.id", `"X=1, CN=fw" is taken for a distinguished name (it has '=') and has attribute "X": use C, ST, L, O, OU, CN, SN, DC, UID or E`}},
		},
		"NoForm": {
			reason: "What is none of the forms (a space, a path) is refused.",
			id:     "fw example/net",
			errs:   []problem{{"tunnels[a].peer.id", `"fw example/net" is not an IPv4 address, DNS name (@name, too), user@domain or distinguished name (C=DE, O=Example AG, CN=fw)`}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			in := valid()
			in.Spec.Tunnels[0].Peer.ID = tc.id
			wantErrors(t, tc.reason, in, tc.errs)
			if tc.errs != nil {
				return
			}
			got := peerID(in.Spec.Tunnels[0])
			if tc.wantDN != nil {
				der, err := hex.DecodeString(strings.TrimPrefix(got, "asn1dn:#"))
				if err != nil || !sameDN(der, tc.wantDN) {
					t.Errorf("%s\npeerID() = %s, not the DER of a name that matches %x", tc.reason, got, tc.wantDN)
				}
				return
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\npeerID(): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}
