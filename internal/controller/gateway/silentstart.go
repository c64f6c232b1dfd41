package gateway

import (
	"context"
	"fmt"

	"github.com/crossplane/crossplane-runtime/v2/pkg/event"
	corev1 "k8s.io/api/core/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ipsecgw/provider-ipsec/apis/cluster/gateway/v1alpha1"
	"github.com/ipsecgw/provider-ipsec/internal/workload"
)

// reasonSilentStart is the reason of the Warning event of a Gateway whose
// agent's pod the provider cannot read (silentStartImage).
const reasonSilentStart event.Reason = "CannotReadAgentPod"

// silentStartImage returns what status.atProvider.silentStartImage is to
// hold: the agent image of the pod of gw that the agent's status ConfigMap
// names under contract.KeySilentStart (reported, its agent resets
// arp_ignore), or,
// while there is no such pod (none named, or gone), what it holds. The
// image is read from the pod, not from the Gateway: the pod that reported
// may run an image the Gateway names no longer. Nothing is read once it
// holds the Gateway's own agent image, nor while the gateway runs other
// than one pod (replicas), the only case it serves (an active/standby pair keeps the
// key of the single pod before it, which is gone). A pod it cannot read
// is a Warning event, not an error: the gateway runs as before, its
// replacement pods answering ARP from their start.
func (e *external) silentStartImage(ctx context.Context, gw *v1alpha1.Gateway, replicas int32, reported string) string {
	was := gw.Status.AtProvider.SilentStartImage
	if (was != "" && was == gw.Spec.ForProvider.Images.Agent) || replicas != 1 || reported == "" {
		return was
	}
	ns, name := gw.Spec.ForProvider.Namespace, reported
	// Pods are not the Gateway's objects: read from the API server.
	pod := &corev1.Pod{}
	switch err := e.target.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, pod); {
	case kerrors.IsNotFound(err):
		return was
	case err != nil:
		e.recorder.Event(gw, event.Warning(reasonSilentStart, fmt.Errorf(
			"cannot get pod %s/%s, whose agent reported in ConfigMap %s that its replacements may start silent on the tenant network: %w; "+
				"grant the provider get on pods in namespace %s (examples/gitops/platform/provider-rbac.yaml)", ns, name, workload.NamesOf(gw.Name).Status, err, ns)))
		return was
	}
	// The ConfigMap is the agent's to write: only a pod of this gateway
	// says anything of its agent image.
	if pod.Labels[workload.LabelGateway] != gw.Name {
		return was
	}
	for _, c := range pod.Spec.Containers {
		if c.Name == workload.ContainerAgent {
			return c.Image
		}
	}
	return was
}
