package openstack

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"
	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/pagination"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// How the provider finds again a Neutron object whose create it did not
// live to record (killed between the POST and saving the external name, or
// the POST's answer lost after Neutron completed it).
//
// The create request itself must carry the MR's identity: Neutron 21 takes
// no tags in a POST (400 "Attribute 'tags' not allowed in POST" for
// security groups; ports drop them silently), so a tag set by a second
// request leaves a window in which the object is untraceable. The name is
// the user's (spec.forProvider.name, shown in every list), and floating IPs
// have none. The description is on every kind the provider creates, is
// settable in the POST, and is a list filter. Measured on the local Neutron
// 21 (cluster/openstack/up.sh) as the tenant, for security groups, ports,
// floating IPs and networks alike: ?description=X returns exactly the
// objects whose description is X (exact match: the marker alone does not
// find "desc [marker]"; Neutron has no substring filter), an unknown filter
// is refused with 400 ("['name'] is invalid attribute for filtering" on
// floating IPs) rather than ignored, ?fields=id&fields=description returns
// both for every object (the empty description as ""), and a description
// longer than 255 characters is refused with 400.
//
// So the provider writes the user's description followed by the marker
// " [crossplane-mr-<hash>]" (Mark): the user still reads their text
// first, drift comparisons strip the marker (Unmark), and updates keep it
// (KeepMark). The API caps spec descriptions at 255 - LegacyMarkerLength
// characters, which leaves room for the marker.
//
// The marker names the MR, not one incarnation of it: the hash is of the
// cluster (SetCluster), the MR's namespace and its name. An MR deleted
// while its Neutron object stays (orphaned, or its CRD deleted with the
// provider's package) and applied again under the same name, a new UID,
// finds the object by the marker before it creates anything, and adopts
// it instead of making a twin (LookupCreated). Whose the object is, the
// marker says: a name is unique per kind and namespace in a cluster, so
// only that MR or a deleted predecessor of the same name made it; another
// namespace (another tenant) or another cluster (the cluster identity is
// the UID of its kube-system namespace) hashes differently; and the
// lookup lists only what the MR's own credentials see. Each kind marks
// one Neutron collection (security groups, ports, floating IPs, networks),
// so MRs of different kinds that share a name never meet. Objects made by
// an earlier release carry "[crossplane-uid-<MR UID>]" (LegacyMarker),
// which Unmark and the scans still take for the MR's own, and which the
// kinds replace with the marker at their first reconcile (Remark).

// Errors of the lookups; the %s are the kind (Collection.Kind) and what
// was looked for.
const (
	errScan  = "cannot list the %ss to find the one carrying %s"
	errTwins = "cannot tell which of %d Neutron %ss carrying %s (%s) to adopt: delete all but one by hand"
	errPage  = "cannot decode the %s list"
)

// MarkerLength is the length of the marker and the space before it: 49.
const MarkerLength = len(" [crossplane-mr-]") + markerHashLength

// LegacyMarkerLength is the length of the marker of earlier releases
// (LegacyMarker) and the space before it for a Kubernetes UID (36
// characters): 54. The API's cap on descriptions leaves room for it, so
// that an object made by an earlier release keeps fitting.
const LegacyMarkerLength = len(" [crossplane-uid-]") + 36

// markerHashLength is the number of hexadecimal digits of the marker's
// hash: 128 bits.
const markerHashLength = 32

// cluster is the identity of the Kubernetes cluster whose MRs the process
// manages, part of every marker (SetCluster); nil until set.
var cluster atomic.Pointer[string]

// SetCluster makes id, the cluster's identity (ClusterID), part of every
// marker the process writes and recognises from then on. The provider
// sets it once at start, before any controller runs; an unset identity is
// "", which only tests use. It returns the identity it replaced, for a
// test to restore.
func SetCluster(id string) (previous string) {
	if p := cluster.Swap(&id); p != nil {
		return *p
	}
	return ""
}

// errClusterID is ClusterID's error.
const errClusterID = "cannot read the UID of namespace kube-system, the cluster's identity in the markers of the Neutron objects the provider creates: grant the provider get on namespaces (examples/gitops/platform/provider-rbac.yaml)"

