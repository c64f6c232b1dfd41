package source

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/ipsecgw/provider-ipsec/internal/workload"
)

// files is a Source of fixed Files.
type files Files

func (f files) Read() (Files, error)   { return Files(f), nil }
func (files) Changed() <-chan struct{} { return nil }

func TestAPI(t *testing.T) {
	mounted := files{SwanctlConf: []byte("mounted"), Secrets: []byte("mounted secrets")}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "gw-config"},
		Data: map[string]string{workload.KeySwanctlConf: "conf", workload.KeyNATRules: "nat"}}
	sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "gw-secrets"},
		Data: map[string][]byte{workload.KeySecrets: []byte("secrets")}}
	cases := map[string]struct {
		reason string
		objs   []*corev1.ConfigMap
		secret bool
		want   Files
	}{
		"Neither": {
			reason: "Until the API server delivered both objects the mounted files are read.",
			want:   Files(mounted),
		},
		"ConfigMapOnly": {
			reason: "The ConfigMap alone is not enough: its tunnels need the Secret's PSKs, which the volume may not have yet.",
			objs:   []*corev1.ConfigMap{cm},
			want:   Files(mounted),
		},
		"Both": {
			reason: "Once both arrived the API's content is read; an absent key is nil.",
			objs:   []*corev1.ConfigMap{cm},
			secret: true,
			want:   Files{SwanctlConf: []byte("conf"), NATRules: []byte("nat"), Secrets: []byte("secrets")},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			// The API server's watches, as the test feeds them.
			c := fake.NewClientset()
			watches := map[string]*watch.FakeWatcher{"configmaps": watch.NewFake(), "secrets": watch.NewFake()}
			c.PrependWatchReactor("*", func(action k8stesting.Action) (bool, watch.Interface, error) {
				return true, watches[action.GetResource().Resource], nil
			})
			a := &API{Client: c, Namespace: "ns", ConfigMap: "gw-config", Secret: "gw-secrets", Fallback: mounted}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan struct{})
			go func() { defer close(done); a.Run(ctx) }()
			defer func() { cancel(); <-done }()
			// One at a time: a signal not yet taken absorbs the next.
			signalled := func() {
				t.Helper()
				select {
				case <-a.Changed():
				case <-time.After(5 * time.Second):
					t.Fatal("no change signalled")
				}
			}
			for _, o := range tc.objs {
				watches["configmaps"].Add(o)
				signalled()
			}
			if tc.secret {
				watches["secrets"].Add(sec)
				signalled()
			}
			// A deleted object leaves the last content in place.
			watches["configmaps"].Delete(cm)
			got, err := a.Read()
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\nRead(): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestDir(t *testing.T) {
	d := Dir{ConfigDir: t.TempDir(), SecretsDir: t.TempDir()}
	write := func(dir, name, content string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := d.Read(); err == nil {
		t.Error("Read without swanctl.conf: no error")
	}
	write(d.ConfigDir, workload.KeySwanctlConf, "conf")
	write(d.SecretsDir, workload.KeySecrets, "secrets")
	got, err := d.Read()
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(Files{SwanctlConf: []byte("conf"), Secrets: []byte("secrets")}, got); diff != "" {
		t.Errorf("Read without nat.nft and strongswan.conf (nil): -want, +got:\n%s", diff)
	}
	write(d.ConfigDir, workload.KeyStrongSwanConf, "ss")
	if got, _ = d.Read(); string(got.StrongSwanConf) != "ss" {
		t.Errorf("Read: strongswan.conf %q, want ss (it counts in the hash)", got.StrongSwanConf)
	}
}
