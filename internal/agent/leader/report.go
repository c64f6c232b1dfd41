package leader

import (
	"context"
	"encoding/json"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/logging"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ipsecgw/provider-ipsec/apis/cluster/gateway/v1alpha1"
	"github.com/ipsecgw/provider-ipsec/internal/contract"
)

// Report writes, as the active pod pod on node, the takeover t into the
// status ConfigMap name (key contract.KeyLeader, a v1alpha1.LeaderStatus),
// with a merge patch of that key alone: the tunnel status beside it is
// left as it is. It tries until it succeeds or ctx ends (this pod is no
// longer active), every second.
func Report(ctx context.Context, c client.Client, namespace, name, pod, node string, t Takeover, log logging.Logger) {
	since := metav1.NewTime(t.At)
	ls := v1alpha1.LeaderStatus{Pod: pod, Node: node, Since: &since, Cause: t.Cause, Previous: t.Previous}
	raw, err := json.Marshal(ls)
	if err != nil {
		log.Info("Cannot encode this pod as the active one", "error", err)
		return
	}
	patchKey(ctx, c, namespace, name, contract.KeyLeader, string(raw), "this pod as the active one", log)
}

// ReportSilentStart writes pod, the single pod's name, into the status
// ConfigMap name as contract.KeySilentStart: this agent lets net1 answer
// ARP only once it holds the Lease and resets the arp_ignore the CNI may
// bring it up with (Handover), so the provider may have the pods of its
// image start silent. It tries as Report does.
func ReportSilentStart(ctx context.Context, c client.Client, namespace, name, pod string, log logging.Logger) {
	patchKey(ctx, c, namespace, name, contract.KeySilentStart, pod, "that this agent resets arp_ignore", log)
}

// patchKey sets key to value in the data of ConfigMap name with a merge
// patch, every second until it succeeds or ctx ends; what names the report
// in the log lines of failed tries.
func patchKey(ctx context.Context, c client.Client, namespace, name, key, value, what string, log logging.Logger) {
	patch, _ := json.Marshal(dataPatch{Data: map[string]string{key: value}})
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}
	for {
		err := c.Patch(ctx, cm, client.RawPatch(types.MergePatchType, patch))
		if err == nil {
			return
		}
		log.Info("Cannot report "+what+"; trying again", "error", err)
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Second):
		}
	}
}

// dataPatch is a merge patch of some keys of a ConfigMap's data.
type dataPatch struct {
	Data map[string]string `json:"data"`
}