// ClusterID returns the identity of the cluster kube reads: the UID of its
// kube-system namespace, which every Kubernetes cluster has and which
// stays for the cluster's life. Its error names the fix.
func ClusterID(ctx context.Context, kube client.Reader) (string, error) {
	ns := &corev1.Namespace{}
	if err := kube.Get(ctx, types.NamespacedName{Name: metav1.NamespaceSystem}, ns); err != nil {
		return "", fmt.Errorf(errClusterID+": %w", err)
	}
	return string(ns.UID), nil
}

// Marker is the marker of mg: "[crossplane-mr-<hash>]", the hash the
// first 32 hexadecimal digits of the SHA-256 of the cluster's identity
// (SetCluster), mg's namespace ("" when cluster-scoped) and mg's name.
func Marker(mg resource.Object) string {
	id := ""
	if p := cluster.Load(); p != nil {
		id = *p
	}
	sum := sha256.Sum256([]byte(id + "/" + mg.GetNamespace() + "/" + mg.GetName()))
	return "[crossplane-mr-" + hex.EncodeToString(sum[:])[:markerHashLength] + "]"
}

// LegacyMarker is the marker earlier releases wrote for mg:
// "[crossplane-uid-<UID>]". Unmark and the scans take it for mg's own, so
// that an object one of them made, or was making when it was upgraded, is
// still mg's; remove it in the release after this one, by when every
// object has been given the marker (Remark).
func LegacyMarker(mg resource.Object) string {
	return "[crossplane-uid-" + string(mg.GetUID()) + "]"
}

// Mark returns the description the provider writes to Neutron for mg's
// description desc: desc, a space and mg's Marker; the Marker alone when
// desc is empty.
func Mark(mg resource.Object, desc string) string {
	if desc == "" {
		return Marker(mg)
	}
	return desc + " " + Marker(mg)
}

// Unmark returns the user's part of a Neutron description s, without mg's
// marker (Marker, or LegacyMarker), and whether s carried it.
// Unmark(mg, Mark(mg, d)) is d for every d; a description without the
// marker (an object the provider did not create, or one written by hand)
// is returned as it is.
func Unmark(mg resource.Object, s string) (string, bool) {
	for _, m := range []string{Marker(mg), LegacyMarker(mg)} {
		switch {
		case s == m:
			return "", true
		case strings.HasSuffix(s, " "+m):
			return strings.TrimSuffix(s, " "+m), true
		}
	}
	return s, false
}

// KeepMark returns the description to write when desired replaces the
// user's part of the Neutron description observed: marked (Mark) when
// observed carries mg's marker or its legacy one, so that an update keeps
// it, else desired as it is (an adopted object the provider did not create
// gets no marker).
func KeepMark(mg resource.Object, observed, desired string) string {
	if _, marked := Unmark(mg, observed); marked {
		return Mark(mg, desired)
	}
	return desired
}

// Remark returns, for a description observed that carries mg's legacy
// marker (LegacyMarker), the same description with mg's marker instead,
// and true; for any other, observed and false. It is how an object made by
// an earlier release gets the marker by which mg, applied again after its
// deletion, finds it: the kinds count a legacy marker as drift, and their
// update writes what Remark returns.
func Remark(mg resource.Object, observed string) (string, bool) {
	m := LegacyMarker(mg)
	switch {
	case observed == m:
		return Marker(mg), true
	case strings.HasSuffix(observed, " "+m):
		return Mark(mg, strings.TrimSuffix(observed, " "+m)), true
	}
	return observed, false
}

// A Collection is one kind of Neutron object as the lookups by marker see
// it.
type Collection struct {
	// Kind names one object in errors, such as "security group".
	Kind string
	// Path is the collection's path under the Neutron endpoint, such as
	// "security-groups", which is also its resource type in Neutron's tag
	// API; Key is its JSON key in a list answer, such as
	// "security_groups", and Item in the answer of one object, such as
	// "security_group".
	Path, Key, Item string
}

// The collections of the kinds the provider creates or reads.
var (
	SecurityGroups = Collection{Kind: "security group", Path: "security-groups", Key: "security_groups", Item: "security_group"}
	Ports          = Collection{Kind: "port", Path: "ports", Key: "ports", Item: "port"}
	FloatingIPs    = Collection{Kind: "floating IP", Path: "floatingips", Key: "floatingips", Item: "floatingip"}
	Networks       = Collection{Kind: "network", Path: "networks", Key: "networks", Item: "network"}
	// Routers are read only: RouterRoutes adds routes to existing ones.
	Routers = Collection{Kind: "router", Path: "routers", Key: "routers", Item: "router"}
)

