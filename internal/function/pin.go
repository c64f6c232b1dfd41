package function

import (
	"fmt"
	"slices"
	"strings"

	"github.com/crossplane/crossplane-runtime/v2/pkg/fieldpath"
	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"
)

// The platform pins the ProviderConfig of the claims of a namespace with an
// EnvironmentConfig (apiextensions.crossplane.io, cluster-scoped, which
// tenants get no RBAC on) labelled PinLabel: <namespace>, whose
// data.providerConfigName names the ProviderConfig (ipsecgw.io) every
// managed resource composed for a claim of that namespace uses. The function
// requires these EnvironmentConfigs from Crossplane (the required resources
// of a run), so a new or changed pin takes effect at the composite's next
// reconcile.
const (
	// PinLabel is the label of a pin: the namespace whose claims it pins.
	PinLabel = "ipsecgw.io/claim-namespace"
	// PinKey is the key of a pin's data naming the ProviderConfig.
	PinKey = "providerConfigName"
	// DefaultProviderConfig is the ProviderConfig of the claims of a
	// namespace the platform pins to none.
	DefaultProviderConfig = "default"

	// pinRequirement names the pins among the run's required resources.
	pinRequirement = "provider-config-pins"
	pinAPIVersion  = "apiextensions.crossplane.io/v1beta1"
	pinKind        = "EnvironmentConfig"
)

// The reasons of a refused ProviderConfig (condition StepsReady False).
const (
	// ReasonProviderConfigNotAllowed: the claim names another
	// ProviderConfig than its namespace's.
	ReasonProviderConfigNotAllowed = "ProviderConfigNotAllowed"
	// ReasonProviderConfigPinsConflict: the namespace's pins disagree or
	// one names no ProviderConfig.
	ReasonProviderConfigPinsConflict = "ProviderConfigPinsConflict"
	// ReasonProviderConfigChange: the composed resources use another
	// ProviderConfig than the one the claim would now get.
	ReasonProviderConfigChange = "ProviderConfigChange"
)

// A refusal is why the composite's ProviderConfig is refused: the reason of
// condition StepsReady and a message naming the field and the fix.
type refusal struct {
	Reason, Message string
}

// pinProviderConfig sets xr's spec.providerConfigName to the ProviderConfig
// its composed resources use (see providerConfig), from the pins of its
// claim's namespace among the required resources of req. It returns false
// when rsp is complete without composing: the pins are not fetched yet (rsp
// requires them: Crossplane fetches them and runs the function again), or
// the ProviderConfig is refused (a fatal result, so that Crossplane changes
// nothing, and condition StepsReady saying why).
func pinProviderConfig(req *fnv1.RunFunctionRequest, rsp *fnv1.RunFunctionResponse, xr *XIPsecGateway, observed Observed) bool {
	ns := claimNamespace(xr)
	var pins []*fieldpath.Paved
	if ns != "" {
		rsp.Requirements = &fnv1.Requirements{Resources: map[string]*fnv1.ResourceSelector{pinRequirement: pinSelector(ns)}}
		got, ok := req.GetRequiredResources()[pinRequirement]
		if !ok {
			return false
		}
		for _, r := range got.GetItems() {
			pins = append(pins, fieldpath.Pave(r.GetResource().AsMap()))
		}
	}
	pc, refused := providerConfig(xr, ns, pins, observed)
	if refused != nil {
		setStepsReady(rsp, fnv1.Status_STATUS_CONDITION_FALSE, refused.Reason, refused.Message)
		rsp.Results = append(rsp.Results, &fnv1.Result{
			Severity: fnv1.Severity_SEVERITY_FATAL,
			Message:  errProviderConfig + ": " + refused.Message,
			Target:   fnv1.Target_TARGET_COMPOSITE_AND_CLAIM.Enum(),
		})
		return false
	}
	xr.Spec.ProviderConfigName = pc
	return true
}

// pinSelector requires the pins of the claim namespace ns.
func pinSelector(ns string) *fnv1.ResourceSelector {
	return &fnv1.ResourceSelector{
		ApiVersion: pinAPIVersion,
		Kind:       pinKind,
		Match:      &fnv1.ResourceSelector_MatchLabels{MatchLabels: &fnv1.MatchLabels{Labels: map[string]string{PinLabel: ns}}},
	}
}

