package securitygroup

import (
	"context"
	"fmt"
	"net/http"
	"testing"

	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	th "github.com/gophercloud/gophercloud/v2/testhelper"
	fake "github.com/gophercloud/gophercloud/v2/testhelper/client"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ipsecgw/provider-ipsec/apis/cluster/networking/v1alpha1"
)

const groupID = "0b4016a5-8418-431b-97eb-6f941c786523"

// groupJSON is a group as Neutron returns it, with the IKE rule and the
// default egress rules.
const groupJSON = `{"security_group": {"id": "` + groupID + `", "name": "gw", "description": "", "revision_number": 4,
  "security_group_rules": [
    {"id": "r-ike", "direction": "ingress", "ethertype": "IPv4", "protocol": "udp", "port_range_min": 500, "port_range_max": 500, "remote_ip_prefix": "0.0.0.0/0", "remote_group_id": null},
    {"id": "r-eg4", "direction": "egress", "ethertype": "IPv4", "protocol": null, "port_range_min": null, "port_range_max": null, "remote_ip_prefix": null, "remote_group_id": null},
    {"id": "r-eg6", "direction": "egress", "ethertype": "IPv6", "protocol": null, "port_range_min": null, "port_range_max": null, "remote_ip_prefix": null, "remote_group_id": null}]}}`

func sg(externalName string, r ...v1alpha1.SecurityGroupRule) *v1alpha1.SecurityGroup {
	s := &v1alpha1.SecurityGroup{
		ObjectMeta: metav1.ObjectMeta{Name: "gw", UID: types.UID("uid-1")},
		Spec:       v1alpha1.SecurityGroupSpec{ForProvider: v1alpha1.SecurityGroupParameters{Name: "gw", Rules: r}},
	}
	if externalName != "" {
		meta.SetExternalName(s, externalName)
	}
	return s
}

// neutronFake serves canned answers by "METHOD path?query" and counts the
// requests.
func neutronFake(t *testing.T, answers map[string]struct {
	code int
	body string
}) (*external, *int, func()) {
	fs := th.SetupHTTP()
	n := 0
	fs.Mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		n++
		key := r.Method + " " + r.URL.Path
		if r.URL.RawQuery != "" {
			key += "?" + r.URL.RawQuery
		}
		a, ok := answers[key]
		if !ok {
			t.Errorf("unexpected request %s", key)
			w.WriteHeader(http.StatusTeapot)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(a.code)
		fmt.Fprint(w, a.body)
	})
	return &external{neutron: fake.ServiceClient(fs)}, &n, fs.Teardown
}

type answer = struct {
	code int
	body string
}

