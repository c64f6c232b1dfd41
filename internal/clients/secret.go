// Package clients reads what the provider's clients need from the cluster:
// Secret keys named by a ProviderConfig. Errors name the Secret and key and
// never carry a Secret's contents.
package clients

import (
	"context"
	"fmt"
	"slices"
	"strings"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
	corev1 "k8s.io/api/core/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// SecretKey returns the value of one key of a Secret. what says in a few
// words what the key should hold (for example "clouds.yaml") and is used in
// errors. It returns an error that names the Secret when the Secret cannot be
// read or does not exist (then one that unwraps to the API server's
// NotFound), one that names the missing key and lists the keys the Secret
// does have (their names, never their values) when the key is absent, and
// one that says the key is there but empty when it is.
func SecretKey(ctx context.Context, c client.Reader, sel xpv2.SecretKeySelector, what string) ([]byte, error) {
	s := &corev1.Secret{}
	nn := types.NamespacedName{Namespace: sel.Namespace, Name: sel.Name}
	if err := c.Get(ctx, nn, s); err != nil {
		if kerrors.IsNotFound(err) {
			return nil, &absent{msg: fmt.Sprintf("Secret %s with the %s does not exist: create it or fix the secretRef", nn, what), err: err}
		}
		return nil, fmt.Errorf("cannot get Secret %s with the %s: %w", nn, what, err)
	}
	v, ok := s.Data[sel.Key]
	if ok && len(v) == 0 {
		return nil, fmt.Errorf("Secret %s has the key %q for the %s, but its value is empty: write the %s into it or fix secretRef.key", //nolint:staticcheck // ST1005: it starts with the kind's name
			nn, sel.Key, what, what)
	}
	if !ok {
		keys := make([]string, 0, len(s.Data))
		for k := range s.Data {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		return nil, fmt.Errorf("Secret %s has no key %q holding the %s (keys present: %s): add the key or fix secretRef.key", //nolint:staticcheck // ST1005: it starts with the kind's name
			nn, sel.Key, what, orNone(strings.Join(keys, ", ")))
	}
	return v, nil
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// absent is the error of a Secret that does not exist: its message says
// what to do, and it unwraps to the API server's NotFound, so that the
// controllers can tell an object not yet applied.
type absent struct {
	msg string
	err error
}

func (a *absent) Error() string { return a.msg }

func (a *absent) Unwrap() error { return a.err }
