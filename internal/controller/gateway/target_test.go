package gateway

import (
	"context"
	"encoding/json"
	"testing"

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

// typeConverter is client-go's type converter, for the fake target. The
// API server takes an applier's fields from what it sent; the fake decodes
// it into the Go type of its kind first, which adds every struct of that
// type, empty ones too (the status, a container's resources), so the
// applier would own fields it never sent, and a NetworkPolicy gets the
// status client-go's schema no longer declares. This converter drops empty
// objects and nulls before converting, as the API server never saw them;
// an empty emptyDir is a value and stays.
type typeConverter struct{ managedfields.TypeConverter }

// ObjectToTyped converts o as client-go's type converter does, without
// its empty objects and nulls.
func (c typeConverter) ObjectToTyped(o runtime.Object, opts ...typed.ValidationOptions) (*typed.TypedValue, error) {
	gvk := o.GetObjectKind().GroupVersionKind()
	if gvk.Empty() {
		gvks, _, err := scheme.Scheme.ObjectKinds(o)
		if err != nil {
			return nil, err
		}
		gvk = gvks[0]
	}
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o)
	if err != nil {
		return nil, err
	}
	u = runtime.DeepCopyJSON(u)
	dropEmpty(u)
	obj := &unstructured.Unstructured{Object: u}
	obj.SetGroupVersionKind(gvk)
	return c.TypeConverter.ObjectToTyped(obj, opts...)
}

// dropEmpty removes the nulls and empty objects in m, but emptyDir's,
// depth first.
func dropEmpty(m map[string]any) {
	for k, v := range m {
		switch v := v.(type) {
		case nil:
			delete(m, k)
		case map[string]any:
			dropEmpty(v)
			if len(v) == 0 && k != "emptyDir" {
				delete(m, k)
			}
		case []any:
			for _, e := range v {
				if e, ok := e.(map[string]any); ok {
					dropEmpty(e)
				}
			}
		}
	}
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