func TestObserve(t *testing.T) {
	type want struct {
		obs      managed.ExternalObservation
		err      string
		requests int
		extName  string
		// ready is the Ready condition Observe leaves ("" if none).
		ready corev1.ConditionStatus
		msg   string
	}
	cases := map[string]struct {
		reason  string
		mg      *v1alpha1.SecurityGroup
		answers map[string]answer
		want    want
	}{
		"UpToDate": {
			reason:  "A group with the spec's rules (and Neutron's default egress rules) is up to date after one GET.",
			mg:      sg(groupID, ike()),
			answers: map[string]answer{"GET /security-groups/" + groupID: {200, groupJSON}},
			want: want{obs: managed.ExternalObservation{ResourceExists: true, ResourceUpToDate: true}, requests: 1, extName: groupID,
				ready: corev1.ConditionTrue},
		},
		"RuleMissing": {
			reason:  "A spec rule Neutron lacks makes the group not up to date and not Ready: its rules are not in place (such as while Neutron refuses to create one).",
			mg:      sg(groupID, ike(), esp()),
			answers: map[string]answer{"GET /security-groups/" + groupID: {200, groupJSON}},
			want: want{obs: managed.ExternalObservation{ResourceExists: true, Diff: `name "gw", description "", 1 rules missing, 0 extra`},
				requests: 1, extName: groupID, ready: corev1.ConditionFalse, msg: "the group lacks 1 of the spec's rules and has 0 that the spec does not"},
		},
		"RuleExtra": {
			reason:  "A rule the spec does not have (added by hand) makes the group not Ready until it is deleted: the group admits more than it should.",
			mg:      sg(groupID),
			answers: map[string]answer{"GET /security-groups/" + groupID: {200, groupJSON}},
			want: want{obs: managed.ExternalObservation{ResourceExists: true, Diff: `name "gw", description "", 0 rules missing, 1 extra`},
				requests: 1, extName: groupID, ready: corev1.ConditionFalse, msg: "the group lacks 0 of the spec's rules and has 1 that the spec does not"},
		},
		"NameDrift": {
			reason:  "A drifted name is corrected by Update, but the rules are in place: the group is Ready.",
			mg:      func() *v1alpha1.SecurityGroup { s := sg(groupID, ike()); s.Spec.ForProvider.Name = "gw2"; return s }(),
			answers: map[string]answer{"GET /security-groups/" + groupID: {200, groupJSON}},
			want: want{obs: managed.ExternalObservation{ResourceExists: true, Diff: `name "gw", description "", 0 rules missing, 0 extra`},
				requests: 1, extName: groupID, ready: corev1.ConditionTrue},
		},
		"Gone": {
			reason:  "A group Neutron does not know does not exist.",
			mg:      sg(groupID, ike()),
			answers: map[string]answer{"GET /security-groups/" + groupID: {404, `{"NeutronError": {"type": "SecurityGroupNotFound", "message": "Security group x does not exist", "detail": ""}}`}},
			want:    want{requests: 1, extName: groupID},
		},
		"NoExternalNameNothingTagged": {
			reason:  "Without an external name and no tagged group, the group does not exist yet.",
			mg:      sg("", ike()),
			answers: map[string]answer{"GET /security-groups?tags=crossplane-uid-uid-1": {200, `{"security_groups": []}`}},
			want:    want{requests: 1},
		},
		"AdoptTagged": {
			reason: "Without an external name, a group carrying the MR's tag is adopted and its ID recorded.",
			mg:     sg("", ike()),
			answers: map[string]answer{
				"GET /security-groups?tags=crossplane-uid-uid-1": {200, `{"security_groups": [{"id": "` + groupID + `", "name": "gw"}]}`},
				"GET /security-groups/" + groupID:                {200, groupJSON},
			},
			want: want{obs: managed.ExternalObservation{ResourceExists: true, ResourceUpToDate: true, ResourceLateInitialized: true}, requests: 2, extName: groupID,
				ready: corev1.ConditionTrue},
		},
		"ServerError": {
			reason:  "A Neutron error is returned with its type and message.",
			mg:      sg(groupID),
			answers: map[string]answer{"GET /security-groups/" + groupID: {500, `{"NeutronError": {"type": "HTTPInternalServerError", "message": "Request Failed", "detail": ""}}`}},
			want:    want{err: "cannot get security group " + groupID + ": Neutron 500 HTTPInternalServerError: Request Failed", requests: 1, extName: groupID},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			e, n, done := neutronFake(t, tc.answers)
			defer done()
			obs, err := e.Observe(context.Background(), tc.mg)
			c := tc.mg.GetCondition(xpv2.TypeReady)
			got := want{obs: obs, requests: *n, extName: meta.GetExternalName(tc.mg), msg: c.Message}
			if c.Status != corev1.ConditionUnknown {
				got.ready = c.Status
			}
			if err != nil {
				got.err = err.Error()
			}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(want{}), cmpopts.IgnoreFields(managed.ExternalObservation{}, "ConnectionDetails")); diff != "" {
				t.Errorf("%s\nObserve(): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestCreate(t *testing.T) {
	cases := map[string]struct {
		reason  string
		answers map[string]answer
		wantErr string
		extName string
		// requests Neutron must receive, in all.
		requests int
	}{
		"Tagged": {
			reason: "Create makes the group, tags it with the MR's UID and records its ID.",
			answers: map[string]answer{
				"POST /security-groups":                     {201, `{"security_group": {"id": "` + groupID + `", "name": "gw"}}`},
				"PUT /security-groups/" + groupID + "/tags": {200, `{"tags": ["crossplane-uid-uid-1"]}`},
			},
			extName:  groupID,
			requests: 2,
		},
		"TagFails": {
			reason: "When the tag cannot be set the new group is deleted again, so nothing untraceable is left.",
			answers: map[string]answer{
				"POST /security-groups":                     {201, `{"security_group": {"id": "` + groupID + `", "name": "gw"}}`},
				"PUT /security-groups/" + groupID + "/tags": {503, `{"NeutronError": {"type": "ServiceUnavailable", "message": "busy", "detail": ""}}`},
				"DELETE /security-groups/" + groupID:        {204, ``},
			},
			wantErr:  "cannot tag new security group " + groupID + ": Neutron 503 ServiceUnavailable: busy",
			requests: 3,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			e, n, done := neutronFake(t, tc.answers)
			defer done()
			mg := sg("", ike())
			defer func() {
				if *n != tc.requests {
					t.Errorf("%s\nNeutron got %d requests, want %d", tc.reason, *n, tc.requests)
				}
			}()
			_, err := e.Create(context.Background(), mg)
			gotErr := ""
			if err != nil {
				gotErr = err.Error()
			}
			if diff := cmp.Diff(tc.wantErr, gotErr); diff != "" {
				t.Errorf("%s\nCreate(): -want error, +got error:\n%s", tc.reason, diff)
			}
			if got := meta.GetExternalName(mg); got != tc.extName {
				t.Errorf("%s\nexternal name %q, want %q", tc.reason, got, tc.extName)
			}
		})
	}
}
