package openstack

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"
	"github.com/crossplane/crossplane-runtime/v2/pkg/test"
	"github.com/google/go-cmp/cmp"
	"github.com/gophercloud/gophercloud/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	networkingv1alpha1 "github.com/ipsecgw/provider-ipsec/apis/cluster/networking/v1alpha1"
	"github.com/ipsecgw/provider-ipsec/internal/clients/openstack/neutrontest"
)

func TestCreateRecovery(t *testing.T) {
	past := time.Now().Add(-time.Minute).Truncate(time.Second)
	future := time.Now().Add(time.Hour).Truncate(time.Second)
	sg := func(pending, failed time.Time) *networkingv1alpha1.SecurityGroup {
		s := &networkingv1alpha1.SecurityGroup{ObjectMeta: metav1.ObjectMeta{Name: "gw", UID: uid}}
		if !pending.IsZero() {
			meta.SetExternalCreatePending(s, pending)
		}
		if !failed.IsZero() {
			meta.SetExternalCreateFailed(s, failed)
		}
		return s
	}
	type find struct {
		id    string
		known bool
		err   error
	}
	type want struct {
		err string
		// saved says whether the MR was written; extName, incomplete
		// and pending are what it then says.
		saved      bool
		extName    string
		incomplete bool
		pending    bool
		// asked says whether Neutron was asked at all.
		asked bool
	}
	cases := map[string]struct {
		reason string
		mg     *networkingv1alpha1.SecurityGroup
		find   find
		settle Settling
		want   want
	}{
		"NeverCreated": {
			reason: "An MR whose create never started is left alone, and Neutron is not asked.",
			mg:     sg(time.Time{}, time.Time{}),
			want:   want{},
		},
		"CreateFailed": {
			reason: "A create recorded as failed is complete: left alone, Neutron not asked.",
			mg:     sg(past, past.Add(time.Second)),
			want:   want{pending: true},
		},
		"Found": {
			reason: "The object an interrupted create made is adopted: its ID becomes the external name and the create is complete.",
			mg:     sg(past, time.Time{}),
			find:   find{id: "g1", known: true},
			want:   want{saved: true, extName: "g1", pending: true, asked: true},
		},
		"FoundClockAhead": {
			reason: "A pending time from a clock ahead of ours still ends complete.",
			mg:     sg(future, time.Time{}),
			find:   find{id: "g1", known: true},
			want:   want{saved: true, extName: "g1", pending: true, asked: true},
		},
		"ProvenAbsent": {
			reason: "When the marker proves no object was made, the pending annotation goes, as the guard asks a person to do when it is safe.",
			mg:     sg(past, time.Time{}),
			find:   find{known: true},
			want:   want{saved: true, asked: true},
		},
		"AbsentTooSoon": {
			reason: "A create sent 30 s ago may still be completing in Neutron (killed client, lost answer): absence is not concluded yet, the MR stays incomplete and the error says when the recovery looks again.",
			mg:     sg(past, time.Time{}),
			find:   find{known: true},
			settle: Settling{Within: 90 * time.Second, Now: func() time.Time { return past.Add(30 * time.Second) }},
			want: want{err: "gw: cannot conclude yet that the create attempted at " + past.UTC().Format(time.RFC3339) +
				" made no Neutron object: Neutron may complete a create request up to 1m30s after it was sent; looking again at " + past.Add(90*time.Second).UTC().Format(time.RFC3339), incomplete: true, pending: true, asked: true},
		},
		"AbsentSettled": {
			reason: "Once the create has settled, absence is proven and the pending annotation goes.",
			mg:     sg(past, time.Time{}),
			find:   find{known: true},
			settle: Settling{Within: 90 * time.Second, Now: func() time.Time { return past.Add(91 * time.Second) }},
			want:   want{saved: true, asked: true},
		},
		"Unknown": {
			reason: "When nothing can identify the object, the MR is left incomplete for crossplane-runtime's guard, not created again.",
			mg:     sg(past, time.Time{}),
			find:   find{},
			want:   want{incomplete: true, pending: true, asked: true},
		},
		"FindFails": {
			reason: "A failed look-up is an error naming the MR; the MR stays incomplete.",
			mg:     sg(past, time.Time{}),
			find:   find{err: errors.New("Neutron 503 ServiceUnavailable: busy")},
			want: want{err: "gw: cannot find out whether its interrupted create made a Neutron object: Neutron 503 ServiceUnavailable: busy",
				incomplete: true, pending: true, asked: true},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := want{}
			r := &CreateRecovery{
				Kube: &test.MockClient{MockUpdate: func(_ context.Context, obj client.Object, _ ...client.UpdateOption) error {
					got.saved = true
					return nil
				}},
				Network: func(context.Context, resource.Managed) (*gophercloud.ServiceClient, error) {
					return &gophercloud.ServiceClient{}, nil
				},
				Find: func(context.Context, *gophercloud.ServiceClient, resource.Managed) (string, bool, error) {
					got.asked = true
					return tc.find.id, tc.find.known, tc.find.err
				},
				Settling: tc.settle,
			}
			got.err = neutrontest.Message(r.Initialize(context.Background(), tc.mg))
			got.extName = meta.GetExternalName(tc.mg)
			got.incomplete = meta.ExternalCreateIncomplete(tc.mg)
			got.pending = !meta.GetExternalCreatePending(tc.mg).IsZero()
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(want{})); diff != "" {
				t.Errorf("%s\nInitialize(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}
