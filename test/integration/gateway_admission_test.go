//go:build integration

package integration

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gwv1alpha1 "github.com/ipsecgw/provider-ipsec/apis/cluster/gateway/v1alpha1"
)

// TestGatewayAdmissionAlwaysOn checks the always-on tunnel settings at the
// real API server (dry-run creates, so no controller acts): dpd.timeout is
// refused for IKEv2 with a message naming the field, taken for IKEv1, and
// the rule is safe when dpd or its timeout is absent; unique takes only the
// offered policies and defaults to no.
func TestGatewayAdmissionAlwaysOn(t *testing.T) {
	cases := map[string]struct {
		reason string
		mod    func(*gwv1alpha1.Tunnel)
		// wantErr is a substring of the refusal; "" means admitted.
		wantErr    string
		wantUnique string
	}{
		"Defaults": {
			reason:     "A tunnel without the new settings is admitted and gets unique no.",
			mod:        func(*gwv1alpha1.Tunnel) {},
			wantUnique: gwv1alpha1.UniqueNo,
		},
		"DPDWithoutTimeout": {
			reason:     "A DPD section without a timeout passes the IKEv1-only rule.",
			mod:        func(tn *gwv1alpha1.Tunnel) { tn.DPD.Delay = ptr.To[gwv1alpha1.Duration]("10s") },
			wantUnique: gwv1alpha1.UniqueNo,
		},
		"DPDTimeoutIKEv2": {
			reason:  "dpd.timeout is refused for IKEv2, naming the field.",
			mod:     func(tn *gwv1alpha1.Tunnel) { tn.DPD.Timeout = ptr.To[gwv1alpha1.Duration]("60s") },
			wantErr: "dpd.timeout is an IKEv1 setting",
		},
		"DPDTimeoutIKEv1": {
			reason: "dpd.timeout is taken for IKEv1.",
			mod: func(tn *gwv1alpha1.Tunnel) {
				tn.IKEVersion = 1
				tn.DPD.Timeout = ptr.To[gwv1alpha1.Duration]("60s")
			},
			wantUnique: gwv1alpha1.UniqueNo,
		},
		"UniqueReplace": {
			reason:     "An offered uniqueness policy is kept.",
			mod:        func(tn *gwv1alpha1.Tunnel) { tn.Unique = gwv1alpha1.UniqueReplace },
			wantUnique: gwv1alpha1.UniqueReplace,
		},
		"UniqueNever": {
			reason:  "swanctl's never, which would stop charon honouring INITIAL_CONTACT, is not offered.",
			mod:     func(tn *gwv1alpha1.Tunnel) { tn.Unique = "never" },
			wantErr: `spec.forProvider.tunnels[0].unique: Unsupported value: "never"`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			spec := gatewaySpec("tenant-a")
			tc.mod(&spec.Tunnels[0])
			gw := &gwv1alpha1.Gateway{ObjectMeta: metav1.ObjectMeta{Name: "admission-" + strings.ToLower(name)}, Spec: gwv1alpha1.GatewaySpec{ForProvider: spec}}
			// The dry run answers the object as admitted, defaults applied.
			err := kube.Create(context.Background(), gw, client.DryRunAll)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("%s\nCreate(): %v", tc.reason, err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("%s\nCreate(): %v, want an error holding %q", tc.reason, err, tc.wantErr)
			case tc.wantErr == "":
				if diff := cmp.Diff(tc.wantUnique, gw.Spec.ForProvider.Tunnels[0].Unique); diff != "" {
					t.Errorf("%s\nunique after admission: -want, +got:\n%s", tc.reason, diff)
				}
			}
		})
	}
}

