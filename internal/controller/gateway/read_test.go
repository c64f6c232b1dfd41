package gateway

import (
	"context"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/ipsecgw/provider-ipsec/apis/cluster/gateway/v1alpha1"
	"github.com/ipsecgw/provider-ipsec/internal/workload"
)

// counted returns a client of objs that counts its Gets by kind and key.
func counted(gets map[string]int, objs ...client.Object) client.Client {
	return interceptor.NewClient(fake.NewClientBuilder().WithObjects(objs...).Build(), interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			gets[fmt.Sprintf("%T %s", obj, key)]++
			return c.Get(ctx, key, obj, opts...)
		},
	})
}

// TestReadOnce proves that readOnce reads each object once, hands out
// copies, remembers a NotFound, and tells kinds apart.
func TestReadOnce(t *testing.T) {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: testNS, Name: "a"}, Data: map[string]string{"k": "v"}}
	key := client.ObjectKeyFromObject(cm)
	nad := func() *unstructured.Unstructured {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(workload.NADKind)
		return u
	}
	cases := map[string]struct {
		reason string
		// reads are the objects read, each under key, in turn.
		reads func() []client.Object
		want  map[string]int
	}{
		"Twice": {
			reason: "The same object read twice is read once.",
			reads:  func() []client.Object { return []client.Object{&corev1.ConfigMap{}, &corev1.ConfigMap{}} },
			want:   map[string]int{"*v1.ConfigMap tenant-a/a": 1},
		},
		"NotFoundTwice": {
			reason: "An object that does not exist is looked up once.",
			reads:  func() []client.Object { return []client.Object{&corev1.Secret{}, &corev1.Secret{}} },
			want:   map[string]int{"*v1.Secret tenant-a/a": 1},
		},
		"KindsApart": {
			reason: "Objects of other types or kinds under the same key are each read.",
			reads: func() []client.Object {
				return []client.Object{&corev1.ConfigMap{}, &appsv1.Deployment{}, nad(), &corev1.ConfigMap{}}
			},
			want: map[string]int{"*v1.ConfigMap tenant-a/a": 1, "*v1.Deployment tenant-a/a": 1, "*unstructured.Unstructured tenant-a/a": 1},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			gets := map[string]int{}
			r := &readOnce{Reader: counted(gets, cm)}
			for _, o := range tc.reads() {
				_ = r.Get(context.Background(), key, o)
			}
			if diff := cmp.Diff(tc.want, gets); diff != "" {
				t.Errorf("%s\nreads of the cluster: -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
	t.Run("Copies", func(t *testing.T) {
		r := &readOnce{Reader: counted(map[string]int{}, cm)}
		first, second := &corev1.ConfigMap{}, &corev1.ConfigMap{}
		if err := r.Get(context.Background(), key, first); err != nil {
			t.Fatal(err)
		}
		first.Data["k"] = "changed by the first reader"
		if err := r.Get(context.Background(), key, second); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(map[string]string{"k": "v"}, second.Data); diff != "" {
			t.Errorf("a change to the first read's object reached the second: -want, +got:\n%s", diff)
		}
	})
}

// TestObserveReadsEachSecretOnce proves that an Observe reads a Secret
// two tunnels name once.
func TestObserveReadsEachSecretOnce(t *testing.T) {
	gw := testGateway()
	b := gw.Spec.ForProvider.Tunnels[0]
	b.Name, b.Peer.Address = "branch-b", "198.51.100.8"
	b.TrafficSelectors = []v1alpha1.TrafficSelector{{Local: "100.64.0.0/24", Remote: "192.168.20.0/24"}}
	gw.Spec.ForProvider.Tunnels = append(gw.Spec.ForProvider.Tunnels, b)
	gets := map[string]int{}
	e := newExternal(counted(gets, pskSecret()), newTarget(nil))
	if _, err := e.Observe(context.Background(), gw); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]int{"*v1.Secret tenant-a/vpn-psk": 1}, gets); diff != "" {
		t.Errorf("reads of the provider's cluster by an Observe of two tunnels naming one Secret: -want, +got:\n%s", diff)
	}
}
