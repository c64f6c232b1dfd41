package mrsetup

import (
	"errors"
	"testing"

	"github.com/crossplane/crossplane-runtime/v2/pkg/controller"
	"github.com/crossplane/crossplane-runtime/v2/pkg/logging"
	"github.com/crossplane/crossplane-runtime/v2/pkg/test"
	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/ipsecgw/provider-ipsec/internal/clients/openstack"
)

func TestKind(t *testing.T) {
	sg := schema.GroupVersionKind{Group: "networking.ipsecgw.io", Version: "v1alpha1", Kind: "SecurityGroup"}
	nsSG := schema.GroupVersionKind{Group: "networking.m.ipsecgw.io", Version: "v1alpha1", Kind: "SecurityGroup"}
	errSetup := errors.New("boom")
	d := Dependencies{OpenStack: openstack.NewClients(), GatewayImage: "gateway:v1"}
	type want struct {
		err error
		// ran are the controllers that ran, by their first kind's group.
		ran []string
	}
	cases := map[string]struct {
		reason      string
		gated       bool
		noGate      bool
		failing     string
		established []schema.GroupVersionKind
		want        want
	}{
		"Setup": {
			reason: "Every controller of the kind is set up, in order, with the dependencies.",
			want:   want{ran: []string{sg.Group, nsSG.Group}},
		},
		"SetupFails": {
			reason:  "The first controller that fails stops the kind's setup with its error.",
			failing: sg.Group,
			want:    want{err: errSetup, ran: []string{sg.Group}},
		},
		"GatedInactive": {
			reason: "Gated, no controller runs before its kind's CRD is established.",
			gated:  true,
		},
		"GatedOneEstablished": {
			reason:      "Gated, each controller waits for its own kinds only, and runs its own setup.",
			gated:       true,
			established: []schema.GroupVersionKind{sg},
			want:        want{ran: []string{sg.Group}},
		},
		"GatedNoGate": {
			reason: "Gated without a gate in the options is the provider's wiring error.",
			gated:  true,
			noGate: true,
			want:   want{err: errors.New(errNoGate)},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var ran []string
			controllerOf := func(gvk schema.GroupVersionKind) Controller {
				return Controller{GVKs: []schema.GroupVersionKind{gvk}, Setup: func(_ ctrl.Manager, _ controller.Options, got Dependencies) error {
					if got != d {
						t.Errorf("%s\nthe controller of %s got the dependencies %+v, want %+v", tc.reason, gvk, got, d)
					}
					ran = append(ran, gvk.Group)
					if gvk.Group == tc.failing {
						return errSetup
					}
					return nil
				}}
			}
			k := Kind{controllerOf(sg), controllerOf(nsSG)}
			mgr := &addRecorder{}
			o := controller.Options{Logger: logging.NewNopLogger()}
			g := &syncGate{}
			if !tc.noGate {
				o.Gate = g
			}
			var err error
			if tc.gated {
				err = k.SetupGated(mgr, o, d)
				for _, gvk := range tc.established {
					g.Set(gvk, true)
				}
			} else {
				err = k.Setup(mgr, o, d)
			}
			if diff := cmp.Diff(tc.want.err, err, test.EquateErrors()); diff != "" {
				t.Errorf("%s\n-want error, +got error:\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(tc.want.ran, ran); diff != "" {
				t.Errorf("%s\ncontrollers set up: -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}
