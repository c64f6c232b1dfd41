package function

import (
	"github.com/crossplane/crossplane-runtime/v2/pkg/fieldpath"
	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
)

// Adoption: a managed resource composed anew takes over the Neutron object
// its predecessor made, instead of making a second one.
//
// The provider finds a Neutron object it made by its managed resource's
// external name (crossplane.io/external-name, the object's ID) or, while
// that is empty, by the marker with the resource's UID in the object's
// description (docs/crash-safe-create.md). A managed resource composed anew
// for the same composite has the same name (Crossplane names composed
// resources after the composite's UID and the resource's name in the
// pipeline) but a new UID: without an external name the provider would
// make a second security group, port and floating IP beside the first.
// That happens after the Provider package was deleted by accident: its CRDs
// go, and with them every managed resource; orphaned first, they leave
// their Neutron objects (docs/uninstall.md), and the composites compose
// them anew.
//
// So the composite records the external name of each such resource in its
// status (recordAt), and a resource composed anew gets the recorded one.
// Crossplane applies the function's desired composed resources and the
// composite's status with server-side apply, as one field manager per
// composite, which decides the rules (externalName, record):
//   - A field the function applied once and omits later is removed, unless
//     another manager owns it too; the provider writing the same value by
//     an update does not make it an owner. So once the function states an
//     external name it must state it in every run: it states an observed
//     resource's own external name whenever the resource has one.
//   - An applied value overwrites the one the object has (Crossplane forces
//     ownership). So the function never states a value other than the one
//     the resource has when observed: the recorded one goes only to a
//     resource that does not exist yet, which is created with it, before
//     the provider could have written one. An observed resource without an
//     external name gets none: its provider may be creating its object this
//     moment, and the ID it is about to write is the right one.
//   - The record is stated in every run too (the composite's status is
//     applied as the composed resources are): the observed external name
//     when the resource has one, else the recorded one; an empty one never
//     replaces a known one.
//
// What remains is the provider changing an existing resource's external
// name (an ID Neutron answers 404 for, looked up again) between
// Crossplane's read of the resource and its apply: the apply then writes the
// previous value back once, the provider finds it gone again and looks
// again. A pinned floating IP is not adopted from the record: the provider
// finds it by its address, exactly, and never allocates one, so a recorded
// ID could only make an address changed meanwhile lose to an old one.

// Orphaning: a managed resource being deleted while its composite is not
// is never the composite's wish. Crossplane deletes a composed resource the
// function no longer composes, and the function does not compose it then;
// deleting the composite deletes its resources after it (the function does
// not run for a composite being deleted). What is left is someone deleting
// a composed resource (kubectl delete), or its CRD: the Provider package
// deleted by accident, after which Crossplane's dependency resolution
// installs the provider again within seconds, and the ProviderConfigs are
// still there (the provider holds them with its in-use finalizer), so the
// returning provider would delete every Neutron object of every composite.
// So the function composes such a resource orphaned (orphaned), which
// Crossplane applies at once (it watches the composed resources): the
// provider then lets it go without a call to Neutron, and the composite
// composes it anew, adopting its object (above). Deleting a composed
// resource by hand thus never deletes its Neutron object either: deleting
// the composite (or the claim) does.

// recordAt is where the composite's status records the external name of
// each composed resource whose object the provider makes and finds by its
// Neutron ID.
var recordAt = map[string]string{
	SecurityGroupName: "status.securityGroup.id",
	PortName:          "status.port.id",
	FloatingIPName:    "status.floatingIP.id",
}

// externalName is the external name to desire for composed resource name,
// observed as o (nil: it does not exist), of the composite xr as observed
// (with its status) whose floating IP is pinned or not: o's own when it has
// one; for a resource that does not exist, the one xr records (none for a
// pinned floating IP); else none.
func externalName(name string, o, xr *fieldpath.Paved, pinned bool) string {
	at, ok := recordAt[name]
	switch {
	case !ok:
		return ""
	case o != nil:
		return observedExternalName(o)
	case name == FloatingIPName && pinned:
		return ""
	}
	return str(xr, at)
}

// record returns the composite's status fields by path that record the
// external names of its composed resources as observed, given the composite
// xr as observed: each resource's own, else the one xr records already.
func record(xr *fieldpath.Paved, observed Observed) map[string]any {
	out := map[string]any{}
	for name, at := range recordAt {
		v := observedExternalName(observed[name])
		if v == "" {
			v = str(xr, at)
		}
		if v != "" {
			out[at] = v
		}
	}
	return out
}

// observedExternalName is the external name of the composed resource o as
// observed; "" for none, or when o is nil.
func observedExternalName(o *fieldpath.Paved) string {
	return str(o, "metadata.annotations["+meta.AnnotationKeyExternalName+"]")
}

// orphaned says whether the composed resource o, of the composite xr (both
// as observed), is to be composed orphaned: it is being deleted and xr is
// not.
func orphaned(o, xr *fieldpath.Paved) bool {
	return str(o, "metadata.deletionTimestamp") != "" && str(xr, "metadata.deletionTimestamp") == ""
}
