package mrsetup

import (
	"context"
	"errors"
	"fmt"
	"reflect"

	"github.com/crossplane/crossplane-runtime/v2/pkg/controller"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/manager"
)

// errNoGate is the error of a gated setup given options without a gate: the
// provider did not wire crossplane-runtime's CRD gate (cmd/provider).
const errNoGate = "cannot gate a controller's start: the controller options have no gate"

// Gated registers setup with o.Gate (crossplane-runtime's safe start), to
// run once every kind of gvks is served by an established CRD (as
// customresourcesgate reports them), so that a kind Crossplane has
// installed inactive (its ManagedResourceDefinition not activated, no CRD)
// gets no controller until it is activated. The error of a setup that
// fails stops mgr (a runnable that returns it), so that the provider exits
// with it instead of running without the controller, as it would have
// exited had setup run before mgr started. It returns an error only when o
// has no gate.
func Gated(mgr manager.Manager, o controller.Options, setup func() error, gvks ...schema.GroupVersionKind) error {
	if o.Gate == nil || reflect.ValueOf(o.Gate).IsNil() {
		return errors.New(errNoGate)
	}
	o.Gate.Register(func() {
		if err := setup(); err != nil {
			err = fmt.Errorf("cannot set up the controller of %v: %w", gvks, err)
			// Add fails only once mgr is stopping, when there is nothing
			// left to report the error to but the log.
			if aerr := mgr.Add(manager.RunnableFunc(func(context.Context) error { return err })); aerr != nil {
				o.Logger.Info("Cannot report a controller's failed setup", "error", err, "reason", aerr)
			}
		}
	}, gvks...)
	return nil
}
