package securitygroup

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/ipsecgw/provider-ipsec/apis/cluster/networking/v1alpha1"
	"github.com/ipsecgw/provider-ipsec/internal/clients/openstack"
	"github.com/ipsecgw/provider-ipsec/internal/clients/openstack/neutrontest"
	"github.com/ipsecgw/provider-ipsec/internal/controller/mrsetup/mrsetuptest"
)

const (
	groupID = "0b4016a5-8418-431b-97eb-6f941c786523"
	uid     = "5f0c7a2e-9d1b-4c3a-8e6f-0a1b2c3d4e5f"
	// legacy is the marker an earlier release gave the group of sg().
	legacy = "[crossplane-uid-" + uid + "]"
)

// marker is the marker of sg(); marked the description Create gives its
// group.
var (
	marker = openstack.Marker(sg(""))
	marked = "IKE " + marker
)

type reply = neutrontest.Reply

// groupJSON is a group as Neutron returns it, with the description Create
// gave it, the IKE rule and the default egress rules.
var groupJSON = `{"security_group": {"id": "` + groupID + `", "name": "gw", "description": "` + marked + `", "revision_number": 4,
  "security_group_rules": [
    {"id": "r-ike", "direction": "ingress", "ethertype": "IPv4", "protocol": "udp", "port_range_min": 500, "port_range_max": 500, "remote_ip_prefix": "0.0.0.0/0", "remote_group_id": null},
    {"id": "r-eg4", "direction": "egress", "ethertype": "IPv4", "protocol": null, "port_range_min": null, "port_range_max": null, "remote_ip_prefix": null, "remote_group_id": null},
    {"id": "r-eg6", "direction": "egress", "ethertype": "IPv6", "protocol": null, "port_range_min": null, "port_range_max": null, "remote_ip_prefix": null, "remote_group_id": null}]}}`

// Requests the tests expect.
var (
	scan   = "GET /security-groups?fields=id&fields=description&fields=tags"
	get    = "GET /security-groups/" + groupID
	create = "POST /security-groups"
	// created is the POST as Neutron receives it.
	created = create + ` {"security_group":{"description":"` + marked + `","name":"gw"}}`
)

// listed is a list answer holding the group of sg(), found.
var listed = `{"security_groups": [{"id": "` + groupID + `", "description": "` + marked + `"}]}`

const none = `{"security_groups": []}`

func sg(externalName string, r ...v1alpha1.SecurityGroupRule) *v1alpha1.SecurityGroup {
	s := &v1alpha1.SecurityGroup{
		ObjectMeta: metav1.ObjectMeta{Name: "gw", UID: types.UID(uid)},
		Spec: v1alpha1.SecurityGroupSpec{ForProvider: v1alpha1.SecurityGroupParameters{
			Name: "gw", Description: ptr.To("IKE"), Rules: r}},
	}
	if externalName != "" {
		meta.SetExternalName(s, externalName)
	}
	return s
}

