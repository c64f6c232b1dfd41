package openstack

import (
	"context"
	"testing"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	"github.com/google/go-cmp/cmp"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/networks"

	"github.com/ipsecgw/provider-ipsec/apis/cluster/v1alpha1"
	"github.com/ipsecgw/provider-ipsec/internal/clients/openstack/neutrontest"
)

const (
	netID  = "a1b2c3d4-0000-4000-8000-000000000001"
	netID2 = "a1b2c3d4-0000-4000-8000-000000000002"
	// scanNetworks is the request of ScanCreated and DeleteCreated.
	scanNetworks = "GET /networks?fields=id&fields=description&fields=tags"
)

// gone is Neutron's answer for a network it does not have.
var gone = neutrontest.Reply{Code: 404, Body: neutrontest.Error("NetworkNotFound", "Network could not be found.")}

func TestGetOrAdopt(t *testing.T) {
	type want struct {
		exists, adopted bool
		name            string
		extName         string
		err             string
		requests        []string
	}
	found := neutrontest.Reply{Code: 200, Body: `{"network": {"id": "` + netID + `", "name": "tenant"}}`}
	cases := map[string]struct {
		reason  string
		extName string
		replies map[string]neutrontest.Reply
		want    want
	}{
		"ByExternalName": {
			reason:  "A known external name is one GET of the object, read into the caller's struct.",
			extName: netID,
			replies: map[string]neutrontest.Reply{"GET /networks/" + netID: found},
			want:    want{exists: true, name: "tenant", extName: netID, requests: []string{"GET /networks/" + netID}},
		},
		"Gone": {
			reason:  "An object Neutron no longer has (404), with no other object carrying the marker, does not exist, and is no error.",
			extName: netID,
			replies: map[string]neutrontest.Reply{
				"GET /networks/" + netID: gone,
				scanNetworks:             {Code: 200, Body: `{"networks": [{"id": "other", "description": "tenant"}]}`},
			},
			want: want{extName: netID, requests: []string{"GET /networks/" + netID, scanNetworks}},
		},
		"GoneRelocated": {
			reason:  "When the external name's object is gone and another carries the marker (an older external name written over the newest), that one is adopted rather than a twin created.",
			extName: netID,
			replies: map[string]neutrontest.Reply{
				"GET /networks/" + netID:  gone,
				scanNetworks:              {Code: 200, Body: `{"networks": [{"id": "` + netID2 + `", "description": "edited ` + marker + `"}]}`},
				"GET /networks/" + netID2: {Code: 200, Body: `{"network": {"id": "` + netID2 + `", "name": "tenant"}}`},
			},
			want: want{exists: true, adopted: true, name: "tenant", extName: netID2,
				requests: []string{"GET /networks/" + netID, scanNetworks, "GET /networks/" + netID2}},
		},
		"GoneRelocatedTwins": {
			reason:  "Two other objects carrying the marker are an error naming both; nothing is adopted and nothing created.",
			extName: netID,
			replies: map[string]neutrontest.Reply{
				"GET /networks/" + netID: gone,
				scanNetworks:             {Code: 200, Body: `{"networks": [{"id": "n2", "description": "` + marker + `"}, {"id": "n3", "description": "` + marker + `"}]}`},
			},
			want: want{extName: netID, err: "cannot tell which of 2 Neutron networks carrying " + marker + " (n2, n3) to adopt: delete all but one by hand",
				requests: []string{"GET /networks/" + netID, scanNetworks}},
		},
		"GoneScanFails": {
			reason:  "A failed scan after a 404 is an error, so that the reconciler does not create a twin of an object it could not look for.",
			extName: netID,
			replies: map[string]neutrontest.Reply{
				"GET /networks/" + netID: gone,
				scanNetworks:             {Code: 503, Body: neutrontest.Error("ServiceUnavailable", "busy")},
			},
			want: want{extName: netID, err: "cannot list the networks to find the one carrying " + marker + ": Neutron 503 ServiceUnavailable: busy",
				requests: []string{"GET /networks/" + netID, scanNetworks}},
		},
		"GetFails": {
			reason:  "Another failed GET names the kind and ID, with Neutron's status, type and message.",
			extName: netID,
			replies: map[string]neutrontest.Reply{"GET /networks/" + netID: {Code: 503, Body: neutrontest.Error("ServiceUnavailable", "busy")}},
			want: want{extName: netID, err: "cannot get Neutron network " + netID + ": Neutron 503 ServiceUnavailable: busy",
				requests: []string{"GET /networks/" + netID}},
		},
		"Adopted": {
			reason: "Without an external name the object carrying the marker is looked up, adopted and read.",
			replies: map[string]neutrontest.Reply{
				scanNetworks:             {Code: 200, Body: `{"networks": [{"id": "other", "description": "tenant"}, {"id": "` + netID + `", "description": "tenant ` + marker + `"}]}`},
				"GET /networks/" + netID: found,
			},
			want: want{exists: true, adopted: true, name: "tenant", extName: netID,
				requests: []string{scanNetworks, "GET /networks/" + netID}},
		},
		"NotCreated": {
			reason: "Without an external name and without a marked object there is nothing, and nothing more is sent.",
			replies: map[string]neutrontest.Reply{
				scanNetworks: {Code: 200, Body: `{"networks": [{"id": "other", "description": "tenant"}]}`},
			},
			want: want{requests: []string{scanNetworks}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			sc, seen := neutrontest.Serve(t, tc.replies)
			mg := owner()
			if tc.extName != "" {
				meta.SetExternalName(mg, tc.extName)
			}
			n := &networks.Network{}
			exists, adopted, err := GetOrAdopt(context.Background(), sc, Networks, mg, Settling{}, n)
			got := want{exists: exists, adopted: adopted, name: n.Name, extName: meta.GetExternalName(mg), err: neutrontest.Message(err), requests: *seen}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(want{})); diff != "" {
				t.Errorf("%s\nGetOrAdopt(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestDelete(t *testing.T) {
	cases := map[string]struct {
		reason   string
		id       string
		reply    neutrontest.Reply
		err      string
		requests []string
	}{
		"Deleted": {
			reason:   "One DELETE of the object.",
			id:       netID,
			reply:    neutrontest.Reply{Code: 204},
			requests: []string{"DELETE /networks/" + netID},
		},
		"AlreadyGone": {
			reason:   "An object already gone (404) is deleted.",
			id:       netID,
			reply:    neutrontest.Reply{Code: 404, Body: neutrontest.Error("NetworkNotFound", "Network could not be found.")},
			requests: []string{"DELETE /networks/" + netID},
		},
		"InUse": {
			reason:   "A refused delete names the kind and ID, with Neutron's status, type and message.",
			id:       netID,
			reply:    neutrontest.Reply{Code: 409, Body: neutrontest.Error("NetworkInUse", "ports in use")},
			err:      "cannot delete Neutron network " + netID + ": Neutron 409 NetworkInUse: ports in use",
			requests: []string{"DELETE /networks/" + netID},
		},
		"NoID": {
			reason: "An object never created (no ID) sends nothing.",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			sc, seen := neutrontest.Serve(t, map[string]neutrontest.Reply{"DELETE /networks/" + tc.id: tc.reply})
			err := Delete(context.Background(), sc, Networks, tc.id)
			if diff := cmp.Diff(tc.err, neutrontest.Message(err)); diff != "" {
				t.Errorf("%s\nDelete(...): -want error, +got error:\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(tc.requests, *seen); diff != "" {
				t.Errorf("%s\nDelete(...): -want requests, +got requests:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestDeleteCreated(t *testing.T) {
	ours := `{"id": "` + netID + `", "description": "` + marker + `"}`
	cases := map[string]struct {
		reason   string
		id       string
		replies  map[string]neutrontest.Reply
		err      string
		requests []string
	}{
		"NoTwin": {
			reason: "The object is deleted, then one list finds no other object carrying the marker.",
			id:     netID,
			replies: map[string]neutrontest.Reply{
				"DELETE /networks/" + netID: {Code: 204},
				scanNetworks:                {Code: 200, Body: `{"networks": [{"id": "other", "description": "tenant"}]}`},
			},
			requests: []string{"DELETE /networks/" + netID, scanNetworks},
		},
		"Twins": {
			reason: "Every other object carrying the marker or the legacy tag (a create Neutron completed after the provider gave up on it) is deleted too; an object listed after its own delete is not deleted twice, and others' objects are left.",
			id:     netID,
			replies: map[string]neutrontest.Reply{
				"DELETE /networks/" + netID: {Code: 204},
				scanNetworks: {Code: 200, Body: `{"networks": [` + ours + `, {"id": "n2", "description": "tenant ` + marker + `"},
					{"id": "n3", "description": "", "tags": ["` + LegacyTag(owner()) + `"]}, {"id": "n4", "description": "[crossplane-uid-someone-else]"}]}`},
				"DELETE /networks/n2": {Code: 204},
				"DELETE /networks/n3": {Code: 404, Body: neutrontest.Error("NetworkNotFound", "gone")},
			},
			requests: []string{"DELETE /networks/" + netID, scanNetworks, "DELETE /networks/n2", "DELETE /networks/n3"},
		},
		"Refused": {
			reason: "A refused delete of the object is returned before any list, for the reconciler to retry.",
			id:     netID,
			replies: map[string]neutrontest.Reply{
				"DELETE /networks/" + netID: {Code: 409, Body: neutrontest.Error("NetworkInUse", "ports in use")},
			},
			err:      "cannot delete Neutron network " + netID + ": Neutron 409 NetworkInUse: ports in use",
			requests: []string{"DELETE /networks/" + netID},
		},
		"TwinRefused": {
			reason: "A twin Neutron refuses to delete is an error naming it, for the reconciler to retry the whole.",
			id:     netID,
			replies: map[string]neutrontest.Reply{
				"DELETE /networks/" + netID: {Code: 204},
				scanNetworks:                {Code: 200, Body: `{"networks": [{"id": "n2", "description": "` + marker + `"}]}`},
				"DELETE /networks/n2":       {Code: 409, Body: neutrontest.Error("NetworkInUse", "ports in use")},
			},
			err:      "cannot delete Neutron network n2: Neutron 409 NetworkInUse: ports in use",
			requests: []string{"DELETE /networks/" + netID, scanNetworks, "DELETE /networks/n2"},
		},
		"ScanFails": {
			reason: "A failed list is an error, so that the MR is not released while twins may be left.",
			id:     netID,
			replies: map[string]neutrontest.Reply{
				"DELETE /networks/" + netID: {Code: 204},
				scanNetworks:                {Code: 503, Body: neutrontest.Error("ServiceUnavailable", "busy")},
			},
			err:      "cannot list the networks to find the one carrying " + marker + ": Neutron 503 ServiceUnavailable: busy",
			requests: []string{"DELETE /networks/" + netID, scanNetworks},
		},
		"NoID": {
			reason: "An MR without an external name sends nothing: Observe looked for the marker and found nothing.",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			sc, seen := neutrontest.Serve(t, tc.replies)
			err := DeleteCreated(context.Background(), sc, Networks, owner(), tc.id)
			if diff := cmp.Diff(tc.err, neutrontest.Message(err)); diff != "" {
				t.Errorf("%s\nDeleteCreated(...): -want error, +got error:\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(tc.requests, *seen); diff != "" {
				t.Errorf("%s\nDeleteCreated(...): -want requests, +got requests:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestSweepTwins(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	settle := Settling{Within: 90 * time.Second, Now: func() time.Time { return now }}
	mg := func(extName, until string) *v1alpha1.ProviderConfig {
		o := owner()
		meta.SetExternalName(o, extName)
		if until != "" {
			meta.AddAnnotations(o, map[string]string{AnnotationTwinCheck: until})
		}
		return o
	}
	ownAndTwin := `{"networks": [{"id": "` + netID + `", "description": "` + marker + `"}, {"id": "late", "description": "` + marker + `"}, {"id": "theirs", "description": "x"}]}`
	type want struct {
		saved     bool
		err       string
		requests  []string
		twinCheck string
	}
	cases := map[string]struct {
		reason  string
		mg      *v1alpha1.ProviderConfig
		replies map[string]neutrontest.Reply
		want    want
	}{
		"NoCheck": {
			reason: "Without the annotation nothing is sent: one request per poll at rest.",
			mg:     mg(netID, ""),
		},
		"NotCreatedYet": {
			reason: "Without an external name there is nothing to keep; nothing is sent.",
			mg:     mg("", "2026-12-01T12:05:00Z"),
			want:   want{twinCheck: "2026-12-01T12:05:00Z"},
		},
		"TwinDeletedStillChecking": {
			reason: "Within the check a twin carrying the marker is deleted, the MR's own and others' objects are left, and the check goes on.",
			mg:     mg(netID, "2026-12-01T12:05:00Z"),
			replies: map[string]neutrontest.Reply{
				scanNetworks:            {Code: 200, Body: ownAndTwin},
				"DELETE /networks/late": {Code: 204},
			},
			want: want{requests: []string{scanNetworks, "DELETE /networks/late"}, twinCheck: "2026-12-01T12:05:00Z"},
		},
		"CheckEnded": {
			reason: "The first look after the check's time removes the annotation, and says to save the MR.",
			mg:     mg(netID, "2026-12-01T11:59:59Z"),
			replies: map[string]neutrontest.Reply{
				scanNetworks: {Code: 200, Body: `{"networks": [{"id": "` + netID + `", "description": "` + marker + `"}]}`},
			},
			want: want{saved: true, requests: []string{scanNetworks}},
		},
		"LongOver": {
			reason: "An annotation more than an hour past its time (an MR the reconciler did not write back) is removed without a list.",
			mg:     mg(netID, "2026-12-01T10:59:59Z"),
			want:   want{saved: true},
		},
		"Unreadable": {
			reason: "An annotation that is no time is removed without a list.",
			mg:     mg(netID, "soon"),
			want:   want{saved: true},
		},
		"ScanFails": {
			reason: "A failed list is an error, and the check stays for the next Observe.",
			mg:     mg(netID, "2026-12-01T11:59:59Z"),
			replies: map[string]neutrontest.Reply{
				scanNetworks: {Code: 503, Body: neutrontest.Error("ServiceUnavailable", "busy")},
			},
			want: want{err: "cannot list the networks to find the one carrying " + marker + ": Neutron 503 ServiceUnavailable: busy",
				requests: []string{scanNetworks}, twinCheck: "2026-12-01T11:59:59Z"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			sc, seen := neutrontest.Serve(t, tc.replies)
			saved, err := SweepTwins(context.Background(), sc, Networks, tc.mg, settle)
			got := want{saved: saved, err: neutrontest.Message(err), requests: *seen, twinCheck: tc.mg.GetAnnotations()[AnnotationTwinCheck]}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(want{})); diff != "" {
				t.Errorf("%s\nSweepTwins(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestReplaceTags(t *testing.T) {
	cases := map[string]struct {
		reason   string
		tags     []string
		reply    neutrontest.Reply
		err      string
		requests []string
	}{
		"Replaced": {
			reason:   "One PUT of the whole tag set to the tag API of the object's collection.",
			tags:     []string{"a", "b"},
			reply:    neutrontest.Reply{Code: 200, Body: `{"tags": ["a", "b"]}`},
			requests: []string{`PUT /ports/` + netID + `/tags {"tags":["a","b"]}`},
		},
		"RemoveAll": {
			reason:   "An empty set removes every tag.",
			tags:     []string{},
			reply:    neutrontest.Reply{Code: 200, Body: `{"tags": []}`},
			requests: []string{`PUT /ports/` + netID + `/tags {"tags":[]}`},
		},
		"Fails": {
			reason:   "A failed PUT names the kind and ID, with Neutron's status, type and message.",
			tags:     []string{"a"},
			reply:    neutrontest.Reply{Code: 500, Body: neutrontest.Error("HTTPInternalServerError", "boom")},
			err:      "cannot set the tags of Neutron port " + netID + ": Neutron 500 HTTPInternalServerError: boom",
			requests: []string{`PUT /ports/` + netID + `/tags {"tags":["a"]}`},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			sc, seen := neutrontest.Serve(t, map[string]neutrontest.Reply{"PUT /ports/" + netID + "/tags": tc.reply})
			err := ReplaceTags(context.Background(), sc, Ports, netID, tc.tags)
			if diff := cmp.Diff(tc.err, neutrontest.Message(err)); diff != "" {
				t.Errorf("%s\nReplaceTags(...): -want error, +got error:\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(tc.requests, *seen); diff != "" {
				t.Errorf("%s\nReplaceTags(...): -want requests, +got requests:\n%s", tc.reason, diff)
			}
		})
	}
}
