package clients

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlfake "sigs.k8s.io/controller-runtime/pkg/client/fake"
)

func secret(name, v string) *corev1.Secret {
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "crossplane-system", Name: name}, Data: map[string][]byte{"k": []byte(v)}}
}

// reads counts the fake API server's reads of Secrets.
func reads(cs *fake.Clientset) int {
	n := 0
	for _, a := range cs.Actions() {
		if a.GetResource().Resource == "secrets" && (a.GetVerb() == "get" || a.GetVerb() == "list") {
			n++
		}
	}
	return n
}

// eventually polls get until want holds, for 5 s.
func eventually(t *testing.T, want func() bool) bool {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if want() {
			return true
		}
	}
	return false
}

func TestWatchedSecretsGet(t *testing.T) {
	creds := types.NamespacedName{Namespace: "crossplane-system", Name: "openstack-creds"}
	cases := map[string]struct {
		reason string
		// change acts on the API server after the first read.
		change func(t *testing.T, cs *fake.Clientset)
		// want is the value of key k at the second read; "" for NotFound.
		want string
	}{
		"Unchanged": {
			reason: "A second read is served from the informer with the same value.",
			change: func(*testing.T, *fake.Clientset) {},
			want:   "v1",
		},
		"Updated": {
			reason: "An update reaches the next read through the watch.",
			change: func(t *testing.T, cs *fake.Clientset) {
				if _, err := cs.CoreV1().Secrets(creds.Namespace).Update(context.Background(), secret(creds.Name, "v2"), metav1.UpdateOptions{}); err != nil {
					t.Fatal(err)
				}
			},
			want: "v2",
		},
		"Deleted": {
			reason: "A deleted Secret reads as NotFound.",
			change: func(t *testing.T, cs *fake.Clientset) {
				if err := cs.CoreV1().Secrets(creds.Namespace).Delete(context.Background(), creds.Name, metav1.DeleteOptions{}); err != nil {
					t.Fatal(err)
				}
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			cs := fake.NewClientset(secret(creds.Name, "v1"))
			w := NewWatchedSecrets(cs, nil)
			t.Cleanup(w.Stop)
			ctx := context.Background()
			got := &corev1.Secret{}
			if err := w.Get(ctx, creds, got); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff("v1", string(got.Data["k"])); diff != "" {
				t.Fatalf("first read: -want +got:\n%s", diff)
			}
			before := reads(cs)
			tc.change(t, cs)
			read := func() (string, error) {
				s := &corev1.Secret{}
				err := w.Get(ctx, creds, s)
				return string(s.Data["k"]), err
			}
			if !eventually(t, func() bool {
				v, err := read()
				if tc.want == "" {
					return kerrors.IsNotFound(err)
				}
				return err == nil && v == tc.want
			}) {
				v, err := read()
				t.Fatalf("%s\nsecond read: got %q, %v; want %q", tc.reason, v, err, tc.want)
			}
			if diff := cmp.Diff(before, reads(cs)); diff != "" {
				t.Errorf("%s\nAPI reads after the first read: -want +got:\n%s", tc.reason, diff)
			}
		})
	}
}

// TestWatchedSecretsAbsent: an absent Secret reads as NotFound and keeps
// no informer; made later, it is read.
func TestWatchedSecretsAbsent(t *testing.T) {
	cs := fake.NewClientset(secret("other", "x"))
	w := NewWatchedSecrets(cs, nil)
	t.Cleanup(w.Stop)
	ctx := context.Background()
	key := types.NamespacedName{Namespace: "crossplane-system", Name: "missing"}
	err := w.Get(ctx, key, &corev1.Secret{})
	if !kerrors.IsNotFound(err) {
		t.Errorf("Get of an absent Secret: got %v, want NotFound", err)
	}
	w.mu.Lock()
	informers := len(w.byName)
	w.mu.Unlock()
	if informers != 0 {
		t.Errorf("after the NotFound: %d informers, want 0", informers)
	}
	if _, err := cs.CoreV1().Secrets(key.Namespace).Create(ctx, secret(key.Name, "late"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	got := &corev1.Secret{}
	if err := w.Get(ctx, key, got); err != nil || string(got.Data["k"]) != "late" {
		t.Errorf("Get of the Secret made later: got %q, %v; want \"late\"", got.Data["k"], err)
	}
}

func TestWatchedSecretsListRefused(t *testing.T) {
	cs := fake.NewClientset()
	cs.PrependReactor("list", "secrets", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, kerrors.NewForbidden(corev1.Resource("secrets"), "", errors.New("RBAC says no"))
	})
	w := NewWatchedSecrets(cs, nil)
	w.SyncTimeout = 300 * time.Millisecond
	t.Cleanup(w.Stop)
	err := w.Get(context.Background(), types.NamespacedName{Namespace: "crossplane-system", Name: "openstack-creds"}, &corev1.Secret{})
	if err == nil || !strings.Contains(err.Error(), "crossplane-system/openstack-creds") || !strings.Contains(err.Error(), "RBAC says no") {
		t.Errorf("Get with list refused: got %v, want an error naming the Secret and carrying the API server's answer", err)
	}
}

func TestWatchedSecretsOtherKinds(t *testing.T) {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cm"}, Data: map[string]string{"a": "b"}}
	w := NewWatchedSecrets(fake.NewClientset(), ctrlfake.NewClientBuilder().WithObjects(cm).Build())
	t.Cleanup(w.Stop)
	got := &corev1.ConfigMap{}
	if err := w.Get(context.Background(), client.ObjectKeyFromObject(cm), got); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(cm.Data, got.Data); diff != "" {
		t.Errorf("a ConfigMap is read through Reader: -want +got:\n%s", diff)
	}
}
