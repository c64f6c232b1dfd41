package clients

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/crossplane/crossplane-runtime/v2/pkg/test"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// psk is in the fixtures only to prove that no error carries a value.
const psk = "pr3-shared-hunter2"

func TestSecretKey(t *testing.T) {
	sel := xpv2.SecretKeySelector{SecretReference: xpv2.SecretReference{Namespace: "tenant-a", Name: "branch-a-psk"}, Key: "psk"}
	secret := func(data map[string]string) client.Reader {
		return &test.MockClient{MockGet: func(_ context.Context, _ client.ObjectKey, obj client.Object) error {
			s := obj.(*corev1.Secret)
			s.Data = map[string][]byte{}
			for k, v := range data {
				s.Data[k] = []byte(v)
			}
			return nil
		}}
	}
	type want struct {
		value string
		err   string
		// absent: the error unwraps to the API server's NotFound.
		absent bool
	}
	cases := map[string]struct {
		reason string
		c      client.Reader
		want   want
	}{
		"Present": {
			reason: "The key's value is returned.",
			c:      secret(map[string]string{"psk": psk}),
			want:   want{value: psk},
		},
		"KeyAbsent": {
			reason: "A key that is not there is named, with the names (not the values) of the keys that are.",
			c:      secret(map[string]string{"pks": psk, "ca.crt": psk}),
			want: want{err: `Secret tenant-a/branch-a-psk has no key "psk" holding the pre-shared key of tunnel branch-a ` +
				`(keys present: ca.crt, pks): add the key or fix secretRef.key`},
		},
		"KeyEmpty": {
			reason: "A key that is there with an empty value is said to be empty, not absent (issue 29: 'has no key \"empty\" … (keys present: empty, …)').",
			c:      secret(map[string]string{"psk": "", "other": psk}),
			want: want{err: `Secret tenant-a/branch-a-psk has the key "psk" for the pre-shared key of tunnel branch-a, but its value is empty: ` +
				`write the pre-shared key of tunnel branch-a into it or fix secretRef.key`},
		},
		"NoKeys": {
			reason: "A Secret without data says so.",
			c:      secret(nil),
			want: want{err: `Secret tenant-a/branch-a-psk has no key "psk" holding the pre-shared key of tunnel branch-a ` +
				`(keys present: none): add the key or fix secretRef.key`},
		},
		"SecretAbsent": {
			reason: "A Secret that does not exist is named, and the error is the API server's NotFound underneath.",
			c:      &test.MockClient{MockGet: test.NewMockGetFn(kerrors.NewNotFound(schema.GroupResource{Resource: "secrets"}, "branch-a-psk"))},
			want:   want{err: "Secret tenant-a/branch-a-psk with the pre-shared key of tunnel branch-a does not exist: create it or fix the secretRef", absent: true},
		},
		"GetFails": {
			reason: "Any other failure to read the Secret is wrapped naming it.",
			c:      &test.MockClient{MockGet: test.NewMockGetFn(errors.New("boom"))},
			want:   want{err: "cannot get Secret tenant-a/branch-a-psk with the pre-shared key of tunnel branch-a: boom"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := SecretKey(context.Background(), tc.c, sel, "pre-shared key of tunnel branch-a")
			gotErr := ""
			if err != nil {
				gotErr = err.Error()
			}
			if diff := cmp.Diff(tc.want.err, gotErr); diff != "" {
				t.Errorf("%s\nSecretKey(...): -want error, +got error:\n%s", tc.reason, diff)
			}
			if strings.Contains(gotErr, psk) {
				t.Errorf("%s\nSecretKey(...): the error carries a Secret's value: %s", tc.reason, gotErr)
			}
			if diff := cmp.Diff(tc.want.value, string(got)); diff != "" {
				t.Errorf("%s\nSecretKey(...): -want value, +got value:\n%s", tc.reason, diff)
			}
			if got := kerrors.IsNotFound(err); got != tc.want.absent {
				t.Errorf("%s\nkerrors.IsNotFound(SecretKey(...)'s error) = %t, want %t", tc.reason, got, tc.want.absent)
			}
		})
	}
}
