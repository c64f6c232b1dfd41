package function

import (
	"fmt"
	"slices"

	"github.com/crossplane/crossplane-runtime/v2/pkg/fieldpath"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	gwv1alpha1 "github.com/ipsecgw/provider-ipsec/apis/cluster/gateway/v1alpha1"
)

// TypeStepsReady is the condition the function sets on the composite and
// its claim: True once every step of the runbook is Ready; else False with
// the first failing step (or, when none fails, the first one still
// waiting) and its message, so that `kubectl get` (column STEPS) and
// `kubectl describe` of the claim say what is wrong without reading
// status.<step>.conditions.
const TypeStepsReady = "StepsReady"

// The reasons of condition StepsReady besides a step's <Step>Failed and
// those of a refused ProviderConfig (pin.go).
const (
	// ReasonAllStepsReady: every composed resource is Ready.
	ReasonAllStepsReady = "AllStepsReady"
	// ReasonWaiting: no step fails, one is still being made or waits for
	// another (such as the Gateway for the port's address).
	ReasonWaiting = "Waiting"
)

// A step is one of the runbook's steps: a composed resource, the name of
// its status on the composite and the reason prefix of its failure.
type step struct {
	Resource, Status, Reason string
}

// steps are the runbook's steps in its order: the first failing one is the
// one a tenant fixes first.
var steps = []step{
	{SecurityGroupName, "securityGroup", "SecurityGroup"},
	{PortName, "port", "Port"},
	{FloatingIPName, "floatingIP", "FloatingIP"},
	{RoutesName, "routing", "Routing"},
	{NodePairsName, "nodePorts", "NodePorts"},
	{GatewayName, "gateway", "Gateway"},
}

// stepsReady returns condition StepsReady of the composed resources objs
// (those composed in this run, by name) as observed, where blocked says why the
// Gateway cannot be composed (the warnings of Compose). A step fails when
// its resource is not Synced (the provider's error: a pinned floating IP
// that another port holds, a fixed IP outside its subnet, Neutron's
// refusal) or, for the Gateway, its configuration is not rendered (an
// unknown proposal, a missing PSK Secret), or when the Gateway is blocked.
// A step waits when its resource is not observed yet or not Ready; the
// message then says the first condition that is not True.
func stepsReady(objs map[string]runtime.Object, observed Observed, blocked []string) (status fnv1.Status, reason, message string) {
	var waiting string
	for _, s := range steps {
		// The Gateway is a step from the start, composed or not; the
		// others when composed (RouterRoutes only in mode routed).
		if _, ok := objs[s.Resource]; !ok && s.Resource != GatewayName {
			continue
		}
		o := observed[s.Resource]
		if o == nil && s.Resource == GatewayName && len(blocked) > 0 {
			return fnv1.Status_STATUS_CONDITION_FALSE, s.Reason + "Failed", fmt.Sprintf("step %s: %s", s.Status, blocked[0])
		}
		failed, wait := judge(s, o)
		if failed != "" {
			return fnv1.Status_STATUS_CONDITION_FALSE, s.Reason + "Failed", failed
		}
		if waiting == "" {
			waiting = wait
		}
	}
	if waiting != "" {
		return fnv1.Status_STATUS_CONDITION_FALSE, ReasonWaiting, waiting
	}
	return fnv1.Status_STATUS_CONDITION_TRUE, ReasonAllStepsReady, "every step of the runbook is Ready"
}

// judge says why the step s, whose resource is o as observed (nil: not
// observed yet), fails or else waits; both empty once it is Ready.
func judge(s step, o *fieldpath.Paved) (failed, waiting string) {
	if o == nil {
		return "", fmt.Sprintf("step %s: not made yet", s.Status)
	}
	cs := []xpv2.Condition{}
	_ = o.GetValueInto(conditions, &cs)
	what := fmt.Sprintf("step %s (%s %s)", s.Status, str(o, "kind"), str(o, "metadata.name"))
	for _, c := range cs {
		if c.Status == corev1.ConditionFalse && (c.Type == xpv2.TypeSynced || c.Type == gwv1alpha1.TypeConfigRendered) {
			return fmt.Sprintf("%s: %s %s: %s", what, c.Type, c.Reason, c.Message), ""
		}
	}
	if ready(o) == fnv1.Ready_READY_TRUE {
		return "", ""
	}
	i := slices.IndexFunc(cs, func(c xpv2.Condition) bool { return c.Status != corev1.ConditionTrue })
	if i < 0 {
		return "", what + ": not Ready"
	}
	waiting = fmt.Sprintf("%s: %s %s", what, cs[i].Type, cs[i].Reason)
	if cs[i].Message != "" {
		waiting += ": " + cs[i].Message
	}
	return "", waiting
}

// setStepsReady adds condition StepsReady to rsp, for the composite and its
// claim.
func setStepsReady(rsp *fnv1.RunFunctionResponse, status fnv1.Status, reason, message string) {
	rsp.Conditions = append(rsp.Conditions, &fnv1.Condition{
		Type:    TypeStepsReady,
		Status:  status,
		Reason:  reason,
		Message: &message,
		Target:  fnv1.Target_TARGET_COMPOSITE_AND_CLAIM.Enum(),
	})
}

// advisories returns a warning result, to the composite and its claim, for
// each advisory of the observed Gateway (status.atProvider.warnings) that
// the composite does not hold yet (status.gateway.warnings, which the run
// before rolled up): an advisory is an event once, when it appears, not at
// every reconcile of the composite; the standing ones are in
// status.gateway.warnings.
func advisories(xr *fieldpath.Paved, observed Observed) []*fnv1.Result {
	gw, ok := observed[GatewayName]
	if !ok {
		return nil
	}
	var ws, held []string
	if err := gw.GetValueInto("status.atProvider.warnings", &ws); err != nil {
		return nil
	}
	_ = xr.GetValueInto("status.gateway.warnings", &held)
	out := make([]*fnv1.Result, 0, len(ws))
	for _, w := range ws {
		if slices.Contains(held, w) {
			continue
		}
		out = append(out, &fnv1.Result{
			Severity: fnv1.Severity_SEVERITY_WARNING,
			Message:  advisory + ": " + w,
			Target:   fnv1.Target_TARGET_COMPOSITE_AND_CLAIM.Enum(),
		})
	}
	return out
}