// ScanCreated returns the ID of the object of c that carries mg's marker
// (Marker or LegacyMarker), whatever description precedes it, or mg's
// legacy tag (LegacyTag), with one GET
// c?fields=id&fields=description&fields=tags of every object of c the
// credentials see; "" when none does. It finds an object whose spec
// description changed after the POST, so that "none" proves the create
// never reached Neutron. known is false when Neutron returns an object
// without a description: then nothing can prove that, and the caller must
// not assume the create did not happen. More than one such object is an
// error naming them all, since the provider cannot tell which one to
// keep; a failed list is an error with Neutron's type and message.
func ScanCreated(ctx context.Context, sc *gophercloud.ServiceClient, c Collection, mg resource.Object) (id string, known bool, err error) {
	found, known, err := scanMarked(ctx, sc, c, mg)
	if err != nil {
		return "", false, err
	}
	if id, err = only(c, mg, found); err != nil {
		return "", false, err
	}
	return id, known, nil
}

// scanMarked returns every object of c that carries mg's marker or legacy
// tag, with ScanCreated's one list, and whether every object listed had a
// description (see ScanCreated's known).
func scanMarked(ctx context.Context, sc *gophercloud.ServiceClient, c Collection, mg resource.Object) (found []listed, known bool, err error) {
	all, err := list(ctx, sc, c, "id", "description", "tags")
	if err != nil {
		return nil, false, Wrap(err, fmt.Sprintf(errScan, c.Kind, Marker(mg)))
	}
	known = true
	legacy := LegacyTag(mg)
	for _, o := range all {
		if slices.Contains(o.Tags, legacy) {
			found = append(found, o)
			continue
		}
		if o.Description == nil {
			known = false
			continue
		}
		if _, marked := Unmark(mg, *o.Description); marked {
			found = append(found, o)
		}
	}
	return found, known, nil
}

// LegacyTag is the tag "crossplane-uid-<UID>" by which providers before
// the marker found again the objects they created for mg. An object that
// such a provider was creating when it was upgraded carries only that tag,
// so ScanCreated matches it too. Remove it (and Tags in listed) in the
// release after the one that introduced the marker: by then every create
// interrupted under the old provider has been settled.
func LegacyTag(mg resource.Object) string {
	return "crossplane-uid-" + string(mg.GetUID())
}

// listed is an object in a list answer asked for some of id, description
// and tags; Description is nil when Neutron returned none.
type listed struct {
	ID          string   `json:"id"`
	Description *string  `json:"description"`
	Tags        []string `json:"tags"`
}

// list returns every object of c the credentials see, with fields only,
// following Neutron's pagination links. Its error is gophercloud's, for
// the caller to Wrap.
func list(ctx context.Context, sc *gophercloud.ServiceClient, c Collection, fields ...string) ([]listed, error) {
	query := url.Values{"fields": fields}
	var all []listed
	err := pagination.NewPager(sc, sc.ServiceURL(c.Path)+"?"+query.Encode(), func(r pagination.PageResult) pagination.Page {
		return listPage{LinkedPageBase: pagination.LinkedPageBase{PageResult: r}, key: c.Key}
	}).EachPage(ctx, func(_ context.Context, p pagination.Page) (bool, error) {
		items, err := p.(listPage).items()
		all = append(all, items...)
		return err == nil, err
	})
	return all, err
}

// only returns the ID of the one object in found, "" for none, and an
// error naming them all for more than one.
func only(c Collection, mg resource.Object, found []listed) (string, error) {
	switch len(found) {
	case 0:
		return "", nil
	case 1:
		return found[0].ID, nil
	}
	ids := make([]string, 0, len(found))
	for _, f := range found {
		ids = append(ids, f.ID)
	}
	return "", fmt.Errorf(errTwins, len(found), c.Kind, Marker(mg), strings.Join(ids, ", "))
}

// listPage is a page of a Neutron list answer under key, with Neutron's
// "<key>_links" pagination.
type listPage struct {
	pagination.LinkedPageBase
	key string
}

// NextPageURL is the "next" link of the page, "" on the last.
func (p listPage) NextPageURL() (string, error) {
	var body map[string]json.RawMessage
	if err := p.ExtractInto(&body); err != nil {
		return "", err
	}
	var links []gophercloud.Link
	if raw, ok := body[p.key+"_links"]; ok {
		if err := json.Unmarshal(raw, &links); err != nil {
			return "", err
		}
	}
	return gophercloud.ExtractNextURL(links)
}

