package mrsetup

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/crossplane/crossplane-runtime/v2/pkg/controller"
	"github.com/crossplane/crossplane-runtime/v2/pkg/logging"
	"github.com/crossplane/crossplane-runtime/v2/pkg/test"
	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/manager"
)

// addRecorder is a manager that records what is added to it; anything else
// of it panics (nil embedded interface), so a gated setup that touched the
// manager before its gate opened would fail the test.
type addRecorder struct {
	manager.Manager
	added []manager.Runnable
}

func (m *addRecorder) Add(r manager.Runnable) error {
	m.added = append(m.added, r)
	return nil
}

// syncGate is a controller.Gate like crossplane-runtime's gate.Gate
// whose callbacks run before Register or Set returns, instead of in
// goroutines of their own, so that a test sees their effect at once.
type syncGate struct {
	ready map[schema.GroupVersionKind]bool
	fns   []gated
}

type gated struct {
	fn   func()
	gvks []schema.GroupVersionKind
}

func (g *syncGate) Register(fn func(), gvks ...schema.GroupVersionKind) {
	g.fns = append(g.fns, gated{fn: fn, gvks: gvks})
	g.release()
}

func (g *syncGate) Set(gvk schema.GroupVersionKind, ready bool) bool {
	if g.ready == nil {
		g.ready = map[schema.GroupVersionKind]bool{}
	}
	changed := g.ready[gvk] != ready
	g.ready[gvk] = ready
	g.release()
	return changed
}

// release runs and forgets every callback whose kinds are all ready.
func (g *syncGate) release() {
	g.fns = slices.DeleteFunc(g.fns, func(f gated) bool {
		for _, gvk := range f.gvks {
			if !g.ready[gvk] {
				return false
			}
		}
		f.fn()
		return true
	})
}

func TestGated(t *testing.T) {
	sg := schema.GroupVersionKind{Group: "networking.ipsecgw.io", Version: "v1alpha1", Kind: "SecurityGroup"}
	pc := schema.GroupVersionKind{Group: "ipsecgw.io", Version: "v1alpha1", Kind: "ProviderConfig"}
	pcu := schema.GroupVersionKind{Group: "ipsecgw.io", Version: "v1alpha1", Kind: "ProviderConfigUsage"}
	errSetup := errors.New("boom")
	type want struct {
		err error
		// runs is how often setup ran once every established kind was set.
		runs int
		// managerErr is the error of the runnable a failed setup added to
		// the manager; nil when none was added.
		managerErr error
	}
	cases := map[string]struct {
		reason      string
		noGate      bool
		gvks        []schema.GroupVersionKind
		established []schema.GroupVersionKind
		setupErr    error
		want        want
	}{
		"NoGate": {
			reason: "Options without a gate are a wiring error of the provider: refused, and setup never runs.",
			noGate: true,
			gvks:   []schema.GroupVersionKind{sg},
			want:   want{err: errors.New(errNoGate)},
		},
		"Inactive": {
			reason: "A kind whose CRD is not established (Crossplane installed it inactive) gets no controller.",
			gvks:   []schema.GroupVersionKind{sg},
		},
		"OtherKindEstablished": {
			reason: "Another kind's CRD does not start the controller.",
			gvks:   []schema.GroupVersionKind{sg}, established: []schema.GroupVersionKind{pc},
		},
		"Established": {
			reason: "Once its CRD is established, the controller is set up, once.",
			gvks:   []schema.GroupVersionKind{sg}, established: []schema.GroupVersionKind{sg},
			want: want{runs: 1},
		},
		"PartlyEstablished": {
			reason: "A controller that needs two kinds waits for both.",
			gvks:   []schema.GroupVersionKind{pc, pcu}, established: []schema.GroupVersionKind{pc},
		},
		"AllEstablished": {
			reason: "A controller that needs two kinds starts once both are established.",
			gvks:   []schema.GroupVersionKind{pc, pcu}, established: []schema.GroupVersionKind{pcu, pc},
			want: want{runs: 1},
		},
		"SetupFails": {
			reason: "A setup that fails adds a runnable returning its error, which stops the manager with it.",
			gvks:   []schema.GroupVersionKind{sg}, established: []schema.GroupVersionKind{sg},
			setupErr: errSetup,
			want: want{runs: 1, managerErr: fmt.Errorf("cannot set up the controller of %v: %w",
				[]schema.GroupVersionKind{sg}, errSetup)},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			mgr := &addRecorder{}
			o := controller.Options{Logger: logging.NewNopLogger()}
			g := &syncGate{}
			if !tc.noGate {
				o.Gate = g
			}
			runs := 0
			err := Gated(mgr, o, func() error { runs++; return tc.setupErr }, tc.gvks...)
			if diff := cmp.Diff(tc.want.err, err, test.EquateErrors()); diff != "" {
				t.Errorf("%s\nGated(): -want error, +got error:\n%s", tc.reason, diff)
			}
			for _, gvk := range tc.established {
				g.Set(gvk, true)
			}
			if runs != tc.want.runs {
				t.Errorf("%s\nsetup ran %d times, want %d", tc.reason, runs, tc.want.runs)
			}
			var managerErr error
			switch len(mgr.added) {
			case 0:
			case 1:
				managerErr = mgr.added[0].Start(context.Background())
			default:
				t.Fatalf("%s\n%d runnables added to the manager, want at most 1", tc.reason, len(mgr.added))
			}
			if diff := cmp.Diff(tc.want.managerErr, managerErr, test.EquateErrors()); diff != "" {
				t.Errorf("%s\nthe manager's runnable: -want error, +got error:\n%s", tc.reason, diff)
			}
		})
	}
}