func TestObserve(t *testing.T) {
	type want struct {
		obs      managed.ExternalObservation
		err      string
		requests []string
		extName  string
		// ready is the Ready condition Observe leaves ("" if none).
		ready corev1.ConditionStatus
		msg   string
	}
	cases := map[string]struct {
		reason  string
		mg      *v1alpha1.SecurityGroup
		replies map[string]reply
		want    want
	}{
		"UpToDate": {
			reason:  "A group with the spec's rules (and Neutron's default egress rules) and the marked description is up to date after one GET: the marker is no drift.",
			mg:      sg(groupID, ike()),
			replies: map[string]reply{get: {Code: 200, Body: groupJSON}},
			want: want{obs: managed.ExternalObservation{ResourceExists: true, ResourceUpToDate: true}, requests: []string{get}, extName: groupID,
				ready: corev1.ConditionTrue},
		},
		"RuleMissing": {
			reason:  "A spec rule Neutron lacks makes the group not up to date and not Ready: its rules are not in place (such as while Neutron refuses to create one).",
			mg:      sg(groupID, ike(), esp()),
			replies: map[string]reply{get: {Code: 200, Body: groupJSON}},
			want: want{obs: managed.ExternalObservation{ResourceExists: true, Diff: `name "gw", description "IKE", 1 rules missing, 0 extra`},
				requests: []string{get}, extName: groupID, ready: corev1.ConditionFalse, msg: "the group lacks 1 of the spec's rules and has 0 that the spec does not"},
		},
		"RuleExtra": {
			reason:  "A rule the spec does not have (added by hand) makes the group not Ready until it is deleted: the group admits more than it should.",
			mg:      sg(groupID),
			replies: map[string]reply{get: {Code: 200, Body: groupJSON}},
			want: want{obs: managed.ExternalObservation{ResourceExists: true, Diff: `name "gw", description "IKE", 0 rules missing, 1 extra`},
				requests: []string{get}, extName: groupID, ready: corev1.ConditionFalse, msg: "the group lacks 0 of the spec's rules and has 1 that the spec does not"},
		},
		"NameDrift": {
			reason:  "A drifted name is corrected by Update, but the rules are in place: the group is Ready.",
			mg:      func() *v1alpha1.SecurityGroup { s := sg(groupID, ike()); s.Spec.ForProvider.Name = "gw2"; return s }(),
			replies: map[string]reply{get: {Code: 200, Body: groupJSON}},
			want: want{obs: managed.ExternalObservation{ResourceExists: true, Diff: `name "gw", description "IKE", 0 rules missing, 0 extra`},
				requests: []string{get}, extName: groupID, ready: corev1.ConditionTrue},
		},
		"Deleting": {
			reason: "A group whose MR is being deleted exists, and its readiness is reported, but it is not compared with the spec: the reconciler deletes it whatever the spec says.",
			mg: func() *v1alpha1.SecurityGroup {
				s := sg(groupID, ike(), esp())
				s.SetDeletionTimestamp(ptr.To(metav1.NewTime(time.Date(2026, 12, 7, 21, 0, 0, 0, time.UTC))))
				return s
			}(),
			replies: map[string]reply{get: {Code: 200, Body: groupJSON}},
			want: want{obs: managed.ExternalObservation{ResourceExists: true}, requests: []string{get}, extName: groupID,
				ready: corev1.ConditionFalse, msg: "the group lacks 1 of the spec's rules and has 0 that the spec does not"},
		},
		"Gone": {
			reason: "A group Neutron does not know, with no other group carrying the marker, does not exist.",
			mg:     sg(groupID, ike()),
			replies: map[string]reply{
				get:  {Code: 404, Body: neutrontest.Error("SecurityGroupNotFound", "Security group x does not exist")},
				scan: {Code: 200, Body: `{"security_groups": []}`},
			},
			want: want{requests: []string{get, scan}, extName: groupID},
		},
		"NoExternalNameNothingCreated": {
			reason:  "Without an external name and no group carrying the marker, the group does not exist yet.",
			mg:      sg("", ike()),
			replies: map[string]reply{scan: {Code: 200, Body: none}},
			want:    want{requests: []string{scan}},
		},
		"AdoptLostAnswer": {
			reason: "Without an external name, the group carrying the marker (a create whose answer was lost, or a deleted SecurityGroup of the same name applied again) is adopted and its ID recorded.",
			mg:     sg("", ike()),
			replies: map[string]reply{
				scan: {Code: 200, Body: listed},
				get:  {Code: 200, Body: groupJSON},
			},
			want: want{obs: managed.ExternalObservation{ResourceExists: true, ResourceUpToDate: true, ResourceLateInitialized: true},
				requests: []string{scan, get}, extName: groupID,
				ready: corev1.ConditionTrue},
		},
		"LookupFails": {
			reason:  "A failed lookup of an unrecorded create says what it looked for, with Neutron's answer.",
			mg:      sg(""),
			replies: map[string]reply{scan: {Code: 503, Body: neutrontest.Error("ServiceUnavailable", "busy")}},
			want: want{err: "cannot list the security groups to find the one carrying " + marker + ": Neutron 503 ServiceUnavailable: busy",
				requests: []string{scan}},
		},
		"ServerError": {
			reason:  "A Neutron error is returned with its type and message.",
			mg:      sg(groupID),
			replies: map[string]reply{get: {Code: 500, Body: neutrontest.Error("HTTPInternalServerError", "Request Failed")}},
			want: want{err: "cannot get Neutron security group " + groupID + ": Neutron 500 HTTPInternalServerError: Request Failed",
				requests: []string{get}, extName: groupID},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			sc, seen := neutrontest.Serve(t, tc.replies)
			obs, err := (&external{object.External(sc, openstack.Settling{})}).Observe(context.Background(), tc.mg)
			c := tc.mg.GetCondition(xpv2.TypeReady)
			got := want{obs: obs, err: neutrontest.Message(err), requests: *seen, extName: meta.GetExternalName(tc.mg), msg: c.Message}
			if c.Status != corev1.ConditionUnknown {
				got.ready = c.Status
			}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(want{}), cmpopts.IgnoreFields(managed.ExternalObservation{}, "ConnectionDetails")); diff != "" {
				t.Errorf("%s\nObserve(): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestCreate(t *testing.T) {
	cases := map[string]struct {
		reason   string
		replies  map[string]reply
		err      string
		extName  string
		requests []string
		refused  bool
	}{
		"Created": {
			reason:   "Create makes the group with one POST whose description carries the MR's marker, and records its ID.",
			replies:  map[string]reply{create: {Code: 201, Body: `{"security_group": {"id": "` + groupID + `", "name": "gw"}}`}},
			extName:  groupID,
			requests: []string{created},
		},
		"Refused": {
			reason:   "A refused create is an error with Neutron's type and message, and records nothing.",
			replies:  map[string]reply{create: {Code: 409, Body: neutrontest.Error("OverQuota", "Quota exceeded for resources: ['security_group'].")}},
			refused:  true,
			err:      "cannot create Neutron security group: Neutron 409 OverQuota: Quota exceeded for resources: ['security_group'].",
			requests: []string{created},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			sc, seen := neutrontest.Serve(t, tc.replies)
			mg := sg("", ike())
			_, err := (&external{object.External(sc, openstack.Settling{})}).Create(context.Background(), mg)
			if diff := cmp.Diff(tc.err, neutrontest.Message(err)); diff != "" {
				t.Errorf("%s\nCreate(): -want error, +got error:\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(tc.extName, meta.GetExternalName(mg)); diff != "" {
				t.Errorf("%s\nexternal name: -want, +got:\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(tc.requests, *seen); diff != "" {
				t.Errorf("%s\nNeutron requests: -want, +got:\n%s", tc.reason, diff)
			}
			_, refused := mg.GetAnnotations()[openstack.AnnotationCreateRefused]
			if diff := cmp.Diff(tc.refused, refused); diff != "" {
				t.Errorf("%s\nCreate(): -want refusal recorded, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

// TestUpdateKeepsMarker proves that correcting the description keeps the
// marker after the user's new text.
func TestUpdateKeepsMarker(t *testing.T) {
	sc, seen := neutrontest.Serve(t, map[string]reply{
		get:              {Code: 200, Body: groupJSON},
		"PUT " + get[4:]: {Code: 200, Body: groupJSON},
	})
	mg := sg(groupID, ike())
	mg.Spec.ForProvider.Description = ptr.To("IKE and NAT-T")
	e := &external{object.External(sc, openstack.Settling{})}
	if _, err := e.Observe(context.Background(), mg); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Update(context.Background(), mg); err != nil {
		t.Fatal(err)
	}
	want := []string{get, "PUT " + get[4:] + ` {"security_group":{"description":"IKE and NAT-T ` + marker + `","name":"gw"}}`}
	if diff := cmp.Diff(want, *seen); diff != "" {
		t.Errorf("Neutron requests: -want, +got:\n%s", diff)
	}
}

// TestLegacyMarker checks a group an earlier release made, whose
// description carries the marker with the MR's UID: the user's text is
// still the spec's, but the group is not up to date until the update gives
// it the marker of this release, by which the MR applied again after its
// deletion finds it.
func TestLegacyMarker(t *testing.T) {
	old := strings.Replace(groupJSON, marked, "IKE "+legacy, 1)
	sc, seen := neutrontest.Serve(t, map[string]reply{
		get:              {Code: 200, Body: old},
		"PUT " + get[4:]: {Code: 200, Body: groupJSON},
	})
	mg := sg(groupID, ike())
	e := &external{object.External(sc, openstack.Settling{})}
	obs, err := e.Observe(context.Background(), mg)
	if err != nil || obs.ResourceUpToDate {
		t.Fatalf("Observe(...) = %+v, %v: a group with an earlier release's marker must not be up to date", obs, err)
	}
	if _, err := e.Update(context.Background(), mg); err != nil {
		t.Fatal(err)
	}
	want := []string{get, "PUT " + get[4:] + ` {"security_group":{"description":"IKE ` + marker + `","name":"gw"}}`}
	if diff := cmp.Diff(want, *seen); diff != "" {
		t.Errorf("Neutron requests: -want, +got:\n%s", diff)
	}
}

// TestUpdateReady checks that Update makes the group Ready once its rules
// are in place, and leaves it not Ready when Neutron refuses a rule: the
// reconciler requeues a successful Update only after the poll interval, so
// a group whose rules Update just added would otherwise show not Ready for
// that long.
func TestUpdateReady(t *testing.T) {
	rule := `{"security_group_rule": {"id": "r-esp", "direction": "ingress", "ethertype": "IPv4", "protocol": "esp", "security_group_id": "` + groupID + `"}}`
	cases := map[string]struct {
		reason  string
		replies map[string]reply
		want    corev1.ConditionStatus
		wantErr bool
	}{
		"RulesAdded": {
			reason:  "A missing rule that Neutron creates makes the group Ready in the same reconcile.",
			replies: map[string]reply{get: {Code: 200, Body: groupJSON}, "POST /security-group-rules": {Code: 201, Body: rule}},
			want:    corev1.ConditionTrue,
		},
		"RuleRefused": {
			reason: "A rule Neutron refuses leaves the group not Ready, as Observe found it.",
			replies: map[string]reply{get: {Code: 200, Body: groupJSON},
				"POST /security-group-rules": {Code: 404, Body: neutrontest.Error("SecurityGroupNotFound", "Security group x does not exist")}},
			want:    corev1.ConditionFalse,
			wantErr: true,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			sc, _ := neutrontest.Serve(t, tc.replies)
			mg := sg(groupID, ike(), esp())
			e := &external{object.External(sc, openstack.Settling{})}
			if _, err := e.Observe(context.Background(), mg); err != nil {
				t.Fatal(err)
			}
			_, err := e.Update(context.Background(), mg)
			if (err != nil) != tc.wantErr {
				t.Fatalf("%s\nUpdate(): error %v, want error %v", tc.reason, err, tc.wantErr)
			}
			if diff := cmp.Diff(tc.want, mg.GetCondition(xpv2.TypeReady).Status); diff != "" {
				t.Errorf("%s\nReady after Update: -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

// TestCrashSafeCreate runs the managed reconciler with the OpenStack
// kinds' options, one fresh reconciler per step as after a provider
// restart, through the ways a create can be interrupted. Neutron must end
// with one group for the MR, whose ID is the MR's external name.
func TestCrashSafeCreate(t *testing.T) {
	cases := map[string]mrsetuptest.Case{
		"KilledAfterPOST": {
			Reason:  "A provider killed after Neutron created the group, before the ID was saved: the restarted one finds the group by its marker and adopts it, without a second POST.",
			Pending: true,
			Steps: []mrsetuptest.Step{{
				Replies:  map[string]reply{scan: {Code: 200, Body: listed}, get: {Code: 200, Body: groupJSON}},
				Requests: []string{scan, get},
			}},
		},
		"KilledBeforePOST": {
			Reason:  "A provider killed before its POST reached Neutron: the marker proves there is no group, and the restarted one creates it once.",
			Pending: true,
			Steps: []mrsetuptest.Step{{
				Replies:  map[string]reply{scan: {Code: 200, Body: none}, create: {Code: 201, Body: groupJSON}},
				Requests: []string{scan, scan, created},
			}},
		},
		"LostAnswer": {
			Reason: "A POST whose answer is lost after Neutron created the group fails the create; the next reconcile adopts the group by its marker instead of creating a twin.",
			Steps: []mrsetuptest.Step{{
				Replies:  map[string]reply{scan: {Code: 200, Body: none}, create: {Cut: true}},
				Requests: []string{scan, created},
			}, {
				Replies:  map[string]reply{scan: {Code: 200, Body: listed}, get: {Code: 200, Body: groupJSON}},
				Requests: []string{scan, get},
			}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			mrsetuptest.Run(t, v1alpha1.SecurityGroupGroupVersionKind, sg("", ike()), openstack.ScanFinder(openstack.SecurityGroups),
				NewExternal, tc, groupID)
		})
	}
}
