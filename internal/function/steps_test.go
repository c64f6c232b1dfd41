package function

import (
	"testing"

	"github.com/crossplane/crossplane-runtime/v2/pkg/fieldpath"
	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"
	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/runtime"
)

func TestStepsReady(t *testing.T) {
	// composed are the resources of a nat composite with node pairs.
	composed := []string{SecurityGroupName, PortName, FloatingIPName, NodePairsName, GatewayName}
	readySG := "{apiVersion: networking.ipsecgw.io/v1alpha1, kind: SecurityGroup, metadata: {name: gw-sg}, status: {conditions: " + readyCondition(true) + "}}"
	readyGateway := "{apiVersion: gateway.ipsecgw.io/v1alpha1, kind: Gateway, metadata: {name: gw-g}, status: {conditions: " + readyCondition(true) + "}}"
	heldElsewhere := `{apiVersion: networking.ipsecgw.io/v1alpha1, kind: FloatingIPBinding, metadata: {name: gw-f}, status: {conditions: [` +
		`{type: Synced, status: "False", reason: ReconcileError, message: "floating IP 203.0.113.10 is associated with another port, not this binding's port gw-1: disassociate it there first"}]}}`
	type want struct {
		status          fnv1.Status
		reason, message string
	}
	cases := map[string]struct {
		reason   string
		composed []string
		observed map[string]string
		blocked  []string
		want     want
	}{
		"NothingYet": {
			reason:   "Before anything is observed the first step waits.",
			composed: composed,
			want:     want{fnv1.Status_STATUS_CONDITION_FALSE, ReasonWaiting, "step securityGroup: not made yet"},
		},
		"AddressHeldElsewhere": {
			reason:   "A pinned floating IP another port holds (the runbook's pre-stage) is the first failing step, with the binding's message, though a later step waits too.",
			composed: composed,
			observed: map[string]string{SecurityGroupName: readySG, PortName: observedPort, FloatingIPName: heldElsewhere},
			want: want{fnv1.Status_STATUS_CONDITION_FALSE, "FloatingIPFailed",
				"step floatingIP (FloatingIPBinding gw-f): Synced ReconcileError: floating IP 203.0.113.10 is associated with another port, not this binding's port gw-1: disassociate it there first"},
		},
		"PortOutsideSubnet": {
			reason:   "A port Neutron refuses fails the port step, before the steps after it.",
			composed: composed,
			observed: map[string]string{
				SecurityGroupName: readySG,
				PortName: `{apiVersion: networking.ipsecgw.io/v1alpha1, kind: Port, metadata: {name: gw-p}, status: {conditions: [` +
					`{type: Synced, status: "False", reason: ReconcileError, message: "cannot create port: Neutron InvalidIpForSubnet: IP address 10.30.0.10 is not a valid IP for the specified subnet."}]}}`,
				FloatingIPName: heldElsewhere,
			},
			want: want{fnv1.Status_STATUS_CONDITION_FALSE, "PortFailed",
				"step port (Port gw-p): Synced ReconcileError: cannot create port: Neutron InvalidIpForSubnet: IP address 10.30.0.10 is not a valid IP for the specified subnet."},
		},
		"UnknownProposal": {
			reason:   "A configuration the Gateway cannot render (an unknown proposal) fails the gateway step with the renderer's message, though the Gateway is Synced.",
			composed: composed,
			observed: map[string]string{
				SecurityGroupName: readySG, PortName: observedPort, FloatingIPName: observedBinding(true), NodePairsName: observedPairs(true, 1, ""),
				GatewayName: `{apiVersion: gateway.ipsecgw.io/v1alpha1, kind: Gateway, metadata: {name: gw-g}, status: {conditions: [` +
					`{type: Synced, status: "True", reason: ReconcileSuccess}, ` +
					`{type: ConfigRendered, status: "False", reason: InvalidSpec, message: "spec.forProvider.tunnels[0].ikeProposals[0]: Invalid value: \"aes256-sha999\": unknown integrity algorithm sha999"}]}}`,
			},
			want: want{fnv1.Status_STATUS_CONDITION_FALSE, "GatewayFailed",
				`step gateway (Gateway gw-g): ConfigRendered InvalidSpec: spec.forProvider.tunnels[0].ikeProposals[0]: Invalid value: "aes256-sha999": unknown integrity algorithm sha999`},
		},
		"GatewayBlocked": {
			reason:   "A Gateway that cannot be composed until someone acts (the warnings of Compose) fails the gateway step with the first of them.",
			composed: []string{SecurityGroupName, PortName, FloatingIPName, NodePairsName},
			observed: map[string]string{SecurityGroupName: readySG, PortName: observedPort, FloatingIPName: observedBinding(true), NodePairsName: observedPairs(true, 1, "")},
			blocked:  []string{"port p reports no gateway IP"},
			want:     want{fnv1.Status_STATUS_CONDITION_FALSE, "GatewayFailed", "step gateway: port p reports no gateway IP"},
		},
		"GatewayNotComposedYet": {
			reason:   "Everything composed is Ready but the Gateway is not composed yet: it is waited for, not reported Ready.",
			composed: []string{SecurityGroupName, PortName, FloatingIPName, NodePairsName},
			observed: map[string]string{SecurityGroupName: readySG, PortName: observedPort, FloatingIPName: observedBinding(true), NodePairsName: observedPairs(true, 1, "")},
			want:     want{fnv1.Status_STATUS_CONDITION_FALSE, ReasonWaiting, "step gateway: not made yet"},
		},
		"PairsNotInPlace": {
			reason:   "A step that is Synced but not Ready waits, with its first condition that is not True.",
			composed: composed,
			observed: map[string]string{SecurityGroupName: readySG, PortName: observedPort, FloatingIPName: observedBinding(true), NodePairsName: observedPairs(false, 1, unmappedNode), GatewayName: readyGateway},
			want:     want{fnv1.Status_STATUS_CONDITION_FALSE, ReasonWaiting, "step nodePorts (NodeAddressPairs branch-vpn-7xk2p-n3c8d): Ready Available: " + unmappedNode},
		},
		"AllReady": {
			reason:   "Once every step is Ready the condition is True.",
			composed: composed,
			observed: map[string]string{SecurityGroupName: readySG, PortName: observedPort, FloatingIPName: observedBinding(true), NodePairsName: observedPairs(true, 2, ""), GatewayName: readyGateway},
			want:     want{fnv1.Status_STATUS_CONDITION_TRUE, ReasonAllStepsReady, "every step of the runbook is Ready"},
		},
		"RoutesOnlyWhenComposed": {
			reason:   "A step not composed (RouterRoutes in mode nat) is not waited for, though observed before (Crossplane deletes it).",
			composed: composed,
			observed: map[string]string{SecurityGroupName: readySG, PortName: observedPort, FloatingIPName: observedBinding(true), NodePairsName: observedPairs(true, 2, ""), GatewayName: readyGateway,
				RoutesName: "{apiVersion: networking.ipsecgw.io/v1alpha1, kind: RouterRoutes, metadata: {name: gw-r}}"},
			want: want{fnv1.Status_STATUS_CONDITION_TRUE, ReasonAllStepsReady, "every step of the runbook is Ready"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			objs := map[string]runtime.Object{}
			for _, n := range tc.composed {
				objs[n] = nil
			}
			observed := Observed{}
			for n, y := range tc.observed {
				observed[n] = fieldpath.Pave(obj(t, y))
			}
			var got want
			got.status, got.reason, got.message = stepsReady(objs, observed, tc.blocked)
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(want{})); diff != "" {
				t.Errorf("%s\nstepsReady(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}