// TestGatewayAdmissionStartActionDataPlane proves the API server refuses a
// tunnel with startAction trap on dataPlane Libipsec (kernel-libipsec
// raises no acquires: the tunnel would never initiate), naming the field
// and what to use instead, and admits every other combination, the
// fields left out included.
func TestGatewayAdmissionStartActionDataPlane(t *testing.T) {
	const refused = "a tunnel's startAction trap never initiates with dataPlane Libipsec"
	cases := map[string]struct {
		reason      string
		dataPlane   gwv1alpha1.DataPlane
		startAction []string
		want        string
	}{
		"TrapLibipsec": {
			reason:    "trap on the userspace data plane is refused, naming spec.forProvider.tunnels and the way out.",
			dataPlane: gwv1alpha1.DataPlaneLibipsec, startAction: []string{"trap"},
			want: "spec.forProvider.tunnels: Invalid value: " + refused,
		},
		"SecondTunnelTrapLibipsec": {
			reason:    "One trapped tunnel among others is enough to refuse.",
			dataPlane: gwv1alpha1.DataPlaneLibipsec, startAction: []string{"start", "trap"},
			want: "use startAction start (or respond), or dataPlane KernelXFRM",
		},
		"TrapKernelXFRM": {
			reason:    "The kernel's XFRM raises acquires: trap is admitted.",
			dataPlane: gwv1alpha1.DataPlaneKernelXFRM, startAction: []string{"trap"},
		},
		"TrapDefaultDataPlane": {
			reason:      "dataPlane left out is KernelXFRM: trap is admitted.",
			startAction: []string{"trap"},
		},
		"LibipsecDefaultStartAction": {
			reason:      "startAction left out is start: admitted on Libipsec.",
			dataPlane:   gwv1alpha1.DataPlaneLibipsec,
			startAction: []string{""},
		},
		"RespondLibipsec": {
			reason:    "respond needs no acquire: admitted on Libipsec.",
			dataPlane: gwv1alpha1.DataPlaneLibipsec, startAction: []string{"respond"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			spec := gatewaySpec("tenant-admission")
			spec.DataPlane = tc.dataPlane
			base := spec.Tunnels[0]
			spec.Tunnels = nil
			for i, a := range tc.startAction {
				tn := base
				tn.Name = base.Name + string(rune('a'+i))
				tn.Peer.Address = "198.51.100." + string(rune('1'+i))
				tn.StartAction = a
				spec.Tunnels = append(spec.Tunnels, tn)
			}
			gw := &gwv1alpha1.Gateway{ObjectMeta: metav1.ObjectMeta{Name: "admission-" + strings.ToLower(name)}, Spec: gwv1alpha1.GatewaySpec{ForProvider: spec}}
			admission(t, gw, tc.reason, tc.want)
		})
	}
}

// TestGatewayAdmissionValidatorRules proves the API server refuses what the
// validator refuses where a rule can say it safely (both fields required):
// a traffic selector whose local and remote subnets overlap, a localId
// that is the private address and a tcpMSS outside 536..1460, naming the
// field and the fix, and admits the neighbouring cases.
func TestGatewayAdmissionValidatorRules(t *testing.T) {
	cases := map[string]struct {
		reason string
		mod    func(*gwv1alpha1.GatewayParameters)
		want   string
	}{
		"Valid": {
			reason: "The base spec is admitted.",
			mod:    func(*gwv1alpha1.GatewayParameters) {},
		},
		"LocalInsideRemote": {
			reason: "A local subnet inside the remote one is refused at .remote.",
			mod: func(s *gwv1alpha1.GatewayParameters) {
				s.Tunnels[0].TrafficSelectors[0] = gwv1alpha1.TrafficSelector{Local: "192.168.10.128/25", Remote: "192.168.10.0/24"}
			},
			want: "spec.forProvider.tunnels[0].trafficSelectors[0].remote: Invalid value: local and remote overlap",
		},
		"RemoteInsideLocal": {
			reason: "A remote subnet inside the local one is refused too.",
			mod: func(s *gwv1alpha1.GatewayParameters) {
				s.Tunnels[0].TrafficSelectors[0] = gwv1alpha1.TrafficSelector{Local: "10.0.0.0/8", Remote: "10.1.2.0/24"}
			},
			want: "give the client's subnet as remote and a local subnet apart from it",
		},
		"Adjacent": {
			reason: "Adjacent subnets do not overlap: admitted.",
			mod: func(s *gwv1alpha1.GatewayParameters) {
				s.Tunnels[0].TrafficSelectors[0] = gwv1alpha1.TrafficSelector{Local: "192.168.10.0/25", Remote: "192.168.10.128/25"}
			},
		},
		"TCPMSSBounds": {
			reason: "A tcpMSS at either bound, the gateway's and a tunnel's, is admitted.",
			mod: func(s *gwv1alpha1.GatewayParameters) {
				s.TCPMSS, s.Tunnels[0].TCPMSS = ptr.To[int32](1460), ptr.To[int32](536)
			},
		},
		"TunnelTCPMSSTooSmall": {
			reason: "A tunnel's tcpMSS below 536 is refused at the field.",
			mod:    func(s *gwv1alpha1.GatewayParameters) { s.Tunnels[0].TCPMSS = ptr.To[int32](535) },
			want:   "spec.forProvider.tunnels[0].tcpMSS: Invalid value: 535: spec.forProvider.tunnels[0].tcpMSS in body should be greater than or equal to 536",
		},
		"GatewayTCPMSSTooLarge": {
			reason: "The gateway's tcpMSS above 1460 is refused at the field.",
			mod:    func(s *gwv1alpha1.GatewayParameters) { s.TCPMSS = ptr.To[int32](1461) },
			want:   "spec.forProvider.tcpMSS: Invalid value: 1461: spec.forProvider.tcpMSS in body should be less than or equal to 1460",
		},
		"LocalIDIsPrivateAddress": {
			reason: "The private address as localId is refused at .localId.",
			mod:    func(s *gwv1alpha1.GatewayParameters) { s.Endpoint.LocalID = s.Endpoint.PrivateAddress },
			want:   "spec.forProvider.endpoint.localId: Invalid value: localId is the gateway's private address",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			spec := gatewaySpec("tenant-admission")
			tc.mod(&spec)
			gw := &gwv1alpha1.Gateway{ObjectMeta: metav1.ObjectMeta{Name: "admission-" + strings.ToLower(name)}, Spec: gwv1alpha1.GatewaySpec{ForProvider: spec}}
			admission(t, gw, tc.reason, tc.want)
		})
	}
}

