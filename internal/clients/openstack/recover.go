package openstack

import (
	"context"
	"fmt"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"
	"github.com/gophercloud/gophercloud/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// errRecover prefixes the errors of a CreateRecovery; %s is the MR's name.
const errRecover = "%s: cannot find out whether its interrupted create made a Neutron object"

// A Finder returns the ID of the Neutron object that a create for mg made
// ("" for none) and whether that answer is known: false when nothing can
// identify the object, such as a Neutron that returns no descriptions
// (see ScanCreated).
type Finder func(ctx context.Context, sc *gophercloud.ServiceClient, mg resource.Managed) (id string, known bool, err error)

// CreateRecovery is an initializer of the managed reconciler that settles a
// create the provider did not live to record, before crossplane-runtime's
// create-pending guard looks at it.
//
// The reconciler saves the annotation crossplane.io/external-create-pending
// before it calls Create, and external-create-succeeded (with the external
// name) or -failed after. A provider killed in between leaves the pending
// one newest: the create is incomplete, and the reconciler refuses to go
// on (Synced=False, "cannot determine creation result - remove the
// crossplane.io/external-create-pending annotation if it is safe to
// proceed"), since creating again could make a twin. The OpenStack kinds
// keep that guard (they do not claim a deterministic external name), and
// this initializer, which the reconciler runs just before it, resolves what
// the marker can resolve: when Find finds the object it is adopted (its ID
// becomes the external name and the create is recorded as succeeded); when
// Find proves there is none and the create has settled (Settling: Neutron
// keeps processing a POST after its client is killed) the pending
// annotation is removed, as the guard's message asks a person to do when
// it is safe, and the next Observe and Create proceed; before it has
// settled Initialize returns an error saying when it looks again. When Find cannot know, or fails, the guard
// stays. Nothing is done, and nothing is sent to Neutron, while the create
// is not incomplete.
type CreateRecovery struct {
	// Kube saves the resolved MR.
	Kube client.Writer
	// Network returns the Neutron client of mg's ProviderConfig.
	Network func(ctx context.Context, mg resource.Managed) (*gophercloud.ServiceClient, error)
	// Find looks for the object.
	Find Finder
	// Settling says when a create that Find does not find has surely
	// made nothing; until then Initialize returns an error (the
	// reconciler requeues) instead of removing the pending annotation.
	Settling Settling
}

// Initialize resolves mg's incomplete create, if it has one, and saves mg
// when it did. Errors name mg and what failed.
func (r *CreateRecovery) Initialize(ctx context.Context, mg resource.Managed) error {
	if !meta.ExternalCreateIncomplete(mg) {
		return nil
	}
	sc, err := r.Network(ctx, mg)
	if err != nil {
		return fmt.Errorf(errRecover+": %w", mg.GetName(), err)
	}
	id, known, err := r.Find(ctx, sc, mg)
	switch {
	case err != nil:
		return fmt.Errorf(errRecover+": %w", mg.GetName(), err)
	case !known:
		return nil
	case id != "":
		meta.SetExternalName(mg, id)
		// Not before the pending time, so that the create is complete
		// even when that time came from a node whose clock is ahead.
		meta.SetExternalCreateSucceeded(mg, latest(time.Now(), meta.GetExternalCreatePending(mg)))
	default:
		if err := r.Settling.Conclude(mg); err != nil {
			return fmt.Errorf("%s: %w", mg.GetName(), err)
		}
		meta.RemoveAnnotations(mg, meta.AnnotationKeyExternalCreatePending, AnnotationCreateRefused)
	}
	if err := r.Kube.Update(ctx, mg); err != nil {
		return fmt.Errorf("%s: cannot save the outcome of its interrupted create: %w", mg.GetName(), err)
	}
	return nil
}

func latest(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// ScanFinder is the Finder of kinds whose every create is a POST to c
// with the marked description: ScanCreated.
func ScanFinder(c Collection) Finder {
	return func(ctx context.Context, sc *gophercloud.ServiceClient, mg resource.Managed) (string, bool, error) {
		return ScanCreated(ctx, sc, c, mg)
	}
}
