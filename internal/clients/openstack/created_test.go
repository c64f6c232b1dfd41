package openstack

import (
	"context"
	"io"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	"github.com/crossplane/crossplane-runtime/v2/pkg/test"
	"github.com/gophercloud/gophercloud/v2"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	networkingv1alpha1 "github.com/ipsecgw/provider-ipsec/apis/cluster/networking/v1alpha1"
	"github.com/ipsecgw/provider-ipsec/apis/cluster/v1alpha1"
	"github.com/ipsecgw/provider-ipsec/internal/clients/openstack/neutrontest"
)

// uid is a Kubernetes UID as the API server makes them.
const uid = "5f0c7a2e-9d1b-4c3a-8e6f-0a1b2c3d4e5f"

// owner is an object with UID uid: any will do as the managed resource.
func owner() *v1alpha1.ProviderConfig {
	return &v1alpha1.ProviderConfig{ObjectMeta: metav1.ObjectMeta{Name: "gw", UID: uid}}
}

// marker is owner()'s marker with the unset cluster identity of tests,
// and legacy the marker of earlier releases for it.
var (
	marker = Marker(owner())
	legacy = "[crossplane-uid-" + uid + "]"
)

func TestMark(t *testing.T) {
	cases := map[string]struct {
		reason   string
		desc     string
		marked   string
		observed string
		unmarked string
		carried  bool
	}{
		"Empty": {
			reason: "An empty description is the marker alone, and reads back empty.",
			marked: marker, observed: marker, unmarked: "", carried: true,
		},
		"Text": {
			reason: "The user's text comes first, the marker after a space.",
			desc:   "VPN gateway", marked: "VPN gateway " + marker, observed: "VPN gateway " + marker, unmarked: "VPN gateway", carried: true,
		},
		"TrailingSpace": {
			reason: "A description ending in a space reads back exactly.",
			desc:   "gw ", marked: "gw  " + marker, observed: "gw  " + marker, unmarked: "gw ", carried: true,
		},
		"Unmarked": {
			reason: "A description without the marker (an object the provider did not create) is the user's as it is.",
			desc:   "VPN gateway", marked: "VPN gateway " + marker, observed: "set by hand", unmarked: "set by hand",
		},
		"Legacy": {
			reason: "The marker of an earlier release, with the MR's UID, is still the MR's: no drift, and an update writes the marker.",
			desc:   "x", marked: "x " + marker, observed: "x " + legacy, unmarked: "x", carried: true,
		},
		"OtherLegacyMarker": {
			reason: "Another MR's marker of an earlier release is not this one's.",
			desc:   "x", marked: "x " + marker, observed: "x [crossplane-uid-00000000-0000-0000-0000-000000000000]",
			unmarked: "x [crossplane-uid-00000000-0000-0000-0000-000000000000]",
		},
		"OtherMarker": {
			reason: "Another MR's marker is not this one's.",
			desc:   "x", marked: "x " + marker, observed: "x [crossplane-mr-00000000000000000000000000000000]",
			unmarked: "x [crossplane-mr-00000000000000000000000000000000]",
		},
		"MarkerInside": {
			reason: "The marker counts only at the end, after a space.",
			desc:   "x", marked: "x " + marker, observed: marker + " x", unmarked: marker + " x",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.marked, Mark(owner(), tc.desc)); diff != "" {
				t.Errorf("%s\nMark(...): -want, +got:\n%s", tc.reason, diff)
			}
			got, carried := Unmark(owner(), tc.observed)
			if diff := cmp.Diff([]any{tc.unmarked, tc.carried}, []any{got, carried}); diff != "" {
				t.Errorf("%s\nUnmark(...): -want, +got:\n%s", tc.reason, diff)
			}
			want := "new"
			if tc.carried {
				want = "new " + marker
			}
			if diff := cmp.Diff(want, KeepMark(owner(), tc.observed, "new")); diff != "" {
				t.Errorf("%s\nKeepMark(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestRemark(t *testing.T) {
	cases := map[string]struct {
		reason   string
		observed string
		want     string
		stale    bool
	}{
		"Legacy": {
			reason:   "An earlier release's marker is replaced by the marker, the user's text kept.",
			observed: "VPN gateway " + legacy, want: "VPN gateway " + marker, stale: true,
		},
		"LegacyAlone": {
			reason:   "An earlier release's marker alone becomes the marker alone.",
			observed: legacy, want: marker, stale: true,
		},
		"Current": {
			reason:   "A description with the marker is left as it is.",
			observed: "VPN gateway " + marker, want: "VPN gateway " + marker,
		},
		"OtherLegacyMarker": {
			reason:   "Another MR's legacy marker is not this MR's to replace.",
			observed: "x [crossplane-uid-00000000-0000-0000-0000-000000000000]", want: "x [crossplane-uid-00000000-0000-0000-0000-000000000000]",
		},
		"Unmarked": {
			reason:   "A description without a marker (an imported object) gets none.",
			observed: "set by hand", want: "set by hand",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, stale := Remark(owner(), tc.observed)
			if diff := cmp.Diff([]any{tc.want, tc.stale}, []any{got, stale}); diff != "" {
				t.Errorf("%s\nRemark(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

// TestMarker proves whose a marker says an object is: the same for an MR
// applied again under its name (a new UID), different for another name,
// another namespace (another tenant) or another cluster.
func TestMarker(t *testing.T) {
	mr := func(ns, name, uid string) *networkingv1alpha1.SecurityGroup {
		return &networkingv1alpha1.SecurityGroup{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(uid)}}
	}
	const cluster = "8d7c1a4e-1f2b-4c3d-9e8f-7a6b5c4d3e2f"
	base := mr("tenant-a", "sg", uid)
	cases := map[string]struct {
		reason  string
		cluster string
		mg      *networkingv1alpha1.SecurityGroup
		same    bool
	}{
		"AppliedAgain": {
			reason:  "The same MR applied again after its deletion has a new UID and the same marker: it finds its object.",
			cluster: cluster, mg: mr("tenant-a", "sg", "0a0b0c0d-0000-4000-8000-000000000001"), same: true,
		},
		"OtherName": {
			reason:  "Another MR of the namespace has another marker.",
			cluster: cluster, mg: mr("tenant-a", "sg2", uid),
		},
		"OtherNamespace": {
			reason:  "The MR of the same name in another namespace (another tenant) has another marker.",
			cluster: cluster, mg: mr("tenant-b", "sg", uid),
		},
		"ClusterScoped": {
			reason:  "A cluster-scoped MR of the same name has another marker.",
			cluster: cluster, mg: mr("", "sg", uid),
		},
		"OtherCluster": {
			reason:  "The same MR in another cluster has another marker.",
			cluster: "5e4d3c2b-0000-4000-8000-000000000002", mg: mr("tenant-a", "sg", uid),
		},
	}
	defer SetCluster(SetCluster(cluster))
	want := Marker(base)
	if len(" "+want) != MarkerLength || !strings.HasPrefix(want, "[crossplane-mr-") {
		t.Fatalf("Marker(...) = %q, want [crossplane-mr-<32 hexadecimal digits>] (MarkerLength %d)", want, MarkerLength)
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			SetCluster(tc.cluster)
			defer SetCluster(cluster)
			if got := Marker(tc.mg); (got == want) != tc.same {
				t.Errorf("%s\nMarker(...) = %q, Marker(%s/%s in cluster %s) = %q: same %v, want %v", tc.reason, got, base.Namespace, base.Name, cluster, want, got == want, tc.same)
			}
		})
	}
}

// TestMarkFits proves that the longest description the API admits fits
// Neutron's 255 characters once marked, also with an earlier release's
// marker.
func TestMarkFits(t *testing.T) {
	got := len(Mark(owner(), strings.Repeat("x", networkingv1alpha1.MaxDescriptionLength)))
	if got > 255 || LegacyMarkerLength != 255-networkingv1alpha1.MaxDescriptionLength {
		t.Errorf("a marked description of %d characters is %d long (LegacyMarkerLength %d), want at most 255 and room for the legacy marker", networkingv1alpha1.MaxDescriptionLength, got, LegacyMarkerLength)
	}
}

func TestScanCreated(t *testing.T) {
	key := "GET /floatingips?fields=id&fields=description&fields=tags"
	cases := map[string]struct {
		reason string
		reply  neutrontest.Reply
		id     string
		known  bool
		err    string
	}{
		"None": {
			reason: "No object carrying the marker proves there is none.",
			reply:  neutrontest.Reply{Code: 200, Body: `{"floatingips": [{"id": "f0", "description": ""}, {"id": "f9", "description": "theirs"}]}`},
			known:  true,
		},
		"DescriptionChanged": {
			reason: "The object carrying the marker is found whatever description precedes it (the spec changed after the POST).",
			reply:  neutrontest.Reply{Code: 200, Body: `{"floatingips": [{"id": "f0", "description": ""}, {"id": "f1", "description": "old text ` + marker + `"}]}`},
			id:     "f1", known: true,
		},
		"LegacyMarker": {
			reason: "An object an earlier release made carries the marker with the MR's UID: it is the MR's.",
			reply:  neutrontest.Reply{Code: 200, Body: `{"floatingips": [{"id": "f0", "description": "x [crossplane-uid-other]"}, {"id": "f1", "description": "x ` + legacy + `"}]}`},
			id:     "f1", known: true,
		},
		"LegacyTag": {
			reason: "An object that a provider before the marker was creating carries only the crossplane-uid tag: it is found by that tag (upgrade).",
			reply:  neutrontest.Reply{Code: 200, Body: `{"floatingips": [{"id": "f0", "description": "", "tags": ["crossplane-uid-other"]}, {"id": "f1", "description": "", "tags": ["crossplane-uid-` + uid + `"]}]}`},
			id:     "f1", known: true,
		},
		"LegacyTagWithoutDescription": {
			reason: "An object found by its legacy tag is found even when Neutron hides descriptions.",
			reply:  neutrontest.Reply{Code: 200, Body: `{"floatingips": [{"id": "f1", "tags": ["crossplane-uid-` + uid + `"]}]}`},
			id:     "f1", known: true,
		},
		"NoDescriptions": {
			reason: "A Neutron that returns no descriptions cannot prove there is none: the answer is unknown.",
			reply:  neutrontest.Reply{Code: 200, Body: `{"floatingips": [{"id": "f0"}]}`},
		},
		"Two": {
			reason: "Two objects carrying the marker are an error naming both.",
			reply:  neutrontest.Reply{Code: 200, Body: `{"floatingips": [{"id": "f1", "description": "` + marker + `"}, {"id": "f2", "description": "x ` + marker + `"}]}`},
			err:    "cannot tell which of 2 Neutron floating IPs carrying " + marker + " (f1, f2) to adopt: delete all but one by hand",
		},
		"ListFails": {
			reason: "A failed list is an error, the answer unknown.",
			reply:  neutrontest.Reply{Code: 500, Body: neutrontest.Error("HTTPInternalServerError", "database is locked")},
			err:    "cannot list the floating IPs to find the one carrying " + marker + ": Neutron 500 HTTPInternalServerError: database is locked",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			sc, _ := neutrontest.Serve(t, map[string]neutrontest.Reply{key: tc.reply})
			id, known, err := ScanCreated(context.Background(), sc, FloatingIPs, owner())
			if diff := cmp.Diff(tc.err, neutrontest.Message(err)); diff != "" {
				t.Errorf("%s\nScanCreated(...): -want error, +got error:\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff([]any{tc.id, tc.known}, []any{id, known}); diff != "" {
				t.Errorf("%s\nScanCreated(...): -want ID and known, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

// TestScanCreatedPages proves the scan follows Neutron's pagination links.
func TestScanCreatedPages(t *testing.T) {
	replies := map[string]neutrontest.Reply{}
	sc, seen := neutrontest.Serve(t, replies)
	// The answers are read at request time: the next link needs the
	// server's address.
	replies["GET /ports?fields=id&fields=description&fields=tags"] = neutrontest.Reply{Code: 200, Body: `{"ports": [{"id": "p0", "description": ""}],
		"ports_links": [{"rel": "next", "href": "` + sc.ServiceURL("ports") + `?fields=id&fields=description&marker=p0"}]}`}
	replies["GET /ports?fields=id&fields=description&marker=p0"] = neutrontest.Reply{Code: 200, Body: `{"ports": [{"id": "p1", "description": "` + marker + `"}]}`}
	id, known, err := ScanCreated(context.Background(), sc, Ports, owner())
	if err != nil || id != "p1" || !known {
		t.Errorf("ScanCreated(...) = %q, %v, %v; want p1 from the second page, known", id, known, err)
	}
	if len(*seen) != 2 {
		t.Errorf("Neutron requests %v, want both pages", *seen)
	}
}

func TestLookupCreated(t *testing.T) {
	scan := "GET /floatingips?fields=id&fields=description&fields=tags"
	failed := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	mg := func(attempted bool) *v1alpha1.ProviderConfig {
		o := owner()
		if attempted {
			meta.SetExternalCreatePending(o, failed.Add(-time.Second))
			meta.SetExternalCreateFailed(o, failed)
		}
		return o
	}
	settle := func(after time.Duration) Settling {
		return Settling{Within: 90 * time.Second, Now: func() time.Time { return failed.Add(after) }}
	}
	refused := func(o *v1alpha1.ProviderConfig, at time.Time) *v1alpha1.ProviderConfig {
		meta.AddAnnotations(o, map[string]string{AnnotationCreateRefused: at.Format(time.RFC3339) + " Neutron 409 IpAddressAlreadyAllocated: m"})
		return o
	}
	cases := map[string]struct {
		reason string
		mg     *v1alpha1.ProviderConfig
		settle Settling
		reply  map[string]neutrontest.Reply
		id     string
		err    string
		// kept: the refusal annotation is still on mg after the lookup
		// (it is removed once the lookup concludes "none").
		kept bool
		// twinCheck is AnnotationTwinCheck after the lookup ("" none).
		twinCheck string
	}{
		"BeforeAnyCreate": {
			reason: "Before any create attempt the lookup is the one scan, and nothing carrying the marker is none.",
			mg:     mg(false),
			settle: settle(0),
			reply:  map[string]neutrontest.Reply{scan: {Code: 200, Body: `{"floatingips": [{"id": "f0", "description": "theirs"}]}`}},
		},
		"AppliedAgain": {
			reason: "Before any create attempt, the object of a deleted MR of the same name (its marker, another text) is found: the MR applied again adopts it.",
			mg:     mg(false),
			settle: settle(0),
			reply:  map[string]neutrontest.Reply{scan: {Code: 200, Body: `{"floatingips": [{"id": "f0", "description": "theirs"}, {"id": "f1", "description": "older text ` + marker + `"}]}`}},
			id:     "f1",
		},
		"NoDescriptionsBeforeAnyCreate": {
			reason: "Before any create attempt a Neutron that hides descriptions has nothing to prove absent: none.",
			mg:     mg(false),
			settle: settle(0),
			reply:  map[string]neutrontest.Reply{scan: {Code: 200, Body: `{"floatingips": [{"id": "f0"}]}`}},
		},
		"EditedAfterLostAnswer": {
			reason: "After a lost answer the object is found by its marker although the spec description changed since the POST.",
			mg:     mg(true),
			settle: settle(time.Second),
			reply:  map[string]neutrontest.Reply{scan: {Code: 200, Body: `{"floatingips": [{"id": "f1", "description": "old ` + marker + `"}]}`}},
			id:     "f1",
		},
		"AbsentTooSoon": {
			reason: "Nothing found 10 s after a lost answer is no proof: Neutron may still complete the POST, so the lookup is an error to look again.",
			mg:     mg(true),
			settle: settle(10 * time.Second),
			reply:  map[string]neutrontest.Reply{scan: {Code: 200, Body: `{"floatingips": []}`}},
			err: "cannot conclude yet that the create attempted at 2026-12-01T12:00:00Z made no Neutron object: " +
				"Neutron may complete a create request up to 1m30s after it was sent; looking again at 2026-12-01T12:01:30Z",
		},
		"AbsentSettled": {
			reason: "Nothing found once the create has settled is taken as none; since settling is a bound, not a proof, Observe then looks for a twin for ten settling times.",
			mg:     mg(true),
			settle: settle(91 * time.Second),
			reply:  map[string]neutrontest.Reply{scan: {Code: 200, Body: `{"floatingips": []}`}},
			// 12:01:31 + 10 x 90 s
			twinCheck: "2026-12-01T12:16:31Z",
		},
		"RefusedSettlesAtOnce": {
			reason: "Nothing found a second after Neutron refused the newest create (4xx) proves there is none: a refused request made nothing.",
			mg:     refused(mg(true), failed),
			settle: settle(time.Second),
			reply:  map[string]neutrontest.Reply{scan: {Code: 200, Body: `{"floatingips": []}`}},
		},
		"RefusedThisSecond": {
			reason: "Within the second of the refusal the lookup waits, so that the next attempt's pending time is later than the refusal.",
			mg:     refused(mg(true), failed),
			settle: settle(500 * time.Millisecond),
			reply:  map[string]neutrontest.Reply{scan: {Code: 200, Body: `{"floatingips": []}`}},
			err:    "cannot create again before 2026-12-01T12:00:01Z: Neutron refused the create at 2026-12-01T12:00:00Z: Neutron 409 IpAddressAlreadyAllocated: m",
			kept:   true,
		},
		"RefusedInTheAttemptsSecond": {
			reason: "A refusal in the same second as the attempt's pending time (both whole seconds) answers that attempt.",
			mg:     refused(mg(true), failed.Add(-time.Second)),
			settle: settle(time.Second),
			reply:  map[string]neutrontest.Reply{scan: {Code: 200, Body: `{"floatingips": []}`}},
		},
		"RefusalOfAnEarlierAttempt": {
			reason: "A refusal older than the newest attempt says nothing about that attempt: the lookup waits for it to settle.",
			mg:     refused(mg(true), failed.Add(-time.Minute)),
			settle: settle(10 * time.Second),
			reply:  map[string]neutrontest.Reply{scan: {Code: 200, Body: `{"floatingips": []}`}},
			err: "cannot conclude yet that the create attempted at 2026-12-01T12:00:00Z made no Neutron object: " +
				"Neutron may complete a create request up to 1m30s after it was sent; looking again at 2026-12-01T12:01:30Z",
			kept: true,
		},
		"NoDescriptions": {
			reason: "After an attempt, a Neutron that hides descriptions cannot prove absence: an error, never a second create.",
			mg:     mg(true),
			settle: settle(time.Hour),
			reply:  map[string]neutrontest.Reply{scan: {Code: 200, Body: `{"floatingips": [{"id": "f0"}]}`}},
			err:    "cannot tell whether the interrupted create made a Neutron floating IP: Neutron returned floating IPs without their description",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			sc, _ := neutrontest.Serve(t, tc.reply)
			id, err := LookupCreated(context.Background(), sc, FloatingIPs, tc.mg, tc.settle)
			if diff := cmp.Diff(tc.err, neutrontest.Message(err)); diff != "" {
				t.Errorf("%s\nLookupCreated(...): -want error, +got error:\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(tc.id, id); diff != "" {
				t.Errorf("%s\nLookupCreated(...): -want ID, +got:\n%s", tc.reason, diff)
			}
			_, kept := tc.mg.GetAnnotations()[AnnotationCreateRefused]
			if diff := cmp.Diff(tc.kept, kept); diff != "" {
				t.Errorf("%s\nLookupCreated(...): -want refusal annotation kept, +got:\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(tc.twinCheck, tc.mg.GetAnnotations()[AnnotationTwinCheck]); diff != "" {
				t.Errorf("%s\nLookupCreated(...): -want twin check until, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestRecordRefusal(t *testing.T) {
	cases := map[string]struct {
		reason  string
		err     error
		records bool
	}{
		"Refused": {
			reason:  "Neutron's 409 answer to a POST is a refusal: the request made nothing.",
			err:     gophercloud.ErrUnexpectedResponseCode{Actual: 409, Body: []byte(`{"NeutronError": {"type": "IpAddressAlreadyAllocated", "message": "m"}}`)},
			records: true,
		},
		"RateLimited": {
			reason:  "A 429 answer is a refusal too.",
			err:     gophercloud.ErrUnexpectedResponseCode{Actual: 429},
			records: true,
		},
		"ServerError": {
			reason: "A 500 answer proves nothing: Neutron may have committed the object before it failed.",
			err:    gophercloud.ErrUnexpectedResponseCode{Actual: 500},
		},
		"LostAnswer": {
			reason: "An answer that never arrived proves nothing.",
			err:    io.ErrUnexpectedEOF,
		},
		"Held": {
			reason:  "A request held by a Retry-After was never sent: it made nothing.",
			err:     &url.Error{Op: "Post", URL: "http://n/v2.0/ports", Err: &HeldError{ProviderConfig: "pc", Hold: Hold{Service: ServiceNeutron, Answer: &APIError{Code: 503}}}},
			records: true,
		},
		"HeldServerError": {
			reason: "The 503 answer that asked to wait proves nothing, as any 5xx.",
			err:    &HeldError{ProviderConfig: "pc", Hold: Hold{Service: ServiceNeutron, Answer: &APIError{Code: 503}}, Answered: true},
		},
		"Throttled": {
			reason:  "A request the token bucket refused was never sent.",
			err:     &ThrottledError{ProviderConfig: "pc", Rate: 1},
			records: true,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			o := owner()
			if diff := cmp.Diff(tc.err, RecordRefusal(o, tc.err), test.EquateErrors()); diff != "" {
				t.Errorf("%s\nRecordRefusal(...): -want the error unchanged, +got:\n%s", tc.reason, diff)
			}
			_, got := o.GetAnnotations()[AnnotationCreateRefused]
			if diff := cmp.Diff(tc.records, got); diff != "" {
				t.Errorf("%s\nRecordRefusal(...): -want annotation recorded, +got:\n%s", tc.reason, diff)
			}
		})
	}
}
