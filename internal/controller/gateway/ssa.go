package gateway

import (
	"bytes"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/managedfields"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	coordinationv1ac "k8s.io/client-go/applyconfigurations/coordination/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	networkingv1ac "k8s.io/client-go/applyconfigurations/networking/v1"
	rbacv1ac "k8s.io/client-go/applyconfigurations/rbac/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/structured-merge-diff/v6/typed"

	"github.com/ipsecgw/provider-ipsec/internal/controller/drift"
	"github.com/ipsecgw/provider-ipsec/internal/workload"
)

// errExtract is the error of a cluster object whose managed fields do not
// parse.
const errExtract = "cannot extract the provider's fields of %s %s/%s"

// owned is one object a Gateway owns in its target cluster: what the
// provider applies, and how it finds what of that the cluster holds.
type owned struct {
	// kind is the object's kind, for messages.
	kind string
	// apply is its apply configuration.
	apply runtime.ApplyConfiguration
	// live is an empty object of its kind, name and namespace, to read
	// the cluster's copy into.
	live client.Object
	// desired is what the provider's field manager must own in the
	// cluster's copy: apply, or the NAD's content.
	desired any
	// extract returns what the provider's field manager owns in live, the
	// cluster's copy, in desired's type: client-go's Extract<Kind>.
	extract func(live client.Object) (any, error)
	// redact, when set, replaces the values that must not reach a log in
	// desired and in what extract returned by placeholders that differ
	// where the values do.
	redact func(desired, extracted any) (any, any)
}

// applyConfiguration is what every typed apply configuration has.
type applyConfiguration interface {
	runtime.ApplyConfiguration
	GetKind() *string
	GetName() *string
	GetNamespace() *string
}

// typedOwned is the owned object of ac, a typed apply configuration whose
// cluster copies are of type L, read as live and extracted with extract.
func typedOwned[L client.Object, A applyConfiguration](ac A, live L, extract func(L, string) (A, error)) owned {
	live.SetName(ptr.Deref(ac.GetName(), ""))
	live.SetNamespace(ptr.Deref(ac.GetNamespace(), ""))
	return owned{
		kind: ptr.Deref(ac.GetKind(), ""), apply: ac, live: live, desired: ac,
		extract: func(o client.Object) (any, error) { return extract(o.(L), fieldManager) },
	}
}

// ownedObjects returns every object of o, in apply order (the Deployment
// last).
func ownedObjects(o *workload.Objects) []owned {
	objs := []owned{
		unstructuredOwned(o.NetworkAttachment),
		typedOwned(o.Config, &corev1.ConfigMap{}, corev1ac.ExtractConfigMap),
		secretOwned(o.Secrets),
		typedOwned(o.Status, &corev1.ConfigMap{}, corev1ac.ExtractConfigMap),
		typedOwned(o.ServiceAccount, &corev1.ServiceAccount{}, corev1ac.ExtractServiceAccount),
		typedOwned(o.Role, &rbacv1.Role{}, rbacv1ac.ExtractRole),
		typedOwned(o.RoleBinding, &rbacv1.RoleBinding{}, rbacv1ac.ExtractRoleBinding),
		typedOwned(o.NetworkPolicy, &networkingv1.NetworkPolicy{}, networkingv1ac.ExtractNetworkPolicy),
	}
	if o.Lease != nil {
		objs = append(objs, typedOwned(o.Lease, &coordinationv1.Lease{}, coordinationv1ac.ExtractLease))
	}
	return append(objs, typedOwned(o.Deployment, &appsv1.Deployment{}, appsv1ac.ExtractDeployment))
}

// unstructuredOwned is the owned object of u, an object of a kind client-go
// has no apply configuration of (the NetworkAttachmentDefinition).
func unstructuredOwned(u *unstructured.Unstructured) owned {
	live := &unstructured.Unstructured{}
	live.SetGroupVersionKind(u.GroupVersionKind())
	live.SetName(u.GetName())
	live.SetNamespace(u.GetNamespace())
	return owned{
		kind: u.GetKind(), apply: client.ApplyConfigurationFromUnstructured(u), live: live, desired: u.Object,
		extract: extractUnstructured,
	}
}

// extractUnstructured is Extract<Kind> of an unstructured object: the
// fields the provider's field manager applied, read with a schema deduced
// from the object (maps granular, lists atomic: the
// NetworkAttachmentDefinition has a map and strings only), with its kind
// and name as the typed Extract<Kind> sets them.
func extractUnstructured(live client.Object) (any, error) {
	u := live.(*unstructured.Unstructured)
	m := map[string]any{}
	if err := managedfields.ExtractInto(u, typed.DeducedParseableType, fieldManager, &m, ""); err != nil {
		return nil, err
	}
	out := &unstructured.Unstructured{Object: m}
	out.SetAPIVersion(u.GetAPIVersion())
	out.SetKind(u.GetKind())
	out.SetName(u.GetName())
	out.SetNamespace(u.GetNamespace())
	return out.Object, nil
}

// secretOwned is the owned object of the gateway's Secret, whose data (the
// PSKs and private keys) a difference never shows.
func secretOwned(ac *corev1ac.SecretApplyConfiguration) owned {
	o := typedOwned(ac, &corev1.Secret{}, corev1ac.ExtractSecret)
	o.redact = func(desired, extracted any) (any, any) {
		w, h := *desired.(*corev1ac.SecretApplyConfiguration), *extracted.(*corev1ac.SecretApplyConfiguration)
		w.Data, h.Data = redactData(w.Data, h.Data)
		return &w, &h
	}
	return o
}

// redactData returns want and have, the desired and the owned data of a
// Secret, with each value replaced: by its length in want, and in have by
// the same when it holds want's value, else by a placeholder saying it
// differs.
func redactData(want, have map[string][]byte) (map[string][]byte, map[string][]byte) {
	w, h := map[string][]byte{}, map[string][]byte{}
	for k, v := range want {
		w[k] = fmt.Appendf(nil, "(%d bytes)", len(v))
	}
	for k, v := range have {
		h[k] = []byte("(another value)")
		if bytes.Equal(v, want[k]) {
			h[k] = w[k]
		}
	}
	return w, h
}

// compare records in r how what the provider's field manager owns in live,
// the cluster's copy of o, differs from what it applies.
func (o owned) compare(r *drift.Report, live client.Object) error {
	extracted, err := o.extract(live)
	if err != nil {
		return fmt.Errorf(errExtract+": %w", o.kind, live.GetNamespace(), live.GetName(), err)
	}
	want := o.desired
	if equality.Semantic.DeepEqual(want, extracted) {
		// Nil and empty compare equal here too, as in Differs, at a
		// tenth of go-cmp's cost: what every poll of a Gateway at rest
		// pays.
		return nil
	}
	if o.redact != nil {
		want, extracted = o.redact(want, extracted)
	}
	r.Differs(fmt.Sprintf("%s %s/%s", o.kind, live.GetNamespace(), live.GetName()), want, extracted)
	return nil
}
