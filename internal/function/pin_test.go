package function

import (
	"context"
	"strings"
	"testing"

	"github.com/crossplane/crossplane-runtime/v2/pkg/fieldpath"
	"github.com/crossplane/function-sdk-go/logging"
	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/testing/protocmp"
)

// pin is an EnvironmentConfig name pinning namespace ns to the
// ProviderConfig pc (no data.providerConfigName when pc is empty).
func pin(name, ns, pc string) string {
	data := "{}"
	if pc != "" {
		data = "{" + PinKey + ": " + pc + "}"
	}
	return "{apiVersion: apiextensions.crossplane.io/v1beta1, kind: EnvironmentConfig, metadata: {name: " + name +
		", labels: {" + PinLabel + ": " + ns + "}}, data: " + data + "}"
}

// usingPC is an observed Port of xrNAT that uses the ProviderConfig pc.
func usingPC(pc string) string {
	return "{apiVersion: networking.ipsecgw.io/v1alpha1, kind: Port, metadata: {name: branch-vpn-7xk2p-p9d2x}, spec: {providerConfigRef: {name: " + pc + "}}}"
}

func TestProviderConfig(t *testing.T) {
	// xrAsking is xrNAT (claim in tenant-a) with spec.providerConfigName
	// pc, none when empty.
	xrAsking := func(pc string) string {
		if pc == "" {
			return strings.Replace(xrNAT, "  providerConfigName: default\n", "", 1)
		}
		return strings.Replace(xrNAT, "providerConfigName: default", "providerConfigName: "+pc, 1)
	}
	type want struct {
		pc      string
		refusal *refusal
	}
	cases := map[string]struct {
		reason   string
		xr       string
		pins     []string
		observed map[string]string
		want     want
	}{
		"Pinned": {
			reason: "A claim that names no ProviderConfig gets its namespace's pinned one.",
			xr:     xrAsking(""),
			pins:   []string{pin("tenant-a", "tenant-a", "project-a")},
			want:   want{pc: "project-a"},
		},
		"PinnedAndNamedSo": {
			reason: "A claim may name its namespace's pinned ProviderConfig.",
			xr:     xrAsking("project-a"),
			pins:   []string{pin("tenant-a", "tenant-a", "project-a")},
			want:   want{pc: "project-a"},
		},
		"PinsAgree": {
			reason: "Two pins of the namespace that name the same ProviderConfig are one pin.",
			xr:     xrAsking(""),
			pins:   []string{pin("tenant-a", "tenant-a", "project-a"), pin("tenant-a-gitops", "tenant-a", "project-a")},
			want:   want{pc: "project-a"},
		},
		"UnpinnedDefault": {
			reason: "A claim of a namespace the platform pins to none gets ProviderConfig default, as an existing claim with the XRD's former default has.",
			xr:     xrAsking("default"),
			want:   want{pc: "default"},
		},
		"UnpinnedUnset": {
			reason: "A claim of an unpinned namespace that names none gets default too.",
			xr:     xrAsking(""),
			want:   want{pc: "default"},
		},
		"NamesThePlatformsAdmin": {
			reason: "The issue's attack: a claim of tenant-b's kind naming the admin project's ProviderConfig, where the platform pins nothing, is refused, naming the field, the namespace's ProviderConfig and the fix.",
			xr:     xrAsking("platform-admin"),
			want: want{refusal: &refusal{ReasonProviderConfigNotAllowed,
				`spec.providerConfigName "platform-admin" is not "default", the ProviderConfig of namespace tenant-a (the platform pins it with an EnvironmentConfig labelled ipsecgw.io/claim-namespace=tenant-a, else it is "default"): ` +
					`remove spec.providerConfigName from the claim, or ask the platform to pin namespace tenant-a to "platform-admin"; nothing was changed`}},
		},
		"NamesAnotherThanPinned": {
			reason: "A claim naming another ProviderConfig than its namespace's pin (here the XRD's former default) is refused, not silently moved to the pin.",
			xr:     xrAsking("default"),
			pins:   []string{pin("tenant-a", "tenant-a", "project-a")},
			want: want{refusal: &refusal{ReasonProviderConfigNotAllowed,
				`spec.providerConfigName "default" is not "project-a", the ProviderConfig of namespace tenant-a (the platform pins it with an EnvironmentConfig labelled ipsecgw.io/claim-namespace=tenant-a, else it is "default"): ` +
					`remove spec.providerConfigName from the claim, or ask the platform to pin namespace tenant-a to "default"; nothing was changed`}},
		},
		"PinsDisagree": {
			reason: "Pins of one namespace that name different ProviderConfigs are refused, naming each.",
			xr:     xrAsking(""),
			pins:   []string{pin("tenant-a", "tenant-a", "project-a"), pin("tenant-a-old", "tenant-a", "project-old")},
			want: want{refusal: &refusal{ReasonProviderConfigPinsConflict,
				`the EnvironmentConfigs labelled ipsecgw.io/claim-namespace=tenant-a must all name one ProviderConfig in data.providerConfigName, but they name: ` +
					`tenant-a-old: "project-old"; tenant-a: "project-a": the platform fixes them; nothing was changed`}},
		},
		"PinWithoutName": {
			reason: "A pin without data.providerConfigName is refused rather than read as no pin.",
			xr:     xrAsking(""),
			pins:   []string{pin("tenant-a", "tenant-a", "")},
			want: want{refusal: &refusal{ReasonProviderConfigPinsConflict,
				`the EnvironmentConfigs labelled ipsecgw.io/claim-namespace=tenant-a must all name one ProviderConfig in data.providerConfigName, but they name: ` +
					`tenant-a: "": the platform fixes them; nothing was changed`}},
		},
		"PinnedAfterTheFact": {
			reason:   "Composed resources that use another ProviderConfig than the one the namespace now pins are not moved to it (their Neutron objects would be made again in another project): refused, naming the resource and both.",
			xr:       xrAsking(""),
			pins:     []string{pin("tenant-a", "tenant-a", "project-a")},
			observed: map[string]string{"port": usingPC("default")},
			want: want{refusal: &refusal{ReasonProviderConfigChange,
				`Port branch-vpn-7xk2p-p9d2x uses ProviderConfig "default", but this composite's is now "project-a": moved, its Neutron objects would be looked for, and made again, with other credentials; ` +
					`nothing was changed: the platform pins namespace tenant-a back to "default", or the claim is recreated`}},
		},
		"SameProviderConfig": {
			reason:   "Composed resources that use the composite's ProviderConfig are no reason.",
			xr:       xrAsking(""),
			pins:     []string{pin("tenant-a", "tenant-a", "project-a")},
			observed: map[string]string{"port": usingPC("project-a")},
			want:     want{pc: "project-a"},
		},
		"CompositeWithoutClaim": {
			reason: "A composite the platform made without a claim keeps its spec.providerConfigName: no tenant wrote it.",
			xr:     strings.Replace(natXR("", pinnedEndpoint), "providerConfigName: default", "providerConfigName: platform", 1),
			want:   want{pc: "platform"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			xr := &XIPsecGateway{}
			if err := convert(obj(t, tc.xr), xr); err != nil {
				t.Fatal(err)
			}
			var pins []*fieldpath.Paved
			for _, p := range tc.pins {
				pins = append(pins, fieldpath.Pave(obj(t, p)))
			}
			observed := Observed{}
			for n, y := range tc.observed {
				observed[n] = fieldpath.Pave(obj(t, y))
			}
			var got want
			got.pc, got.refusal = providerConfig(xr, claimNamespace(xr), pins, observed)
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(want{})); diff != "" {
				t.Errorf("%s\nproviderConfig(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

// TestRunFunctionPins proves the pins' round trip through Crossplane: the
// function requires the pins of the claim's namespace and composes nothing
// until it has them; with them, the composed resources use the pinned
// ProviderConfig; a refused one is a fatal result (Crossplane changes
// nothing, so no composed resource is deleted or moved) and condition
// StepsReady on the composite and the claim.
func TestRunFunctionPins(t *testing.T) {
	unset := strings.Replace(xrNAT, "  providerConfigName: default\n", "", 1)
	requirements := &fnv1.Requirements{Resources: map[string]*fnv1.ResourceSelector{pinRequirement: {
		ApiVersion: "apiextensions.crossplane.io/v1beta1", Kind: "EnvironmentConfig",
		Match: &fnv1.ResourceSelector_MatchLabels{MatchLabels: &fnv1.MatchLabels{Labels: map[string]string{PinLabel: "tenant-a"}}},
	}}}
	type want struct {
		requirements *fnv1.Requirements
		// pcs are the ProviderConfigs of the desired resources by name.
		pcs        map[string]string
		results    []string
		stepsReady string
	}
	cases := map[string]struct {
		reason string
		xr     string
		// pins are the fetched pins; nil: not fetched yet.
		pins []string
		want want
	}{
		"FirstCall": {
			reason: "Before Crossplane fetched the pins, the function requires them and composes nothing, without a result: Crossplane runs it again with them.",
			xr:     unset,
			want:   want{requirements: requirements, pcs: map[string]string{}},
		},
		"Pinned": {
			reason: "With the pin of tenant-a, every composed resource uses its ProviderConfig.",
			xr:     unset,
			pins:   []string{pin("tenant-a", "tenant-a", "project-a")},
			want: want{requirements: requirements,
				pcs:        map[string]string{"floating-ip": "project-a", "node-address-pairs": "project-a", "port": "project-a", "security-group": "project-a"},
				stepsReady: "STATUS_CONDITION_FALSE TARGET_COMPOSITE_AND_CLAIM Waiting: step securityGroup: not made yet"},
		},
		"Refused": {
			reason: "A claim naming the admin project's ProviderConfig is a fatal result to the composite and the claim, and StepsReady says why.",
			xr:     strings.Replace(xrNAT, "providerConfigName: default", "providerConfigName: platform-admin", 1),
			pins:   []string{},
			want: want{requirements: requirements, pcs: map[string]string{},
				results:    []string{"SEVERITY_FATAL TARGET_COMPOSITE_AND_CLAIM: " + errProviderConfig + `: spec.providerConfigName "platform-admin" is not "default"`},
				stepsReady: "STATUS_CONDITION_FALSE TARGET_COMPOSITE_AND_CLAIM " + ReasonProviderConfigNotAllowed + `: spec.providerConfigName "platform-admin" is not "default"`},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			req := &fnv1.RunFunctionRequest{Observed: &fnv1.State{Composite: res(t, tc.xr)}}
			if tc.pins != nil {
				items := &fnv1.Resources{}
				for _, p := range tc.pins {
					items.Items = append(items.Items, res(t, p))
				}
				req.RequiredResources = map[string]*fnv1.Resources{pinRequirement: items}
			}
			rsp, err := New(logging.NewNopLogger()).RunFunction(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want.requirements, rsp.GetRequirements(), protocmp.Transform()); diff != "" {
				t.Errorf("%s\nrequirements: -want, +got:\n%s", tc.reason, diff)
			}
			pcs := map[string]string{}
			for n, r := range rsp.GetDesired().GetResources() {
				pcs[n], _ = fieldpath.Pave(r.GetResource().AsMap()).GetString("spec.providerConfigRef.name")
			}
			if diff := cmp.Diff(tc.want.pcs, pcs); diff != "" {
				t.Errorf("%s\nProviderConfigs of the desired resources: -want, +got:\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(tc.want.results, resultStrings(rsp, tc.want.results)); diff != "" {
				t.Errorf("%s\nresults: -want, +got:\n%s", tc.reason, diff)
			}
			got := conditionString(rsp)
			if tc.want.stepsReady != "" && strings.HasPrefix(got, tc.want.stepsReady) {
				got = tc.want.stepsReady
			}
			if diff := cmp.Diff(tc.want.stepsReady, got); diff != "" {
				t.Errorf("%s\ncondition StepsReady: -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}
