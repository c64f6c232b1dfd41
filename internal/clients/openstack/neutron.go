package openstack

import (
	"context"
	"fmt"

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
// the one its external name names or, while that is empty, the one a
// create for mg made (ObservedID, with mg's description desc and s),
// whose ID it records as mg's external name. exists is false when there
// is no such object yet or Neutron no longer has it; adopted says that
// the external name was looked up, for the reconciler to write it back
// like a late-initialised field.
func GetOrAdopt(ctx context.Context, sc *gophercloud.ServiceClient, c Collection, mg resource.Object, desc string, s Settling, obj any) (exists, adopted bool, err error) {
	id, adopted, err := ObservedID(ctx, sc, c, mg, desc, s)
	if err != nil || id == "" {
		return false, false, err
	}
	found, err := Get(ctx, sc, c, id, obj)
	return found, adopted && found, err
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

// ReplaceTags makes tags the whole tag set of the object id of c, with one
// PUT /v2.0/<c.Path>/<id>/tags of Neutron's tag API
// (https://docs.openstack.org/api-ref/network/v2/#standard-attributes-tag-extension):
// Neutron 21 takes no tags in most create bodies. An empty tags removes
// them all.
func ReplaceTags(ctx context.Context, sc *gophercloud.ServiceClient, c Collection, id string, tags []string) error {
	err := attributestags.ReplaceAll(ctx, sc, c.Path, id, attributestags.ReplaceAllOpts{Tags: tags}).Err
	return Wrap(err, fmt.Sprintf(errTags, c.Kind, id))
}
