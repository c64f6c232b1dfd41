package openstack

import (
	"context"
	"fmt"
	"strings"

	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"
	"github.com/gophercloud/gophercloud/v2/pagination"
)

// A TaggedLister lists the Neutron objects of one kind carrying tag, such
// as func(tag string) pagination.Pager { return ports.List(sc,
// ports.ListOpts{Tags: tag}) }.
type TaggedLister func(tag string) pagination.Pager

// FindCreated returns the Neutron object created for mg: the one that
// list finds carrying mg's CreatedByTag, decoded into a T by extract (one
// of gophercloud's Extract...Into functions, such as
// ports.ExtractPortsInto), or nil when there is none. It is how Observe
// finds, while the external name is empty, an object that a Create made
// but did not live to record, so that it is adopted rather than created
// twice. kind names the objects in errors ("ports"), id gives an object's
// ID. More than one such object is an error naming them all, since the
// provider cannot tell which one to keep; a failed list is an error with
// Neutron's type and message.
func FindCreated[T any](ctx context.Context, mg resource.Object, kind string, list TaggedLister,
	extract func(pagination.Page, any) error, id func(*T) string) (*T, error) {
	tag := CreatedByTag(mg)
	pages, err := list(tag).AllPages(ctx)
	if err != nil {
		return nil, Wrap(err, fmt.Sprintf("cannot list Neutron %s tagged %s", kind, tag))
	}
	var found []T
	if err := extract(pages, &found); err != nil {
		return nil, fmt.Errorf("cannot decode Neutron %s tagged %s: %w", kind, tag, err)
	}
	switch len(found) {
	case 0:
		return nil, nil
	case 1:
		return &found[0], nil
	}
	ids := make([]string, 0, len(found))
	for i := range found {
		ids = append(ids, id(&found[i]))
	}
	return nil, fmt.Errorf("%d Neutron %s carry its tag %s (%s); delete all but one by hand", len(found), kind, tag, strings.Join(ids, ", "))
}
