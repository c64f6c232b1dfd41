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
	patch, _ := json.Marshal(dataPatch{Data: map[string]string{contract.KeyLeader: string(raw)}})
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}
	for {
		err := c.Patch(ctx, cm, client.RawPatch(types.MergePatchType, patch))
		if err == nil {
			return
		}
		log.Info("Cannot report this pod as the active one; trying again", "error", err)
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
