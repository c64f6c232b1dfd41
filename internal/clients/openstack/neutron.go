package openstack

import (
	"context"
	"fmt"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"
	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/attributestags"
)

// The requests every OpenStack kind makes of its Neutron object alike:
// read it (adopting one whose create was not recorded), delete it, replace
// its tags.

// Errors of those requests; the %s are the kind (Collection.Kind) and the
// object's ID.
const (
	errGet    = "cannot get Neutron %s %s"
	errDelete = "cannot delete Neutron %s %s"
	errTags   = "cannot set the tags of Neutron %s %s"
)

// Get reads the object id of c into obj, a pointer to gophercloud's struct
// of the kind or to one embedding it with extensions' fields, with one GET
// /v2.0/<c.Path>/<id>. found is false when Neutron has no such object
// (404); other errors are wrapped with Neutron's type and message.
func Get(ctx context.Context, sc *gophercloud.ServiceClient, c Collection, id string, obj any) (found bool, err error) {
	var r gophercloud.Result
	resp, err := sc.Get(ctx, sc.ServiceURL(c.Path, id), &r.Body, nil) //nolint:bodyclose // gophercloud reads and closes the body
	_, r.Header, r.Err = gophercloud.ParseResponse(resp, err)
	if err := r.ExtractIntoStructPtr(obj, c.Item); err != nil {
		if IsNotFound(err) {
			return false, nil
		}
		return false, Wrap(err, fmt.Sprintf(errGet, c.Kind, id))
	}
	return true, nil
}

// GetOrAdopt reads into obj, as Get does, the object of c that mg manages:
// the one its external name names or, while that is empty, the one
// carrying mg's marker (ObservedID, with s), whose ID it records as mg's
// external name. When the external name's
// object is gone (404) it looks, before the reconciler creates another,
// for an object carrying mg's marker (Relocate) and adopts it the same
// way. While mg carries AnnotationTwinCheck it deletes the object's twins
// (SweepTwins; not during mg's deletion, whose Delete does). exists is
// false when there is no such object yet or Neutron no longer has it;
// adopted says that the external name was looked up, or the twin check
// ended, for the reconciler to write mg back like a late-initialised
// field.
func GetOrAdopt(ctx context.Context, sc *gophercloud.ServiceClient, c Collection, mg resource.Object, s Settling, obj any) (exists, adopted bool, err error) {
	id, adopted, err := ObservedID(ctx, sc, c, mg, s)
	if err != nil || id == "" {
		return false, false, err
	}
	found, err := Get(ctx, sc, c, id, obj)
	switch {
	case err != nil || !found && adopted:
		return false, false, err
	case !found:
		if id, err = Relocate(ctx, sc, c, mg, id); err != nil || id == "" {
			return false, false, err
		}
		if found, err = Get(ctx, sc, c, id, obj); err != nil || !found {
			return false, false, err
		}
		meta.SetExternalName(mg, id)
		adopted = true
	}
	if meta.WasDeleted(mg) {
		return true, adopted, nil
	}
	swept, err := SweepTwins(ctx, sc, c, mg, s)
	return true, adopted || swept, err
}

// Relocate returns the ID of the object of c carrying mg's marker when the
// object gone that mg's external name names is not the one mg's create
// made, "" when there is none (or it is gone itself), with ScanCreated's
// one list; more than one is ScanCreated's error naming them all.
//
// An external name can name another object than the one the provider
// made for mg: one written over by an apply that read the MR before the
// provider recorded a new create (a composition function that copies the
// external name), or one set by hand to import an object since deleted.
// Creating once more then would leave the marked object a twin for ever.
// An answer that cannot be known (Neutron hides descriptions) is "" as
// before the marker: the object named is gone for certain, and creating
// again is what the reconciler did then.
func Relocate(ctx context.Context, sc *gophercloud.ServiceClient, c Collection, mg resource.Object, gone string) (string, error) {
	id, _, err := ScanCreated(ctx, sc, c, mg)
	if err != nil || id == gone {
		return "", err
	}
	return id, nil
}