// admission creates gw as a dry run and fails t unless the API server
// admits it (want empty) or refuses it with a message containing want.
func admission(t *testing.T, gw *gwv1alpha1.Gateway, reason, want string) {
	t.Helper()
	err := kube.Create(context.Background(), gw, client.DryRunAll)
	switch {
	case want == "" && err != nil:
		t.Errorf("\n%s\nrefused: %v", reason, err)
	case want != "" && err == nil:
		t.Errorf("\n%s\nadmitted, want refused with %q", reason, want)
	case want != "" && !strings.Contains(err.Error(), want):
		t.Errorf("\n%s\nrefused with\n%v\nwant a message containing %q", reason, err, want)
	}
}

// TestGatewayAdmissionReplicas proves spec.forProvider.replicas at
// admission: 1 by default, 1 and 2 admitted, anything else refused naming
// the field; MOBIKE refused with 2.
func TestGatewayAdmissionReplicas(t *testing.T) {
	cases := map[string]struct {
		reason   string
		replicas *int32
		mobike   bool
		want     int32
		wantErr  string
	}{
		"Default": {reason: "Left out, replicas is 1: one pod, as before the field.", want: 1},
		"One":     {reason: "1 is admitted.", replicas: ptr.To[int32](1), want: 1},
		"Two":     {reason: "2, active/standby, is admitted.", replicas: ptr.To[int32](2), want: 2},
		"Three": {reason: "More than two pods is refused: one active and one standby.", replicas: ptr.To[int32](3),
			wantErr: "spec.forProvider.replicas: Invalid value: 3: spec.forProvider.replicas in body should be less than or equal to 2"},
		"Zero": {reason: "0 is refused: active false pre-stages a gateway.", replicas: ptr.To[int32](0),
			wantErr: "spec.forProvider.replicas: Invalid value: 0: spec.forProvider.replicas in body should be greater than or equal to 1"},
		"TwoMOBIKE": {reason: "MOBIKE with two pods is refused: a pod giving the address up would move its IKE SAs to the pod network.", replicas: ptr.To[int32](2), mobike: true,
			wantErr: "spec.forProvider.tunnels: Invalid value: a tunnel's mobike must be false with replicas 2"},
		"OneMOBIKE": {reason: "MOBIKE with one pod is admitted.", replicas: ptr.To[int32](1), mobike: true, want: 1},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			spec := gatewaySpec("tenant-admission")
			spec.Replicas = tc.replicas
			spec.Tunnels[0].MOBIKE = tc.mobike
			gw := &gwv1alpha1.Gateway{ObjectMeta: metav1.ObjectMeta{Name: "replicas-" + strings.ToLower(name)}, Spec: gwv1alpha1.GatewaySpec{ForProvider: spec}}
			admission(t, gw, tc.reason, tc.wantErr)
			// The dry run answers with the object as admitted, defaults set.
			if !t.Failed() && tc.wantErr == "" && (gw.Spec.ForProvider.Replicas == nil || *gw.Spec.ForProvider.Replicas != tc.want) {
				t.Errorf("\n%s\nadmitted with replicas %v, want %d", tc.reason, gw.Spec.ForProvider.Replicas, tc.want)
			}
		})
	}
}

