package gateway

import (
	"context"
	"encoding/json"
	"testing"

	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/managedfields"
	clientgoapplyconfigurations "k8s.io/client-go/applyconfigurations"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/structured-merge-diff/v6/typed"

	"github.com/ipsecgw/provider-ipsec/internal/workload"
)

// newTarget returns a fake target cluster holding objs that server-side
// applies as the API server does: it records each applier's fields in the
// objects' managed fields and returns them, which Extract<Kind> reads.
// funcs, when given, intercept its calls.
func newTarget(funcs *interceptor.Funcs, objs ...client.Object) client.WithWatch {
	b := fake.NewClientBuilder().WithReturnManagedFields().WithObjects(objs...).
		WithTypeConverters(typeConverter{clientgoapplyconfigurations.NewTypeConverter(scheme.Scheme)}, managedfields.NewDeducedTypeConverter())
	if funcs != nil {
		b = b.WithInterceptorFuncs(*funcs)
	}
	return b.Build()
}

// typeConverter is client-go's type converter, for the fake target: the
// fake gives a NetworkPolicy being applied the status its Go type still
// has and client-go's schema no longer declares, which the API server
// never does; this converter drops it.
type typeConverter struct{ managedfields.TypeConverter }

// ObjectToTyped converts o as client-go's type converter does, a
// NetworkPolicy without its status.
func (c typeConverter) ObjectToTyped(o runtime.Object, opts ...typed.ValidationOptions) (*typed.TypedValue, error) {
	switch np := o.(type) {
	case *networkingv1.NetworkPolicy:
		u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(np)
		if err != nil {
			return nil, err
		}
		o = &unstructured.Unstructured{Object: u}
		o.GetObjectKind().SetGroupVersionKind(networkingv1.SchemeGroupVersion.WithKind("NetworkPolicy"))
	case *unstructured.Unstructured:
		if np.GetKind() == "NetworkPolicy" {
			np = np.DeepCopy()
			o = np
		}
	}
	if u, ok := o.(*unstructured.Unstructured); ok && u.GetKind() == "NetworkPolicy" {
		delete(u.Object, "status")
	}
	return c.TypeConverter.ObjectToTyped(o, opts...)
}

// applyAll applies every object of o to c as manager does.
func applyAll(t *testing.T, c client.Client, o *workload.Objects, manager string) {
	t.Helper()
	for _, x := range ownedObjects(o) {
		if err := c.Apply(context.Background(), x.apply, client.FieldOwner(manager), client.ForceOwnership); err != nil {
			t.Fatalf("apply %s %s: %v", x.kind, x.live.GetName(), err)
		}
	}
}

// decode decodes the JSON of from, an apply configuration, into to, the
// typed object it describes.
func decode(t *testing.T, from, to any) {
	t.Helper()
	b, err := json.Marshal(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, to); err != nil {
		t.Fatal(err)
	}
}