// Delete deletes the object id of c with one DELETE /v2.0/<c.Path>/<id>.
// An object already gone (404) is deleted; an empty id sends nothing. An
// object Neutron refuses to delete (409 NetworkInUse, SecurityGroupInUse)
// is an error with Neutron's type and message, for the reconciler to
// retry.
func Delete(ctx context.Context, sc *gophercloud.ServiceClient, c Collection, id string) error {
	if id == "" {
		return nil
	}
	resp, err := sc.Delete(ctx, sc.ServiceURL(c.Path, id), nil) //nolint:bodyclose // gophercloud closes the body
	if _, _, err = gophercloud.ParseResponse(resp, err); err == nil || IsNotFound(err) {
		return nil
	}
	return Wrap(err, fmt.Sprintf(errDelete, c.Kind, id))
}

// DeleteCreated deletes the object id of c (Delete), then every other
// object of c that carries mg's marker, found with ScanCreated's one list:
// twins that a create for mg made and the provider never recorded (Neutron
// completed a POST later than Settling allowed for, or an apply wrote an
// older external name over the newest). Only mg's own creates carry its
// marker, so nothing else is touched; an object the provider adopted
// without creating it (a pinned floating IP, an imported port) carries
// none. An empty id sends nothing (Observe, which looks for the marker
// while the external name is empty, found no object). The first failure
// is returned, for the reconciler to retry: the
// object id first, so that a refused delete (409 SecurityGroupInUse) sends
// no list.
func DeleteCreated(ctx context.Context, sc *gophercloud.ServiceClient, c Collection, mg resource.Object, id string) error {
	if id == "" {
		return nil
	}
	if err := Delete(ctx, sc, c, id); err != nil {
		return err
	}
	return deleteTwins(ctx, sc, c, mg, id)
}

// SweepTwins deletes, while mg carries AnnotationTwinCheck, every object
// of c but mg's external name's that carries mg's marker, with
// ScanCreated's one list and a DELETE per twin; once the annotation's time
// has passed it removes the annotation too, and saved says so, for the
// reconciler to write mg back like a late-initialised field. Without the
// annotation, or while the external name is empty, it sends nothing; nor
// does it once the annotation's time is more than twinCheckGrace past (it
// only removes it then), so that an MR the reconciler does not write back
// (management policies without LateInitialize) does not list the kind at
// every poll for ever. It is how a create that Neutron completes after
// Settling concluded that it made nothing is undone while the MR lives.
func SweepTwins(ctx context.Context, sc *gophercloud.ServiceClient, c Collection, mg resource.Object, s Settling) (saved bool, err error) {
	v, ok := mg.GetAnnotations()[AnnotationTwinCheck]
	id := meta.GetExternalName(mg)
	if !ok || id == "" {
		return false, nil
	}
	until, err := time.Parse(time.RFC3339, v)
	now := s.clock()
	if err == nil && now.Before(until.Add(twinCheckGrace)) {
		if err := deleteTwins(ctx, sc, c, mg, id); err != nil {
			return false, err
		}
	}
	if err == nil && now.Before(until) {
		return false, nil
	}
	meta.RemoveAnnotations(mg, AnnotationTwinCheck)
	return true, nil
}

// twinCheckGrace is how long after its time an AnnotationTwinCheck still
// makes SweepTwins look: the reconciler writes an MR back within a poll or
// two, so an annotation an hour past its time is one it does not write.
const twinCheckGrace = time.Hour

// deleteTwins deletes every object of c but keep that carries mg's marker.
func deleteTwins(ctx context.Context, sc *gophercloud.ServiceClient, c Collection, mg resource.Object, keep string) error {
	twins, _, err := scanMarked(ctx, sc, c, mg)
	if err != nil {
		return err
	}
	for _, t := range twins {
		if t.ID == keep {
			continue
		}
		if err := Delete(ctx, sc, c, t.ID); err != nil {
			return err
		}
	}
	return nil
}

// ReplaceTags makes tags the whole tag set of the object id of c, with one
// PUT /v2.0/<c.Path>/<id>/tags of Neutron's tag API
// (https://docs.openstack.org/api-ref/network/v2/#standard-attributes-tag-extension):
// Neutron 21 takes no tags in most create bodies. An empty tags removes
// them all.
func ReplaceTags(ctx context.Context, sc *gophercloud.ServiceClient, c Collection, id string, tags []string) error {
	err := attributestags.ReplaceAll(ctx, sc, c.Path, id, attributestags.ReplaceAllOpts{Tags: tags}).Err
	return Wrap(err, fmt.Sprintf(errTags, c.Kind, id))
}