// IsEmpty says whether the page lists no object.
func (p listPage) IsEmpty() (bool, error) {
	items, err := p.items()
	return len(items) == 0, err
}

func (p listPage) items() ([]listed, error) {
	var body map[string]json.RawMessage
	if err := p.ExtractInto(&body); err != nil {
		return nil, err
	}
	var items []listed
	if raw, ok := body[p.key]; ok {
		if err := json.Unmarshal(raw, &items); err != nil {
			return nil, fmt.Errorf(errPage+": %w", p.key, err)
		}
	}
	return items, nil
}

// Settling says when the outcome of a create request in Neutron is
// final, so that a lookup that finds nothing may conclude that the create
// made nothing. The zero value never waits (tests of one reconcile).
type Settling struct {
	// Within is how long after the newest create attempt (the MR's
	// external-create-pending or -failed time) Neutron may still
	// complete it (see Clients.Settling).
	Within time.Duration
	// Now returns the current time; time.Now when nil.
	Now func() time.Time
}

// clock returns s.Now(), or time.Now() when Now is nil.
func (s Settling) clock() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

// AnnotationTwinCheck records on an MR until when (an RFC 3339 time)
// Observe looks for twins of its object (SweepTwins): Settling is a bound
// that a slow Neutron can exceed, completing an interrupted create after
// the provider concluded it made nothing and created again. It is set
// when the provider so concludes (LookupCreated, CreateRecovery), for
// TwinCheckWindows settling times, and removed by the first Observe after
// that.
const AnnotationTwinCheck = "openstack.ipsecgw.io/twin-check-until"

// TwinCheckWindows is how many settling times (Settling.Within) after a
// create that followed an interrupted one Observe looks for twins: 15
// minutes with the default request timeout of 60 s.
const TwinCheckWindows = 10

// checkTwins records on mg (AnnotationTwinCheck) that the create about to
// follow comes after an attempt concluded to have made nothing.
func (s Settling) checkTwins(mg resource.Object) {
	until := s.clock().Add(TwinCheckWindows * s.Within).UTC().Format(time.RFC3339)
	meta.AddAnnotations(mg, map[string]string{AnnotationTwinCheck: until})
}

// errUnsettled is Settling.Check's error; the %s are the attempt's time,
// the settling time and when to look again.
const errUnsettled = "cannot conclude yet that the create attempted at %s made no Neutron object: Neutron may complete a create request up to %s after it was sent; looking again at %s"

// AnnotationCreateRefused records when Neutron answered the MR's create
// request with a 4xx status (RecordRefusal), as an RFC 3339 time (whole
// seconds, as crossplane-runtime's external-create annotations), a space
// and Neutron's answer. A request Neutron refused made nothing, so
// Settling.Check need not wait for it.
const AnnotationCreateRefused = "openstack.ipsecgw.io/create-refused"

// maxRefusalReason bounds the answer AnnotationCreateRefused keeps, in bytes.
const maxRefusalReason = 300

// RecordRefusal records on mg (AnnotationCreateRefused, now) that err is
// Neutron's 4xx answer to mg's create request, or that the request was
// not sent (NotSent: held by a Retry-After or by the token bucket), and
// returns err unchanged: the reconciler saves the annotation with its
// external-create-failed one.
// Any other error, a 5xx answer or one that never arrived, proves nothing
// (Neutron may have committed the object before it failed) and records
// nothing.
func RecordRefusal(mg resource.Object, err error) error {
	if a, ok := AsAPIError(err); NotSent(err) || ok && a.Code >= 400 && a.Code < 500 {
		reason := err.Error()
		if ok {
			reason = a.Error()
		}
		if len(reason) > maxRefusalReason {
			reason = reason[:maxRefusalReason] + "…"
		}
		meta.AddAnnotations(mg, map[string]string{AnnotationCreateRefused: time.Now().UTC().Format(time.RFC3339) + " " + reason})
	}
	return err
}

// Check returns nil when mg's newest create attempt is older than Within,
// or when Neutron refused it (RecordRefusal; from the second after the
// refusal on, so that the next attempt's pending time is always later than
// the refusal and a refusal never vouches for a later attempt); else an
// error saying why the lookup must be repeated and when. The reconciler
// requeues on it.
func (s Settling) Check(mg resource.Object) error {
	_, err := s.check(mg)
	return err
}

