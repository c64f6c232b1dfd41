package mrsetup

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"
	"github.com/google/go-cmp/cmp"
	"github.com/gophercloud/gophercloud/v2"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/ipsecgw/provider-ipsec/apis/cluster/networking/v1alpha1"
	"github.com/ipsecgw/provider-ipsec/internal/clients/openstack"
)

func TestBackoff(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	held := func(d time.Duration) error {
		return fmt.Errorf("cannot get port p: %w", &openstack.HeldError{ProviderConfig: "pc", Hold: openstack.Hold{
			Service: openstack.ServiceNeutron, Answer: &openstack.APIError{Code: 429}, RetryAfter: "x", At: now, Until: now.Add(d)}})
	}
	backingOff := func(d time.Duration) error {
		return fmt.Errorf("cannot get port p: %w", &openstack.HeldError{ProviderConfig: "pc", Hold: openstack.Hold{
			Service: openstack.ServiceNeutron, Answer: &openstack.APIError{Code: 503}, Failures: 3, Since: now, At: now, Until: now.Add(d)}})
	}
	revisionConflict412 := fmt.Errorf("cannot associate floating IP 203.0.113.10 with port p: %w",
		&openstack.APIError{Code: http.StatusPreconditionFailed, Type: "RevisionNumberConstraintFailed"})
	absentPC := fmt.Errorf("cannot get ProviderConfig default: %w", kerrors.NewNotFound(schema.GroupResource{Group: "ipsecgw.io", Resource: "providerconfigs"}, "default"))
	// A failure is one reconcile's error (nil: none that says anything),
	// and the wait it gets: at least Min, at most Max.
	type failure struct {
		Err      error
		Min, Max time.Duration
	}
	cases := map[string]struct {
		reason   string
		failures []failure
		forget   int // index of the failure after which the item is forgotten; -1 never
	}{
		"Exponential": {
			reason: "Sustained errors back off from 1 s, doubling, to the ceiling of 1 min.",
			failures: []failure{
				{Err: errors.New("boom"), Min: time.Second, Max: time.Second},
				{Err: errors.New("boom"), Min: 2 * time.Second, Max: 2 * time.Second},
				{Min: 4 * time.Second, Max: 4 * time.Second},
				{Min: 8 * time.Second, Max: 8 * time.Second},
				{Min: 16 * time.Second, Max: 16 * time.Second},
				{Min: 32 * time.Second, Max: 32 * time.Second},
				{Min: time.Minute, Max: time.Minute},
				{Min: time.Minute, Max: time.Minute},
			},
			forget: -1,
		},
		"Waiting": {
			reason: "A state that waits for a person is retried within its bound however often it failed, while the backoff below the bound still grows.",
			failures: []failure{
				{Err: RetryWithin(errors.New("pre-stage"), 8*time.Second), Min: time.Second, Max: time.Second},
				{Min: 2 * time.Second, Max: 2 * time.Second},
				{Min: 4 * time.Second, Max: 4 * time.Second},
				{Min: 8 * time.Second, Max: 8 * time.Second},
				{Err: RetryWithin(errors.New("pre-stage"), 8*time.Second), Min: 8 * time.Second, Max: 8 * time.Second},
				{Err: RetryWithin(errors.New("pre-stage"), 8*time.Second), Min: 8 * time.Second, Max: 8 * time.Second},
				{Min: time.Minute, Max: time.Minute},
			},
			forget: -1,
		},
		"Absent": {
			reason: "A ProviderConfig or credentials Secret not yet applied (the API server's NotFound, wrapped) is retried within 10 s however often it failed; other errors back off as before.",
			failures: []failure{
				{Err: absentPC, Min: time.Second, Max: time.Second},
				{Min: 2 * time.Second, Max: 2 * time.Second},
				{Min: 4 * time.Second, Max: 4 * time.Second},
				{Min: 8 * time.Second, Max: 8 * time.Second},
				{Err: absentPC, Min: 10 * time.Second, Max: 10 * time.Second},
				{Err: RetryWithin(absentPC, 8*time.Second), Min: 8 * time.Second, Max: 8 * time.Second},
				{Err: errors.New("cannot authenticate"), Min: time.Minute, Max: time.Minute},
			},
			forget: -1,
		},
		"RevisionConflict": {
			reason: "Neutron's 412 (a write that lost a race with another change) is retried within 1 s however often the resource failed before, wrapped as the clients wrap it or as gophercloud returns it; other errors back off as before.",
			failures: []failure{
				{Err: RetryWithin(errors.New("pre-stage"), 6*time.Second), Min: time.Second, Max: time.Second},
				{Err: RetryWithin(errors.New("pre-stage"), 6*time.Second), Min: 2 * time.Second, Max: 2 * time.Second},
				{Err: RetryWithin(errors.New("pre-stage"), 6*time.Second), Min: 4 * time.Second, Max: 4 * time.Second},
				{Err: RetryWithin(errors.New("pre-stage"), 6*time.Second), Min: 6 * time.Second, Max: 6 * time.Second},
				{Err: revisionConflict412, Min: time.Second, Max: time.Second},
				{Err: gophercloud.ErrUnexpectedResponseCode{Actual: http.StatusPreconditionFailed}, Min: time.Second, Max: time.Second},
				{Err: errors.New("boom"), Min: time.Minute, Max: time.Minute},
			},
			forget: -1,
		},
		"Held": {
			reason: "An error of a Retry-After hold is retried not before the hold ends, spread by at most a tenth of it plus 1 s.",
			failures: []failure{
				{Err: held(30 * time.Second), Min: 30 * time.Second, Max: 34 * time.Second},
				{Err: held(2 * time.Minute), Min: 2 * time.Minute, Max: 2*time.Minute + 5*time.Second},
			},
			forget: -1,
		},
		"HeldShorterThanBackoff": {
			reason: "A hold or backoff of the Gate shorter than the resource's own backoff (grown while the Gate held it) is what the resource waits: it is back when the Gate lets requests through, not up to a minute later.",
			failures: []failure{
				{Min: time.Second, Max: time.Second}, {Min: 2 * time.Second, Max: 2 * time.Second},
				{Min: 4 * time.Second, Max: 4 * time.Second}, {Min: 8 * time.Second, Max: 8 * time.Second},
				{Min: 16 * time.Second, Max: 16 * time.Second}, {Min: 32 * time.Second, Max: 32 * time.Second},
				{Err: held(3 * time.Second), Min: 3 * time.Second, Max: 4300 * time.Millisecond},
				{Err: backingOff(15 * time.Second), Min: 15 * time.Second, Max: 17500 * time.Millisecond},
				{Err: backingOff(0), Min: 0, Max: time.Second},
				{Min: time.Minute, Max: time.Minute},
			},
			forget: -1,
		},
		"HeldWhileWaiting": {
			reason: "A hold outlasts the bound of a waiting state: nothing is sent before Neutron's time.",
			failures: []failure{
				{Err: RetryWithin(held(time.Minute), 8*time.Second), Min: time.Minute, Max: time.Minute + 5*time.Second},
			},
			forget: -1,
		},
		"Forget": {
			reason: "A success resets the backoff and drops the hint of the last error.",
			failures: []failure{
				{Err: errors.New("boom"), Min: time.Second, Max: time.Second},
				{Min: time.Second, Max: time.Second},
			},
			forget: 0,
		},
	}
	mg := &v1alpha1.Port{ObjectMeta: metav1.ObjectMeta{Name: "p"}}
	r := reconcile.Request{NamespacedName: types.NamespacedName{Name: "p"}}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			b := newBackoff()
			b.now = func() time.Time { return now }
			var got, want []string
			for i, f := range tc.failures {
				if tc.forget >= 0 && i == tc.forget+1 {
					// A hold noted by a reconcile that then succeeded
					// (a retried request) is dropped with the failures.
					b.note(mg, held(time.Minute))
					b.Forget(r)
				}
				b.note(mg, f.Err)
				d := b.When(r)
				want = append(want, fmt.Sprintf("failure %d: within [%s, %s]", i+1, f.Min, f.Max))
				if d >= f.Min && d <= f.Max {
					got = append(got, want[i])
				} else {
					got = append(got, fmt.Sprintf("failure %d: %s", i+1, d))
				}
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("%s\n-want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestNotingProgress(t *testing.T) {
	// The resource named "fails" fails its Create and Delete.
	result := func(mg *v1alpha1.Port) error {
		if mg.Name == "fails" {
			return errors.New("boom")
		}
		return nil
	}
	inner := managed.TypedExternalClientFns[*v1alpha1.Port]{
		CreateFn: func(_ context.Context, mg *v1alpha1.Port) (managed.ExternalCreation, error) {
			return managed.ExternalCreation{}, result(mg)
		},
		UpdateFn: func(context.Context, *v1alpha1.Port) (managed.ExternalUpdate, error) {
			return managed.ExternalUpdate{}, nil
		},
		DeleteFn: func(_ context.Context, mg *v1alpha1.Port) (managed.ExternalDelete, error) {
			return managed.ExternalDelete{}, result(mg)
		},
	}
	type call func(c *noting[*v1alpha1.Port], mg *v1alpha1.Port) error
	create := func(c *noting[*v1alpha1.Port], mg *v1alpha1.Port) error {
		_, err := c.Create(context.Background(), mg)
		return err
	}
	update := func(c *noting[*v1alpha1.Port], mg *v1alpha1.Port) error {
		_, err := c.Update(context.Background(), mg)
		return err
	}
	del := func(c *noting[*v1alpha1.Port], mg *v1alpha1.Port) error {
		_, err := c.Delete(context.Background(), mg)
		return err
	}
	cases := map[string]struct {
		reason string
		name   string
		call   call
		want   time.Duration
	}{
		"CreateSucceeded": {
			reason: "After a successful Create the requeue that looks at it comes in 1 s, however often the resource failed before.",
			name:   "ok", call: create, want: time.Second,
		},
		"DeleteSucceeded": {
			reason: "After a successful Delete the requeue that sees the object gone comes in 1 s.",
			name:   "ok", call: del, want: time.Second,
		},
		"CreateFailed": {
			reason: "A failed Create keeps the backoff: the seventh failure waits the 1 min ceiling.",
			name:   "fails", call: create, want: time.Minute,
		},
		"DeleteFailed": {
			reason: "A failed Delete keeps the backoff.",
			name:   "fails", call: del, want: time.Minute,
		},
		"UpdateSucceeded": {
			reason: "An Update is followed by a poll, which forgets the failures anyway; by itself it resets nothing.",
			name:   "ok", call: update, want: time.Minute,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			b := newBackoff()
			mg := &v1alpha1.Port{ObjectMeta: metav1.ObjectMeta{Name: tc.name}}
			r := requestOf(mg)
			for range 6 {
				b.When(r)
			}
			_ = tc.call(&noting[*v1alpha1.Port]{inner: &inner, b: b}, mg)
			if got := b.When(r); got != tc.want {
				t.Errorf("%s\nWhen after the call: got %s, want %s", tc.reason, got, tc.want)
			}
		})
	}
}