// TestGatewayAdmissionHideNAT proves the API server refuses a tunnel's
// hideNAT rules where a rule can say it (the presented address or pool in
// a local subnet that carries the rule's remote subnets, apart from the
// tenant's subnets and the tunnel's client subnets; the rule's tenant
// subnets among the gateway's; mode nat), naming the field and the fix,
// with every optional field absent too.
func TestGatewayAdmissionHideNAT(t *testing.T) {
	cidr := func(s string) *gwv1alpha1.CIDR { c := gwv1alpha1.CIDR(s); return &c }
	addr := func(s string) *gwv1alpha1.IPv4 { a := gwv1alpha1.IPv4(s); return &a }
	cases := map[string]struct {
		reason string
		mod    func(*gwv1alpha1.GatewayParameters, *gwv1alpha1.HideNAT)
		want   string
	}{
		"Address": {
			reason: "A presented address of the local subnet is admitted.",
			mod:    func(*gwv1alpha1.GatewayParameters, *gwv1alpha1.HideNAT) {},
		},
		"Pool": {
			reason: "A presented pool inside the local subnet, for part of the client subnet, is admitted.",
			mod: func(_ *gwv1alpha1.GatewayParameters, h *gwv1alpha1.HideNAT) {
				h.PresentedAddress, h.PresentedPool, h.RemoteSubnets = nil, cidr("100.64.0.32/28"), []gwv1alpha1.CIDR{"192.168.10.128/25"}
			},
		},
		"NoHideNAT": {
			reason: "Without hideNAT (and without tenantSubnets) every rule holds.",
			mod: func(s *gwv1alpha1.GatewayParameters, _ *gwv1alpha1.HideNAT) {
				s.TenantSubnets = nil
				s.Tunnels[0].HideNAT = nil
			},
		},
		"Neither": {
			reason: "A rule needs a presented address or pool.",
			mod:    func(_ *gwv1alpha1.GatewayParameters, h *gwv1alpha1.HideNAT) { h.PresentedAddress = nil },
			want:   "spec.forProvider.tunnels[0].hideNAT[0]: Invalid value: hideNAT needs exactly one of presentedAddress or presentedPool",
		},
		"Both": {
			reason: "A rule cannot have both.",
			mod:    func(_ *gwv1alpha1.GatewayParameters, h *gwv1alpha1.HideNAT) { h.PresentedPool = cidr("100.64.0.32/28") },
			want:   "hideNAT needs exactly one of presentedAddress or presentedPool",
		},
		"OutsideLocal": {
			reason: "A presented address outside the local subnet is refused at .hideNAT.",
			mod:    func(_ *gwv1alpha1.GatewayParameters, h *gwv1alpha1.HideNAT) { h.PresentedAddress = addr("100.65.0.20") },
			want:   "spec.forProvider.tunnels[0].hideNAT: Invalid value: a hideNAT rule's presentedAddress (or presentedPool) lies in no local subnet of the tunnel's traffic selectors",
		},
		"PoolBeyondLocal": {
			reason: "A pool larger than the local subnet is refused.",
			mod: func(_ *gwv1alpha1.GatewayParameters, h *gwv1alpha1.HideNAT) {
				h.PresentedAddress, h.PresentedPool = nil, cidr("100.64.0.0/23")
			},
			want: "lies in no local subnet of the tunnel's traffic selectors",
		},
		"RemoteNotCarried": {
			reason: "A remote subnet no traffic selector of the tunnel holds is admitted (the rule would cost too much at admission): rendering refuses it (TestValidateHideNAT).",
			mod: func(_ *gwv1alpha1.GatewayParameters, h *gwv1alpha1.HideNAT) {
				h.RemoteSubnets = []gwv1alpha1.CIDR{"192.168.10.0/24", "192.168.11.0/24"}
			},
		},
		"OverlapsClient": {
			reason: "A presented address inside a client subnet of the tunnel is refused.",
			mod: func(s *gwv1alpha1.GatewayParameters, h *gwv1alpha1.HideNAT) {
				s.Tunnels[0].TrafficSelectors = []gwv1alpha1.TrafficSelector{
					{Local: "100.64.0.0/16", Remote: "192.168.10.0/24"}, {Local: "10.50.0.0/24", Remote: "100.64.5.0/24"}}
				h.PresentedAddress = addr("100.64.5.1")
			},
			want: "spec.forProvider.tunnels[0].hideNAT: Invalid value: a hideNAT rule's presentedAddress (or presentedPool) overlaps a remote traffic selector, a client subnet",
		},
		"OverlapsTenant": {
			reason: "A presented pool overlapping a tenantSubnets entry is refused at .tunnels.",
			mod: func(s *gwv1alpha1.GatewayParameters, h *gwv1alpha1.HideNAT) {
				s.TenantSubnets = append(s.TenantSubnets, "100.64.0.40/29")
				h.PresentedAddress, h.PresentedPool = nil, cidr("100.64.0.32/28")
			},
			want: "spec.forProvider.tunnels: Invalid value: a tunnel's hideNAT presentedAddress (or presentedPool) overlaps a tenantSubnets entry",
		},
		"TenantNotListed": {
			reason: "A rule's tenant subnet outside the gateway's tenantSubnets is refused.",
			mod: func(_ *gwv1alpha1.GatewayParameters, h *gwv1alpha1.HideNAT) {
				h.TenantSubnets = []gwv1alpha1.CIDR{"10.31.0.0/24"}
			},
			want: "a tunnel's hideNAT tenantSubnets entry lies in no tenantSubnets entry of the gateway",
		},
		"NoTenantSubnets": {
			reason: "Without tenantSubnets no rule's tenant subnet is listed: refused, and the rules read no absent field.",
			mod:    func(s *gwv1alpha1.GatewayParameters, _ *gwv1alpha1.HideNAT) { s.TenantSubnets = nil },
			want:   "a tunnel's hideNAT tenantSubnets entry lies in no tenantSubnets entry of the gateway",
		},
		"Routed": {
			reason: "hideNAT is for mode nat.",
			mod: func(s *gwv1alpha1.GatewayParameters, _ *gwv1alpha1.HideNAT) {
				s.Mode = gwv1alpha1.ModeRouted
				s.Exposures = nil
			},
			want: "a tunnel's hideNAT is for mode nat",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			spec := gatewaySpec("tenant-admission")
			spec.TenantSubnets = []gwv1alpha1.CIDR{"10.30.0.0/24"}
			spec.Tunnels[0].HideNAT = []gwv1alpha1.HideNAT{{Name: "apps", TenantSubnets: []gwv1alpha1.CIDR{"10.30.0.0/24"},
				RemoteSubnets: []gwv1alpha1.CIDR{"192.168.10.0/24"}, PresentedAddress: addr("100.64.0.20")}}
			tc.mod(&spec, &spec.Tunnels[0].HideNAT[0])
			gw := &gwv1alpha1.Gateway{ObjectMeta: metav1.ObjectMeta{Name: "admission-" + strings.ToLower(name)}, Spec: gwv1alpha1.GatewaySpec{ForProvider: spec}}
			admission(t, gw, tc.reason, tc.want)
		})
	}
}

