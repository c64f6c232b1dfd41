package openstack

import (
	"context"
	"testing"

	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	"github.com/google/go-cmp/cmp"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/networks"

	"github.com/ipsecgw/provider-ipsec/internal/clients/openstack/neutrontest"
)

const netID = "a1b2c3d4-0000-4000-8000-000000000001"

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
			reason:  "An object Neutron no longer has (404) does not exist, and is no error.",
			extName: netID,
			replies: map[string]neutrontest.Reply{"GET /networks/" + netID: {Code: 404, Body: neutrontest.Error("NetworkNotFound", "Network could not be found.")}},
			want:    want{extName: netID, requests: []string{"GET /networks/" + netID}},
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
				findKey("networks", "tenant "+marker): {Code: 200, Body: `{"networks": [{"id": "` + netID + `", "description": "tenant ` + marker + `"}]}`},
				"GET /networks/" + netID:              found,
			},
			want: want{exists: true, adopted: true, name: "tenant", extName: netID,
				requests: []string{findKey("networks", "tenant "+marker), "GET /networks/" + netID}},
		},
		"NotCreated": {
			reason: "Without an external name and without a marked object there is nothing, and nothing more is sent.",
			replies: map[string]neutrontest.Reply{
				findKey("networks", "tenant "+marker): {Code: 200, Body: `{"networks": []}`},
			},
			want: want{requests: []string{findKey("networks", "tenant "+marker)}},
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
			exists, adopted, err := GetOrAdopt(context.Background(), sc, Networks, mg, "tenant", Settling{}, n)
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
