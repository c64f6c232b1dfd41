package mrsetup

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"
	jsonpatch "github.com/evanphx/json-patch"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

// referenceFieldOwner owns the fields references resolve: crossplane-runtime's
// own resolver's name, so that the provider's resolver takes over the
// fields it resolved before.
const referenceFieldOwner = "managed.crossplane.io/api-simple-reference-resolver"

const (
	errResolveReferences = "cannot resolve references"
	errPatchReferences   = "cannot save resolved references"
)

// following is a managed resource whose resolved references can be
// cleared to be resolved again (the networking kinds' ClearResolvedReferences).
type following interface {
	resource.Managed
	ResolveReferences(ctx context.Context, r client.Reader) error
	ClearResolvedReferences()
}

// ownNamespaced is a namespaced managed resource whose references name
// managed resources of its own namespace by leaving the namespace out,
// which its resolver's selections carry (the namespaced networking kinds).
type ownNamespaced interface {
	OmitReferenceNamespaces()
}

// FollowingResolver resolves a managed resource's references at every
// reconcile, so that a resolved ID follows the managed resource its
// reference or selector names (see the networking API's references.go):
// it clears what they resolved, resolves them again through its client
// (the manager's cache) and, only when a resolved value changed, applies
// every resolved field server-side as crossplane-runtime's resolver's
// field owner. A kind without
// ClearResolvedReferences is resolved as crossplane-runtime does.
type FollowingResolver struct {
	client client.Client
}

// NewFollowingResolver returns a FollowingResolver reading and writing
// through c.
func NewFollowingResolver(c client.Client) *FollowingResolver { return &FollowingResolver{client: c} }

// ResolveReferences of mg. An error leaves mg's resolved fields cleared;
// the managed reconciler then saves only mg's status.
func (r *FollowingResolver) ResolveReferences(ctx context.Context, mg resource.Managed) error {
	rr, ok := mg.(following)
	if !ok {
		return nil
	}
	existing := mg.DeepCopyObject().(resource.Managed)
	rr.ClearResolvedReferences()
	cleared := mg.DeepCopyObject().(resource.Managed)
	if err := rr.ResolveReferences(ctx, r.client); err != nil {
		return fmt.Errorf("%s: %w", errResolveReferences, err)
	}
	if o, ok := mg.(ownNamespaced); ok {
		o.OmitReferenceNamespaces()
	}
	if cmp.Equal(existing, mg, cmpopts.EquateEmpty()) {
		return nil
	}
	gvk, err := apiutil.GVKForObject(mg, r.client.Scheme())
	if err != nil {
		return fmt.Errorf("%s: %w", errPatchReferences, err)
	}
	// Every field resolution filled in, not only those that changed: an
	// apply patch is the whole set of fields its owner wants, and a field
	// the resolver owned but left out is removed. crossplane-runtime's
	// resolver sends only the changed fields, which is harmless when a
	// reference is resolved once; resolved again, a new port ID alone
	// removed the portIdRef the selector had chosen, the next resolution's
	// portIdRef alone removed the port ID, and so on, several writes a
	// second for ever (issue 29).
	patch, err := resolvedFields(cleared, mg, gvk)
	if err != nil {
		return fmt.Errorf("%s: %w", errPatchReferences, err)
	}
	if err := r.client.Patch(ctx, mg, client.RawPatch(types.ApplyPatchType, patch), client.FieldOwner(referenceFieldOwner), client.ForceOwnership); err != nil {
		return fmt.Errorf("%s: %w", errPatchReferences, err)
	}
	return nil
}

// resolvedFields returns the fields resolution set in resolved, as a JSON
// merge patch from cleared (resolved before resolution, its resolved
// fields cleared) to resolved, naming resolved's kind (an apply patch
// must).
func resolvedFields(cleared, resolved client.Object, gvk schema.GroupVersionKind) ([]byte, error) {
	e := cleared.DeepCopyObject().(client.Object)
	e.GetObjectKind().SetGroupVersionKind(schema.GroupVersionKind{})
	r := resolved.DeepCopyObject().(client.Object)
	r.GetObjectKind().SetGroupVersionKind(gvk)
	eb, err := json.Marshal(e)
	if err != nil {
		return nil, err
	}
	rb, err := json.Marshal(r)
	if err != nil {
		return nil, err
	}
	return jsonpatch.CreateMergePatch(eb, rb)
}
