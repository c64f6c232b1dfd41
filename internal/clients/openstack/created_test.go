package openstack

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
	"github.com/gophercloud/gophercloud/v2/pagination"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ipsecgw/provider-ipsec/apis/cluster/v1alpha1"
	"github.com/ipsecgw/provider-ipsec/internal/clients/openstack/neutrontest"
)

func TestFindCreated(t *testing.T) {
	list := "GET /ports?tags=crossplane-uid-uid-1"
	cases := map[string]struct {
		reason string
		reply  neutrontest.Reply
		id     string
		err    string
	}{
		"None": {
			reason: "No object carrying the tag is no object and no error.",
			reply:  neutrontest.Reply{Code: 200, Body: `{"ports": []}`},
		},
		"One": {
			reason: "The one object carrying the tag is returned.",
			reply:  neutrontest.Reply{Code: 200, Body: `{"ports": [{"id": "p1"}]}`},
			id:     "p1",
		},
		"Two": {
			reason: "Two objects carrying the tag are an error naming both.",
			reply:  neutrontest.Reply{Code: 200, Body: `{"ports": [{"id": "p1"}, {"id": "p2"}]}`},
			err:    "2 Neutron ports carry its tag crossplane-uid-uid-1 (p1, p2); delete all but one by hand",
		},
		"ListFails": {
			reason: "A failed list carries Neutron's status, type and message.",
			reply:  neutrontest.Reply{Code: 503, Body: neutrontest.Error("ServiceUnavailable", "busy")},
			err:    "cannot list Neutron ports tagged crossplane-uid-uid-1: Neutron 503 ServiceUnavailable: busy",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			sc, _ := neutrontest.Serve(t, map[string]neutrontest.Reply{list: tc.reply})
			// Any object with a UID will do as the managed resource.
			mg := &v1alpha1.ProviderConfig{ObjectMeta: metav1.ObjectMeta{UID: "uid-1"}}
			p, err := FindCreated(context.Background(), mg, "ports",
				func(tag string) pagination.Pager { return ports.List(sc, ports.ListOpts{Tags: tag}) },
				ports.ExtractPortsInto, func(p *ports.Port) string { return p.ID })
			if diff := cmp.Diff(tc.err, neutrontest.Message(err)); diff != "" {
				t.Errorf("%s\nFindCreated(...): -want error, +got error:\n%s", tc.reason, diff)
			}
			id := ""
			if p != nil {
				id = p.ID
			}
			if diff := cmp.Diff(tc.id, id); diff != "" {
				t.Errorf("%s\nFindCreated(...): -want ID, +got ID:\n%s", tc.reason, diff)
			}
		})
	}
}
