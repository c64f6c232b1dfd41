package v1alpha1

import (
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Condition types of a Gateway beside Ready and Synced.
const (
	// TypeConfigRendered says whether the configuration was rendered from
	// the spec and written to the cluster.
	TypeConfigRendered xpv2.ConditionType = "ConfigRendered"
	// TypeDeploymentReady says whether the gateway pod runs and is ready.
	TypeDeploymentReady xpv2.ConditionType = "DeploymentReady"
)

// Reasons of the Gateway's conditions.
const (
	ReasonRendered      xpv2.ConditionReason = "Rendered"
	ReasonInvalidSpec   xpv2.ConditionReason = "InvalidSpec"
	ReasonMissingSecret xpv2.ConditionReason = "MissingSecret"
	// ReasonInvalidCertificate: a certificate tunnel's Secret or CA
	// ConfigMap is missing, of the wrong type, or holds a certificate or
	// key that cannot work (expired, not yet valid, not a pair, no CA).
	ReasonInvalidCertificate xpv2.ConditionReason = "InvalidCertificate"
	ReasonPodReady           xpv2.ConditionReason = "PodReady"
	ReasonPreStaged          xpv2.ConditionReason = "PreStaged"
	ReasonPodNotReady        xpv2.ConditionReason = "PodNotReady"
	ReasonNoDeployment       xpv2.ConditionReason = "NoDeployment"
)

func condition(t xpv2.ConditionType, s corev1.ConditionStatus, r xpv2.ConditionReason, msg string) xpv2.Condition {
	return xpv2.Condition{Type: t, Status: s, Reason: r, Message: msg, LastTransitionTime: metav1.Now()}
}

// ConfigRendered says the configuration was rendered and written.
func ConfigRendered() xpv2.Condition {
	return condition(TypeConfigRendered, corev1.ConditionTrue, ReasonRendered, "")
}

// ConfigNotRendered says why the configuration could not be rendered; msg
// names the tunnel and field at fault.
func ConfigNotRendered(r xpv2.ConditionReason, msg string) xpv2.Condition {
	return condition(TypeConfigRendered, corev1.ConditionFalse, r, msg)
}

// DeploymentReady says the gateway pod is ready.
func DeploymentReady() xpv2.Condition {
	return condition(TypeDeploymentReady, corev1.ConditionTrue, ReasonPodReady, "")
}

// DeploymentNotReady says why the gateway pod is not ready.
func DeploymentNotReady(r xpv2.ConditionReason, msg string) xpv2.Condition {
	return condition(TypeDeploymentReady, corev1.ConditionFalse, r, msg)
}