// Conclude is Check, and when it returns nil for an attempt that Neutron
// did not refuse (it settled, which is a bound, not a proof), it also
// records on mg that Observe looks for a twin for a while
// (AnnotationTwinCheck), for the reconciler to save with the create that
// follows.
func (s Settling) Conclude(mg resource.Object) error {
	uncertain, err := s.check(mg)
	if err == nil && uncertain {
		s.checkTwins(mg)
	}
	return err
}

// check is Check; uncertain says that mg has a create attempt that
// Neutron did not refuse.
func (s Settling) check(mg resource.Object) (uncertain bool, err error) {
	pending := meta.GetExternalCreatePending(mg)
	at := latest(pending, meta.GetExternalCreateFailed(mg))
	if at.IsZero() {
		return false, nil
	}
	now := s.clock
	refusedAt, reason, _ := strings.Cut(mg.GetAnnotations()[AnnotationCreateRefused], " ")
	if refused, err := time.Parse(time.RFC3339, refusedAt); err == nil && !refused.Before(pending) {
		if until := refused.Add(time.Second); now().Before(until) {
			return false, fmt.Errorf(errRefusedNow, refused.UTC().Format(time.RFC3339), until.UTC().Format(time.RFC3339), reason)
		}
		return false, nil
	}
	if until := at.Add(s.Within); now().Before(until) {
		return true, fmt.Errorf(errUnsettled, at.UTC().Format(time.RFC3339), s.Within, until.UTC().Format(time.RFC3339))
	}
	return true, nil
}

// errRefusedNow is Settling.Check's error in the second of a refusal; the
// %s are the refusal's time, when to look again and Neutron's answer.
const errRefusedNow = "cannot create again before %[2]s: Neutron refused the create at %[1]s: %[3]s"

// errUnknown is LookupCreated's error when Neutron hides descriptions.
const errUnknown = "cannot tell whether the interrupted create made a Neutron %s: Neutron returned %ss without their description"

// ObservedID returns mg's external name, or, while it is empty, the ID of
// the object of c that carries mg's marker (LookupCreated), recorded as
// mg's external name; adopted says it was looked up, for the reconciler to
// write it back like a late-initialised field. An empty ID with a nil
// error means there is no such object yet.
func ObservedID(ctx context.Context, sc *gophercloud.ServiceClient, c Collection, mg resource.Object, s Settling) (id string, adopted bool, err error) {
	if id := meta.GetExternalName(mg); id != "" {
		return id, false, nil
	}
	if id, err = LookupCreated(ctx, sc, c, mg, s); err != nil || id == "" {
		return "", false, err
	}
	meta.SetExternalName(mg, id)
	return id, true, nil
}

// LookupCreated returns the ID of the object of c that carries mg's
// marker, "" when there is none: how Observe, while mg's external name is
// empty, adopts an object whose POST answer was lost, or the object of a
// deleted MR of the same name applied again (see Marker). It scans for the
// marker whatever text precedes it (ScanCreated, one list), so that a
// description edited since finds the object too. Before any create
// attempt of mg's, none is none. Once an attempt is recorded (the
// external-create-pending or -failed annotation) it concludes "none" only
// when the scan can prove it and the attempt has settled (s.Conclude);
// otherwise it returns an error, and the reconciler looks again later.
func LookupCreated(ctx context.Context, sc *gophercloud.ServiceClient, c Collection, mg resource.Object, s Settling) (string, error) {
	id, known, err := ScanCreated(ctx, sc, c, mg)
	switch {
	case err != nil:
		return "", err
	case id != "":
		return id, nil
	case meta.GetExternalCreatePending(mg).IsZero() && meta.GetExternalCreateFailed(mg).IsZero():
		// Nothing was sent: there is no create to prove absent.
		return "", nil
	case !known:
		return "", fmt.Errorf(errUnknown, c.Kind, c.Kind)
	}
	if err := s.Conclude(mg); err != nil {
		return "", err
	}
	// A create follows, and the reconciler saves mg with its pending
	// time before it: a refusal still on mg then always answers the
	// newest attempt, whatever the clock did since.
	meta.RemoveAnnotations(mg, AnnotationCreateRefused)
	return "", nil
}