// claimNamespace is the namespace of xr's claim, empty for a composite the
// platform created without one.
func claimNamespace(xr *XIPsecGateway) string {
	if c := xr.Spec.ClaimRef; c != nil {
		return c.Namespace
	}
	return ""
}

// providerConfig returns the ProviderConfig of the managed resources of xr,
// whose claim is in namespace ns (empty: no claim), given the pins of that
// namespace (the EnvironmentConfigs labelled PinLabel: ns) and the
// composed resources observed so far; or why it is refused.
//
// A claim gets its namespace's pinned ProviderConfig, or
// DefaultProviderConfig where the platform pins none: a claim never
// chooses credentials. Its spec.providerConfigName may only name that one
// (existing claims carry the XRD's former default, "default"); naming
// another is refused, never silently replaced, so that a tenant sees why
// and nothing moves. A composite without a claim is the platform's own: it
// keeps its spec.providerConfigName. Composed resources that already use
// another ProviderConfig are never moved to the new one (their Neutron
// objects would be looked for, and made again, in another project): that
// is refused too, and left to the platform (docs/api.md).
func providerConfig(xr *XIPsecGateway, ns string, pins []*fieldpath.Paved, observed Observed) (string, *refusal) {
	asked := xr.Spec.ProviderConfigName
	pc := asked
	if ns != "" {
		var r *refusal
		if pc, r = pinned(ns, pins); r != nil {
			return "", r
		}
		if asked != "" && asked != pc {
			return "", &refusal{ReasonProviderConfigNotAllowed, fmt.Sprintf(
				"spec.providerConfigName %q is not %q, the ProviderConfig of namespace %s (the platform pins it with an EnvironmentConfig labelled %s=%s, else it is %q): "+
					"remove spec.providerConfigName from the claim, or ask the platform to pin namespace %s to %q; nothing was changed",
				asked, pc, ns, PinLabel, ns, DefaultProviderConfig, ns, asked)}
		}
	}
	if pc == "" {
		pc = DefaultProviderConfig
	}
	fix := "set spec.providerConfigName back to %q"
	if ns != "" {
		fix = fmt.Sprintf("the platform pins namespace %s back to %%q, or the claim is recreated", ns)
	}
	for _, n := range rollUpOrder {
		o := observed[n]
		if used := str(o, "spec.providerConfigRef.name"); used != "" && used != pc {
			return "", &refusal{ReasonProviderConfigChange, fmt.Sprintf(
				"%s %s uses ProviderConfig %q, but this composite's is now %q: moved, its Neutron objects would be looked for, and made again, "+
					"with other credentials; nothing was changed: "+fix,
				str(o, "kind"), str(o, "metadata.name"), used, pc, used)}
		}
	}
	return pc, nil
}

// pinned is the ProviderConfig the pins of namespace ns name, or
// DefaultProviderConfig when there is none; pins that disagree, or one
// that names none, are refused, naming them.
func pinned(ns string, pins []*fieldpath.Paved) (string, *refusal) {
	names := map[string][]string{}
	for _, p := range pins {
		pc, _ := p.GetString("data." + PinKey)
		names[pc] = append(names[pc], str(p, "metadata.name"))
	}
	switch {
	case len(names) == 0:
		return DefaultProviderConfig, nil
	case len(names) == 1 && names[""] == nil:
		for pc := range names {
			return pc, nil
		}
	}
	var say []string
	for pc, ecs := range names {
		slices.Sort(ecs)
		say = append(say, fmt.Sprintf("%s: %q", strings.Join(ecs, ", "), pc))
	}
	slices.Sort(say)
	return "", &refusal{ReasonProviderConfigPinsConflict, fmt.Sprintf(
		"the EnvironmentConfigs labelled %s=%s must all name one ProviderConfig in data.%s, but they name: %s: "+
			"the platform fixes them; nothing was changed", PinLabel, ns, PinKey, strings.Join(say, "; "))}
}
