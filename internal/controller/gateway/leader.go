package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/event"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ipsecgw/provider-ipsec/apis/cluster/gateway/v1alpha1"
	"github.com/ipsecgw/provider-ipsec/internal/workload"
)

// Reasons of the events a Gateway with replicas 2 emits when its active
// pod changes.
const (
	reasonActive   event.Reason = "ActivePod"
	reasonHandover event.Reason = "Handover"
	reasonFailover event.Reason = "Failover"
)

const errDeletionCost = "cannot set the pod-deletion-cost of the gateway's pods"

// leaderEvent returns the event for a change of the active pod from old
// to now, or nil: a Warning Failover when now took over because old's
// Lease expired, a Normal Handover when the pod before released it, a
// Normal ActivePod for the first one.
func leaderEvent(old, now *v1alpha1.LeaderStatus) *event.Event {
	if now == nil || (old != nil && old.Pod == now.Pod && old.Since.Equal(now.Since)) {
		return nil
	}
	at := ""
	if now.Since != nil {
		at = " since " + now.Since.UTC().Format(time.RFC3339)
	}
	who := fmt.Sprintf("pod %s on node %s is active%s", now.Pod, now.Node, at)
	var ev event.Event
	switch now.Cause {
	case "expired":
		ev = event.Warning(reasonFailover, fmt.Errorf("Failover: %s: the Lease of %s expired (its pod or node was lost or cut off from the API server)", who, now.Previous)) //nolint:staticcheck // ST1005: an event's sentence
	case "released":
		ev = event.Normal(reasonHandover, fmt.Sprintf("Handover: %s: the pod before it released the Lease (it was stopped, as on a rollout or a deleted pod)", who))
	default:
		ev = event.Normal(reasonActive, fmt.Sprintf("Active: %s", who))
	}
	return &ev
}

// rankPods gives the active pod of a gateway with replicas 2 the higher
// pod-deletion-cost and the others none, so that a rolling update of the
// Deployment (maxSurge 0, maxUnavailable 1) deletes the standby first and
// the active pod last. It is run before the Deployment is applied.
func (e *external) rankPods(ctx context.Context, gw *v1alpha1.Gateway) error {
	ls := gw.Status.AtProvider.Leader
	if workload.Replicas(gw) < 2 || ls == nil {
		return nil
	}
	pods := &corev1.PodList{}
	if err := e.target.List(ctx, pods, client.InNamespace(gw.Spec.ForProvider.Namespace), client.MatchingLabels(workload.Labels(gw.Name))); err != nil {
		return fmt.Errorf("%s: %w", errDeletionCost, err)
	}
	for i := range pods.Items {
		p := &pods.Items[i]
		var want *string
		if p.Name == ls.Pod {
			c := workload.ActiveDeletionCost
			want = &c
		}
		have, ok := p.Annotations[workload.AnnotationDeletionCost]
		if (want == nil && !ok) || (want != nil && ok && have == *want) {
			continue
		}
		patch, _ := json.Marshal(annotationsPatch{Metadata: annotations{Annotations: map[string]*string{workload.AnnotationDeletionCost: want}}})
		if err := e.target.Patch(ctx, p, client.RawPatch(types.MergePatchType, patch)); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("%s: %w", errDeletionCost, err)
		}
	}
	return nil
}

// annotationsPatch is a merge patch of an object's annotations: a nil
// value removes the annotation.
type annotationsPatch struct {
	Metadata annotations `json:"metadata"`
}

type annotations struct {
	Annotations map[string]*string `json:"annotations"`
}