// TestGatewayAdmissionMalformedCIDR proves at the real API server (dry
// run) that a malformed CIDR or address (a /33, words) in each field a
// Gateway rule across fields parses is refused with its field's own message
// alone: every such rule tests isCIDR or isIP first and passes a malformed
// value, neither failing at run time nor adding a message of its own
// (issue 29).
func TestGatewayAdmissionMalformedCIDR(t *testing.T) {
	const (
		cidrMsg = "must be an IPv4 network in CIDR notation with no host bits set"
		ipMsg   = "must be an IPv4 address such as 10.0.0.5"
	)
	cases := map[string]struct {
		reason string
		mod    func(*gwv1alpha1.GatewayParameters, *gwv1alpha1.HideNAT)
		field  string
		msg    string
	}{
		"TenantSubnetPrefix33": {
			reason: "A /33 tenant subnet: the hideNAT rules parse every tenant subnet; the one that looks for a hideNAT tenant subnet among them must not call it unlisted.",
			mod: func(s *gwv1alpha1.GatewayParameters, _ *gwv1alpha1.HideNAT) {
				s.TenantSubnets = []gwv1alpha1.CIDR{"10.30.0.0/33"}
			},
			field: "spec.forProvider.tenantSubnets[0]", msg: cidrMsg,
		},
		"TenantSubnetWords": {
			reason: "A tenant subnet in words.",
			mod: func(s *gwv1alpha1.GatewayParameters, _ *gwv1alpha1.HideNAT) {
				s.TenantSubnets = []gwv1alpha1.CIDR{"ten.thirty/24"}
			},
			field: "spec.forProvider.tenantSubnets[0]", msg: cidrMsg,
		},
		"RemoteSelectorWords": {
			reason: "A remote traffic selector in words: the overlap, 0.0.0.0/0 and hideNAT rules parse it.",
			mod: func(s *gwv1alpha1.GatewayParameters, _ *gwv1alpha1.HideNAT) {
				s.Tunnels[0].TrafficSelectors[0].Remote = "ten.twenty/24"
			},
			field: "spec.forProvider.tunnels[0].trafficSelectors[0].remote", msg: cidrMsg,
		},
		"LocalSelectorPrefix33": {
			reason: "A /33 local traffic selector.",
			mod: func(s *gwv1alpha1.GatewayParameters, _ *gwv1alpha1.HideNAT) {
				s.Tunnels[0].TrafficSelectors[0].Local = "100.64.0.0/33"
			},
			field: "spec.forProvider.tunnels[0].trafficSelectors[0].local", msg: cidrMsg,
		},
		"PresentedAddressWords": {
			reason: "A presented address that is no address.",
			mod: func(_ *gwv1alpha1.GatewayParameters, h *gwv1alpha1.HideNAT) {
				h.PresentedAddress = ptr.To[gwv1alpha1.IPv4]("100.64.0.300")
			},
			field: "spec.forProvider.tunnels[0].hideNAT[0].presentedAddress", msg: ipMsg,
		},
		"PresentedPoolPrefix33": {
			reason: "A /33 presented pool.",
			mod: func(_ *gwv1alpha1.GatewayParameters, h *gwv1alpha1.HideNAT) {
				h.PresentedAddress, h.PresentedPool = nil, ptr.To[gwv1alpha1.CIDR]("100.64.0.0/33")
			},
			field: "spec.forProvider.tunnels[0].hideNAT[0].presentedPool", msg: cidrMsg,
		},
		"HideNATTenantSubnetWords": {
			reason: "A hideNAT rule's tenant subnet in words.",
			mod: func(_ *gwv1alpha1.GatewayParameters, h *gwv1alpha1.HideNAT) {
				h.TenantSubnets = []gwv1alpha1.CIDR{"ten.thirty/24"}
			},
			field: "spec.forProvider.tunnels[0].hideNAT[0].tenantSubnets[0]", msg: cidrMsg,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			spec := gatewaySpec("tenant-admission")
			spec.TenantSubnets = []gwv1alpha1.CIDR{"10.30.0.0/24"}
			spec.Tunnels[0].HideNAT = []gwv1alpha1.HideNAT{{Name: "apps", TenantSubnets: []gwv1alpha1.CIDR{"10.30.0.0/24"},
				RemoteSubnets: []gwv1alpha1.CIDR{"192.168.10.0/24"}, PresentedAddress: ptr.To[gwv1alpha1.IPv4]("100.64.0.20")}}
			tc.mod(&spec, &spec.Tunnels[0].HideNAT[0])
			gw := &gwv1alpha1.Gateway{ObjectMeta: metav1.ObjectMeta{Name: "malformed-" + strings.ToLower(name)}, Spec: gwv1alpha1.GatewaySpec{ForProvider: spec}}
			onlyCause(t, kube.Create(context.Background(), gw, client.DryRunAll), tc.reason, tc.field, tc.msg)
		})
	}
}
