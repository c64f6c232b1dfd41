//go:build integration

package integration

import (
	"bytes"
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	gwv1alpha1 "github.com/ipsecgw/provider-ipsec/apis/cluster/gateway/v1alpha1"
	"github.com/ipsecgw/provider-ipsec/internal/agent/source"
	"github.com/ipsecgw/provider-ipsec/internal/contract"
	"github.com/ipsecgw/provider-ipsec/internal/workload"
)

// TestAgentSourceAPI runs the agent's configuration source with the gateway
// pod's identity (its ServiceAccount and the Role internal/workload gives
// it) against a real API server: until the API server delivered the
// gateway's ConfigMap and Secret it reads the mounted files; then the API's
// content, and an edit of the ConfigMap or the Secret reaches it within a
// second (logged), where the kubelet's volume sync takes up to a minute. A
// ServiceAccount without the Role reads the mounted files only.
func TestAgentSourceAPI(t *testing.T) {
	ctx := context.Background()
	ns := "tenant-source"
	gw := &gwv1alpha1.Gateway{ObjectMeta: metav1.ObjectMeta{Name: "gw-source"}, Spec: gwv1alpha1.GatewaySpec{ForProvider: gatewaySpec(ns)}}
	f, objs := rendered(t, gw)
	create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	n := workload.NamesOf(gw.Name)
	for _, o := range []runtime.ApplyConfiguration{objs.Config, objs.Secrets, objs.ServiceAccount, objs.Role, objs.RoleBinding} {
		if err := kube.Apply(ctx, o, client.FieldOwner("provider-ipsec"), client.ForceOwnership); err != nil {
			t.Fatal(err)
		}
	}
	// The mounted files: an older rendering, as a volume the kubelet has
	// not refreshed yet.
	dir := source.Dir{ConfigDir: filepath.Join(t.TempDir(), "config"), SecretsDir: filepath.Join(t.TempDir(), "secrets")}
	mount(t, dir.ConfigDir, map[string][]byte{contract.KeySwanctlConf: []byte("connections {\n}\n"), contract.KeyNATRules: f.NATRules})
	mount(t, dir.SecretsDir, map[string][]byte{contract.KeySecrets: []byte("secrets {\n}\n")})
	mounted, err := dir.Read()
	if err != nil {
		t.Fatal(err)
	}
	asPod := func(sa string) kubernetes.Interface {
		c := rest.CopyConfig(cfg)
		c.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:" + ns + ":" + sa}
		cs, err := kubernetes.NewForConfig(c)
		if err != nil {
			t.Fatal(err)
		}
		return cs
	}
	run := func(c kubernetes.Interface) *source.API {
		api := &source.API{Client: c, Namespace: ns, ConfigMap: n.Config, Secret: n.Secrets, Fallback: dir}
		rctx, cancel := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() { defer close(done); api.Run(rctx) }()
		t.Cleanup(func() { cancel(); <-done })
		return api
	}
	read := func(api *source.API) source.Files {
		got, err := api.Read()
		if err != nil {
			t.Fatal(err)
		}
		return got
	}

	// Without the Role (another ServiceAccount): the watches are refused,
	// the mounted files stay the source.
	create(t, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "other"}})
	refused := run(asPod("other"))
	time.Sleep(2 * source.Retry)
	if diff := cmp.Diff(mounted, read(refused)); diff != "" {
		t.Errorf("a source that cannot watch must read the mounted files: -mounted, +got:\n%s", diff)
	}

	api := run(asPod(n.Gateway))
	want := source.Files{SwanctlConf: f.SwanctlConf, NATRules: f.NATRules, Secrets: f.Secrets}
	eventually(t, 10*time.Second, "the source delivers the API server's ConfigMap and Secret", func() error {
		if diff := cmp.Diff(want, read(api)); diff != "" {
			return &diffError{diff}
		}
		return nil
	})
	if got := read(api).Hash(); got != f.Hash {
		t.Errorf("the API's files hash to %s, the rendering to %s: the agent would report another configuration", got, f.Hash)
	}

	// Edits reach the source within a second.
	cm, sec := &corev1.ConfigMap{}, &corev1.Secret{}
	if err := kube.Get(ctx, client.ObjectKey{Namespace: ns, Name: n.Config}, cm); err != nil {
		t.Fatal(err)
	}
	if err := kube.Get(ctx, client.ObjectKey{Namespace: ns, Name: n.Secrets}, sec); err != nil {
		t.Fatal(err)
	}
	for what, edit := range map[string]func() (client.Object, func(source.Files) bool){
		"ConfigMap": func() (client.Object, func(source.Files) bool) {
			cm.Data[contract.KeySwanctlConf] += "# edited\n"
			return cm, func(g source.Files) bool { return string(g.SwanctlConf) == cm.Data[contract.KeySwanctlConf] }
		},
		"Secret": func() (client.Object, func(source.Files) bool) {
			sec.Data[contract.KeySecrets] = append(sec.Data[contract.KeySecrets], "# edited\n"...)
			return sec, func(g source.Files) bool { return bytes.Equal(g.Secrets, sec.Data[contract.KeySecrets]) }
		},
	} {
		o, arrived := edit()
		// Drop a pending signal, so the one awaited is the edit's.
		select {
		case <-api.Changed():
		default:
		}
		start := time.Now()
		if err := kube.Update(ctx, o); err != nil {
			t.Fatal(err)
		}
		select {
		case <-api.Changed():
		case <-time.After(10 * time.Second):
			t.Fatalf("no change signalled 10 s after the %s's edit", what)
		}
		took := time.Since(start)
		if !arrived(read(api)) {
			t.Errorf("the %s's edit was signalled but Read does not return it", what)
		}
		t.Logf("the %s's edit reached the agent's source %s after its update", what, took.Round(time.Millisecond))
		// A watch event, not the kubelet's minute (docs/live-reload.md):
		// one event through the API server is milliseconds; a second is
		// what a loaded machine still keeps.
		if took > time.Second {
			t.Errorf("the %s's edit took %s to reach the source, want within a second", what, took)
		}
	}
}

// diffError is a cmp.Diff as an error.
type diffError struct{ diff string }

func (e *diffError) Error() string { return "-want, +got:\n" + e.diff }
