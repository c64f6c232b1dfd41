//go:build integration

package integration

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/controller"
	"github.com/crossplane/crossplane-runtime/v2/pkg/feature"
	"github.com/crossplane/crossplane-runtime/v2/pkg/logging"
	"github.com/crossplane/crossplane-runtime/v2/pkg/ratelimiter"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	gwv1alpha1 "github.com/ipsecgw/provider-ipsec/apis/cluster/gateway/v1alpha1"
	"github.com/ipsecgw/provider-ipsec/apis/cluster/v1alpha1"
	"github.com/ipsecgw/provider-ipsec/internal/clients/openstack"
	"github.com/ipsecgw/provider-ipsec/internal/contract"
	ipsecctrl "github.com/ipsecgw/provider-ipsec/internal/controller"
	"github.com/ipsecgw/provider-ipsec/internal/controller/gateway"
	"github.com/ipsecgw/provider-ipsec/internal/controller/mrsetup"
	"github.com/ipsecgw/provider-ipsec/internal/render"
	"github.com/ipsecgw/provider-ipsec/internal/workload"
)

// psk is the tunnel's pre-shared key; no ConfigMap, status, event or log
// line may contain it, plain or hex-encoded.
const psk = "Gw-PSK-value-2f9c{#}"

// syncBuffer is a log sink safe for the manager's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// allControllers sets up every controller of the provider.
func allControllers(d ipsecctrl.Dependencies) func(ctrl.Manager, controller.Options) error {
	return func(mgr ctrl.Manager, o controller.Options) error { return ipsecctrl.Setup(mgr, o, d) }
}

// gatewayControllers are asMain with OpenStack clients of no test cloud:
// for the Gateways, whose controllers do not call OpenStack.
func gatewayControllers() func(ctrl.Manager, controller.Options) error {
	return asMain(openstack.NewClients())
}

// asMain sets up every controller as the provider's main does: clients
// (and the Gateways) read ProviderConfigs from the manager's cache and
// their credentials Secrets through the informers of
// mrsetup.WatchCredentials.
func asMain(clients *openstack.Clients) func(ctrl.Manager, controller.Options) error {
	return func(mgr ctrl.Manager, o controller.Options) error {
		creds, err := mrsetup.WatchCredentials(mgr)
		if err != nil {
			return err
		}
		clients.Credentials = creds
		return ipsecctrl.Setup(mgr, o, ipsecctrl.Dependencies{OpenStack: clients})
	}
}

// pskSecret is the Secret "vpn-psk" in ns with the PSK of tunnel branch-a
// (psk).
func pskSecret(ns string) *corev1.Secret {
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "vpn-psk"}, StringData: map[string]string{"branch-a": psk}}
}

// unusedProviderConfig is a ProviderConfig name whose credentials nothing
// reads (Secret "unused", cloud "none"): a Gateway's.
func unusedProviderConfig(name string) *v1alpha1.ProviderConfig {
	return &v1alpha1.ProviderConfig{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: v1alpha1.ProviderConfigSpec{
		Credentials: v1alpha1.OpenStackCredentials{SecretRef: secretRef("unused", "clouds.yaml"), Cloud: "none"},
	}}
}

// defaultProviderConfig creates the unusedProviderConfig "default" unless
// another test did.
func defaultProviderConfig(t *testing.T) {
	t.Helper()
	if err := kube.Create(context.Background(), unusedProviderConfig("default")); err != nil && !kerrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
}

// startProvider runs the controllers setup adds against envtest until t
// ends, polling every second and logging at debug level into the returned
// buffer.
func startProvider(t *testing.T, setup func(ctrl.Manager, controller.Options) error) *syncBuffer {
	t.Helper()
	return startProviderPolling(t, setup, time.Second)
}

// startProviderPolling is startProvider with the poll interval poll (the
// provider's --poll).
func startProviderPolling(t *testing.T, setup func(ctrl.Manager, controller.Options) error, poll time.Duration) *syncBuffer {
	t.Helper()
	return startProviderWith(t, setup, poll, cfg)
}

// startProviderWith is startProviderPolling talking to the API server
// through c (cfg with a transport of the test's).
func startProviderWith(t *testing.T, setup func(ctrl.Manager, controller.Options) error, poll time.Duration, c *rest.Config) *syncBuffer {
	t.Helper()
	logs := &syncBuffer{}
	zl := zap.New(zap.UseDevMode(true), zap.WriteTo(logs))
	ctrl.SetLogger(zl)
	mgr, err := ctrl.NewManager(c, ctrl.Options{
		Scheme:                 kube.Scheme(),
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Logger:                 zl,
		// Each test runs its own manager with the same controllers.
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
	})
	if err != nil {
		t.Fatal(err)
	}
	o := controller.Options{
		Logger:                  logging.NewLogrLogger(zl),
		PollInterval:            poll,
		MaxConcurrentReconciles: 2,
		GlobalRateLimiter:       ratelimiter.NewGlobal(100),
		Features:                &feature.Flags{},
	}
	o.Features.Enable(feature.EnableBetaManagementPolicies)
	if err := setup(mgr, o); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("manager: %v", err)
		}
		if l := logs.String(); t.Failed() {
			t.Logf("provider log (last 8 KiB):\n%s", l[max(0, len(l)-8192):])
		}
	})
	return logs
}

// eventually retries check every 200 ms until it returns nil or timeout
// passes, then fails t with check's last error.
func eventually(t *testing.T, timeout time.Duration, what string, check func() error) {
	t.Helper()
	var err error
	for deadline := time.Now().Add(timeout); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if err = check(); err == nil {
			return
		}
	}
	t.Fatalf("%s: not within %s: %v", what, timeout, err)
}

func create(t *testing.T, objs ...client.Object) {
	t.Helper()
	for _, o := range objs {
		if err := kube.Create(context.Background(), o); err != nil {
			t.Fatalf("create %T %s: %v", o, o.GetName(), err)
		}
	}
}

func gatewaySpec(ns string) gwv1alpha1.GatewayParameters {
	target := gwv1alpha1.IPv4("10.96.0.20")
	return gwv1alpha1.GatewayParameters{
		Namespace: ns,
		GatewayConfig: gwv1alpha1.GatewayConfig{
			Endpoint: gwv1alpha1.Endpoint{
				PrivateAddress: "10.20.0.10", PrefixLength: 24, Gateway: "10.20.0.1",
				MACAddress: "fa:16:3e:00:00:0a", LocalID: "203.0.113.10",
			},
			Tunnels: []gwv1alpha1.Tunnel{{
				Name: "branch-a", Peer: gwv1alpha1.Peer{Address: "198.51.100.7"}, IKEVersion: 2,
				IKEProposals: []string{"aes256-sha256-modp2048"}, ESPProposals: []string{"aes256gcm16"},
				PreSharedKeySecretRef: &xpv2.LocalSecretKeySelector{LocalSecretReference: xpv2.LocalSecretReference{Name: "vpn-psk"}, Key: "branch-a"},
				TrafficSelectors:      []gwv1alpha1.TrafficSelector{{Local: "100.64.0.0/24", Remote: "192.168.10.0/24"}},
			}},
			Exposures: []gwv1alpha1.Exposure{{
				Name: "web", InsideAddress: "100.64.0.10", Port: 443,
				Target: gwv1alpha1.ExposureTarget{Address: &target, Port: 8443},
			}},
		}}
}

func condition(gw *gwv1alpha1.Gateway, ct xpv2.ConditionType) xpv2.Condition {
	return gw.Status.GetCondition(ct)
}

// TestGatewayLifecycle drives a Gateway through create, edit, drift,
// pre-stage and delete against a real API server, with the provider's
// controllers running, and checks that the PSK leaks nowhere.
func TestGatewayLifecycle(t *testing.T) {
	ctx := context.Background()
	logs := startProvider(t, gatewayControllers())
	ns := "tenant-gw"
	create(t,
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}},
		pskSecret(ns),
		unusedProviderConfig("default"),
	)
	gw := &gwv1alpha1.Gateway{ObjectMeta: metav1.ObjectMeta{Name: "gw1"}, Spec: gwv1alpha1.GatewaySpec{ForProvider: gatewaySpec(ns)}}
	create(t, gw)

	names := workload.NamesOf("gw1")
	key := func(name string) client.ObjectKey { return client.ObjectKey{Namespace: ns, Name: name} }
	cm, dep, sec := &corev1.ConfigMap{}, &appsv1.Deployment{}, &corev1.Secret{}
	eventually(t, 30*time.Second, "the Gateway's objects are created and it is rendered", func() error {
		if err := kube.Get(ctx, key(names.Config), cm); err != nil {
			return err
		}
		if err := kube.Get(ctx, key(names.Gateway), dep); err != nil {
			return err
		}
		if err := kube.Get(ctx, client.ObjectKeyFromObject(gw), gw); err != nil {
			return err
		}
		if c := condition(gw, gwv1alpha1.TypeConfigRendered); c.Status != corev1.ConditionTrue {
			return fmt.Errorf("ConfigRendered %s: %s", c.Status, c.Message)
		}
		return nil
	})
	if err := kube.Get(ctx, key(names.Secrets), sec); err != nil {
		t.Fatal(err)
	}
	for _, o := range []client.Object{&unstructured.Unstructured{Object: map[string]any{"apiVersion": "k8s.cni.cncf.io/v1", "kind": "NetworkAttachmentDefinition"}},
		&corev1.ServiceAccount{}} {
		if err := kube.Get(ctx, key(names.Gateway), o); err != nil {
			t.Errorf("%T %s: %v", o, names.Gateway, err)
		}
	}
	if !strings.Contains(cm.Data[contract.KeySwanctlConf], "remote_addrs = 198.51.100.7") {
		t.Errorf("ConfigMap swanctl.conf lacks the peer:\n%s", cm.Data[contract.KeySwanctlConf])
	}
	if !strings.Contains(cm.Data[contract.KeyNATRules], "dnat to 10.96.0.20:8443") {
		t.Errorf("ConfigMap nat.nft lacks the exposure:\n%s", cm.Data[contract.KeyNATRules])
	}
	if !strings.Contains(string(sec.Data[contract.KeySecrets]), "0x"+hex.EncodeToString([]byte(psk))) {
		t.Errorf("the Secret does not hold the hex-encoded PSK")
	}
	if got, want := gw.Status.AtProvider.ConfigHash, loadedHash(cm); got != want {
		t.Errorf("status.atProvider.configHash %q, want the hash of the ConfigMap's files %q", got, want)
	}
	if h := dep.Spec.Template.Annotations[workload.AnnotationStartHash]; h == "" {
		t.Errorf("the pod template has no %s", workload.AnnotationStartHash)
	}
	if h, ok := dep.Spec.Template.Annotations[workload.AnnotationHash]; ok {
		t.Errorf("the pod template carries %s %q: every tunnel change would replace the pod", workload.AnnotationHash, h)
	}
	if *dep.Spec.Replicas != 1 || dep.Spec.Strategy.Type != appsv1.RecreateDeploymentStrategyType {
		t.Errorf("Deployment replicas %d strategy %s, want 1 Recreate", *dep.Spec.Replicas, dep.Spec.Strategy.Type)
	}

	// Editing a tunnel updates the ConfigMap and the config hash in status,
	// and leaves the pod template as it is: the agent reloads it live.
	template, generation := dep.Spec.Template.DeepCopy(), dep.Generation
	samePod := func(what string) {
		t.Helper()
		if err := kube.Get(ctx, key(names.Gateway), dep); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(template, &dep.Spec.Template); diff != "" || dep.Generation != generation {
			t.Errorf("%s changed the pod template (generation %d -> %d): the gateway pod would be replaced; -before, +after:\n%s",
				what, generation, dep.Generation, diff)
		}
	}
	hash := gw.Status.AtProvider.ConfigHash
	if err := kube.Get(ctx, client.ObjectKeyFromObject(gw), gw); err != nil {
		t.Fatal(err)
	}
	gw.Spec.ForProvider.Tunnels[0].DPD.Action = "clear"
	if err := kube.Update(ctx, gw); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "an edited tunnel reaches the ConfigMap and status", func() error {
		if err := kube.Get(ctx, key(names.Config), cm); err != nil {
			return err
		}
		if !strings.Contains(cm.Data[contract.KeySwanctlConf], "dpd_action = clear") {
			return fmt.Errorf("swanctl.conf has no dpd_action = clear")
		}
		if err := kube.Get(ctx, client.ObjectKeyFromObject(gw), gw); err != nil {
			return err
		}
		if h := gw.Status.AtProvider.ConfigHash; h == hash || h != loadedHash(cm) {
			return fmt.Errorf("status.atProvider.configHash %s, was %s, the ConfigMap's %s", h, hash, loadedHash(cm))
		}
		return nil
	})
	samePod("a tunnel edit")

	// A rotated PSK reaches the gateway's Secret; neither the config hash,
	// which leaves secrets out, nor the pod template changes.
	hash = gw.Status.AtProvider.ConfigHash
	pskSecret := &corev1.Secret{}
	if err := kube.Get(ctx, key("vpn-psk"), pskSecret); err != nil {
		t.Fatal(err)
	}
	pskSecret.Data["branch-a"] = []byte(psk + "-rotated")
	if err := kube.Update(ctx, pskSecret); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "a rotated PSK reaches the gateway's Secret", func() error {
		if err := kube.Get(ctx, key(names.Secrets), sec); err != nil {
			return err
		}
		if !strings.Contains(string(sec.Data[contract.KeySecrets]), "0x"+hex.EncodeToString([]byte(psk+"-rotated"))) {
			return fmt.Errorf("the gateway's Secret still has the old PSK")
		}
		return nil
	})
	if err := kube.Get(ctx, client.ObjectKeyFromObject(gw), gw); err != nil {
		t.Fatal(err)
	}
	if got := gw.Status.AtProvider.ConfigHash; got != hash {
		t.Errorf("a PSK rotation changed the config hash %s -> %s: the hash must not depend on secrets", hash, got)
	}
	samePod("a PSK rotation")

	// A pod of the gateway whose agent reported that it resets arp_ignore:
	// its image reaches status and the attachment's arp_ignore, and no pod
	// is replaced for it; an agent image not seen so loses it.
	image := gw.Spec.ForProvider.Images.Agent
	create(t, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "gw1-pod", Labels: workload.Labels("gw1")},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: workload.ContainerAgent, Image: image}}},
	})
	silentReport := []byte(`{"data":{"` + contract.KeySilentStart + `":"gw1-pod"}}`)
	if err := kube.Patch(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: names.Status}}, client.RawPatch(types.MergePatchType, silentReport)); err != nil {
		t.Fatal(err)
	}
	silent := func(want bool, what string) {
		t.Helper()
		eventually(t, 30*time.Second, what, func() error {
			nad := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "k8s.cni.cncf.io/v1", "kind": "NetworkAttachmentDefinition"}}
			if err := kube.Get(ctx, key(names.Gateway), nad); err != nil {
				return err
			}
			cfg, _, _ := unstructured.NestedString(nad.Object, "spec", "config")
			if got := strings.Contains(cfg, `"net.ipv4.conf.net1.arp_ignore":"8"`); got != want {
				return fmt.Errorf("arp_ignore 8 in the NAD %v, want %v: %s", got, want, cfg)
			}
			if err := kube.Get(ctx, client.ObjectKeyFromObject(gw), gw); err != nil {
				return err
			}
			if got := gw.Status.AtProvider.SilentStartImage; got != image {
				return fmt.Errorf("status.atProvider.silentStartImage %q, want the reporting pod's agent image %q", got, image)
			}
			return nil
		})
	}
	silent(true, "the reported agent image makes the attachment's net1 silent")
	samePod("the silent start")
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := kube.Get(ctx, client.ObjectKeyFromObject(gw), gw); err != nil {
			return err
		}
		gw.Spec.ForProvider.Images.Agent = "older/gateway:v0.0.9"
		return kube.Update(ctx, gw)
	}); err != nil {
		t.Fatal(err)
	}
	silent(false, "an agent image never seen to reset arp_ignore leaves the attachment's net1 answering")

	// What charon reads only at start, the strongswan.conf fragment of
	// data plane Libipsec, replaces the pod.
	gw.Spec.ForProvider.DataPlane = gwv1alpha1.DataPlaneLibipsec
	if err := kube.Update(ctx, gw); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "a data plane change reaches the pod template's start hash", func() error {
		if err := kube.Get(ctx, key(names.Gateway), dep); err != nil {
			return err
		}
		if h := dep.Spec.Template.Annotations[workload.AnnotationStartHash]; h == template.Annotations[workload.AnnotationStartHash] {
			return fmt.Errorf("the pod template still has the start hash %s", h)
		}
		return nil
	})

	// The agent's tunnel reports reach status and events; the provider's
	// own applies leave the agent's data alone.
	report := func(state, lastError string) {
		t.Helper()
		b, _ := json.Marshal([]gwv1alpha1.TunnelStatus{{Name: "branch-a", IKEState: state, LastError: lastError,
			ChildSAs: []gwv1alpha1.ChildSAStatus{{Name: "branch-a-5f0c1e2d", State: "INSTALLED", BytesIn: 840, BytesOut: 840}},
			Up:       state == "ESTABLISHED"}})
		eventually(t, 10*time.Second, "the agent writes its status", func() error {
			st := &corev1.ConfigMap{}
			if err := kube.Get(ctx, key(names.Status), st); err != nil {
				return err
			}
			st.Data = map[string]string{contract.KeyTunnels: string(b)}
			return kube.Update(ctx, st)
		})
	}
	// The agent's report counts only while a gateway pod is ready; envtest
	// runs no pods, so the test sets the Deployment's status as the
	// Deployment controller would.
	readyPods := func(n int32) {
		t.Helper()
		eventually(t, 10*time.Second, fmt.Sprintf("the Deployment's status says %d ready", n), func() error {
			if err := kube.Get(ctx, key(names.Gateway), dep); err != nil {
				return err
			}
			dep.Status.Replicas, dep.Status.ReadyReplicas, dep.Status.AvailableReplicas = n, n, n
			return kube.Status().Update(ctx, dep)
		})
	}
	readyPods(1)
	report("ESTABLISHED", "")
	eventually(t, 30*time.Second, "an established tunnel shows in status and as a TunnelUp event", func() error {
		if err := kube.Get(ctx, client.ObjectKeyFromObject(gw), gw); err != nil {
			return err
		}
		if gw.Status.AtProvider.TunnelsUp != "1/1" || len(gw.Status.AtProvider.Tunnels) != 1 || gw.Status.AtProvider.Tunnels[0].ChildSAs[0].BytesIn != 840 {
			return fmt.Errorf("tunnelsUp %q tunnels %+v", gw.Status.AtProvider.TunnelsUp, gw.Status.AtProvider.Tunnels)
		}
		return gatewayEvent(gw, "TunnelUp", "Tunnel branch-a is up")
	})
	report("DOWN", "AUTHENTICATION_FAILED")
	eventually(t, 30*time.Second, "a tunnel going down shows as a TunnelDown warning naming charon's error", func() error {
		if err := kube.Get(ctx, client.ObjectKeyFromObject(gw), gw); err != nil {
			return err
		}
		if gw.Status.AtProvider.TunnelsUp != "0/1" {
			return fmt.Errorf("tunnelsUp %q", gw.Status.AtProvider.TunnelsUp)
		}
		return gatewayEvent(gw, "TunnelDown", "Tunnel branch-a is down: IKE SA DOWN, last error AUTHENTICATION_FAILED")
	})
	// No ready pod: the agent's last report (up) no longer counts.
	report("ESTABLISHED", "")
	readyPods(0)
	eventually(t, 30*time.Second, "without a ready pod every tunnel is DOWN, whatever the agent last wrote", func() error {
		if err := kube.Get(ctx, client.ObjectKeyFromObject(gw), gw); err != nil {
			return err
		}
		if a := gw.Status.AtProvider; a.TunnelsUp != "0/1" || len(a.Tunnels) != 1 || a.Tunnels[0].IKEState != "DOWN" || a.BytesIn != 0 {
			return fmt.Errorf("tunnelsUp %q tunnels %+v bytes in %d", a.TunnelsUp, a.Tunnels, a.BytesIn)
		}
		return nil
	})

	// An object deleted by hand comes back.
	if err := kube.Delete(ctx, cm); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "a ConfigMap deleted by hand comes back", func() error {
		return kube.Get(ctx, key(names.Config), &corev1.ConfigMap{})
	})

	// Once in place, the objects are up to date with what the provider
	// applies: no field the API server defaulted, no field of another
	// manager (the agent's status, the Deployment controller's annotation)
	// counts as drift.
	settled(t, logs, gw.Name)

	// A hand edit of any field the provider owns, in any of the objects,
	// is drift and is corrected by the next poll; an edit of a field it
	// does not own (a label of someone else's) stays.
	for _, tc := range []struct {
		what      string
		obj       client.Object
		edit      func(client.Object)
		corrected func(client.Object) error
	}{
		{
			what: "a NetworkPolicy turned from ingress to egress by hand (which admits all ingress)",
			obj:  &networkingv1.NetworkPolicy{},
			edit: func(o client.Object) {
				o.(*networkingv1.NetworkPolicy).Spec.PolicyTypes = []networkingv1.PolicyType{networkingv1.PolicyTypeEgress}
			},
			corrected: func(o client.Object) error {
				if pt := o.(*networkingv1.NetworkPolicy).Spec.PolicyTypes; !cmp.Equal(pt, []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}) {
					return fmt.Errorf("policy types %v", pt)
				}
				return nil
			},
		},
		{
			what: "a Role widened by hand",
			obj:  &rbacv1.Role{},
			edit: func(o client.Object) {
				r := o.(*rbacv1.Role)
				r.Rules = append(r.Rules, rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"list"}})
			},
			corrected: func(o client.Object) error {
				if rs := o.(*rbacv1.Role).Rules; len(rs) != 4 {
					return fmt.Errorf("rules %+v", rs)
				}
				return nil
			},
		},
		{
			what: "a ServiceAccount's label changed by hand, beside a label of someone else's",
			obj:  &corev1.ServiceAccount{},
			edit: func(o client.Object) {
				o.GetLabels()[workload.LabelGateway] = "other"
				o.GetLabels()["team"] = "blue"
			},
			corrected: func(o client.Object) error {
				if l := o.GetLabels(); l[workload.LabelGateway] != "gw1" || l["team"] != "blue" {
					return fmt.Errorf("labels %v", l)
				}
				return nil
			},
		},
	} {
		eventually(t, 10*time.Second, "edit: "+tc.what, func() error {
			if err := kube.Get(ctx, key(names.Gateway), tc.obj); err != nil {
				return err
			}
			tc.edit(tc.obj)
			return kube.Update(ctx, tc.obj)
		})
		eventually(t, 30*time.Second, tc.what+" is corrected", func() error {
			if err := kube.Get(ctx, key(names.Gateway), tc.obj); err != nil {
				return err
			}
			return tc.corrected(tc.obj)
		})
	}

	// Pre-stage: active false keeps everything but runs 0 replicas.
	if err := kube.Get(ctx, client.ObjectKeyFromObject(gw), gw); err != nil {
		t.Fatal(err)
	}
	gw.Spec.ForProvider.Active = ptr.To(false)
	if err := kube.Update(ctx, gw); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "active false scales the Deployment to 0 and says pre-staged", func() error {
		if err := kube.Get(ctx, key(names.Gateway), dep); err != nil {
			return err
		}
		if *dep.Spec.Replicas != 0 {
			return fmt.Errorf("replicas %d", *dep.Spec.Replicas)
		}
		if err := kube.Get(ctx, client.ObjectKeyFromObject(gw), gw); err != nil {
			return err
		}
		if c := condition(gw, gwv1alpha1.TypeDeploymentReady); c.Reason != gwv1alpha1.ReasonPreStaged {
			return fmt.Errorf("DeploymentReady reason %q", c.Reason)
		}
		return nil
	})

	// The PSK is in no ConfigMap, status, event or log line.
	assertNoPSK(t, ns, gw, logs)

	// Delete removes every object and the Gateway.
	if err := kube.Delete(ctx, gw); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "deleting the Gateway removes its objects", func() error {
		nad := &unstructured.Unstructured{}
		nad.SetGroupVersionKind(workload.NADKind)
		for _, o := range []client.Object{&corev1.ConfigMap{}, &corev1.Secret{}, &appsv1.Deployment{}, &corev1.ServiceAccount{},
			&rbacv1.Role{}, &rbacv1.RoleBinding{}, &networkingv1.NetworkPolicy{}, nad} {
			name := objectName(names, o)
			if err := kube.Get(ctx, key(name), o); !kerrors.IsNotFound(err) {
				return fmt.Errorf("%T %s still exists (err %w)", o, name, err)
			}
		}
		left := &gwv1alpha1.Gateway{}
		if err := kube.Get(ctx, client.ObjectKeyFromObject(gw), left); !kerrors.IsNotFound(err) {
			return fmt.Errorf("the Gateway still exists (err %w, finalizers %v, conditions %+v)", err, left.Finalizers, left.Status.Conditions)
		}
		return nil
	})
	if err := kube.Get(ctx, key("vpn-psk"), &corev1.Secret{}); err != nil {
		t.Errorf("deleting the Gateway touched the tenant's PSK Secret: %v", err)
	}
}

// settled fails t unless, within 20 s, three polls in a row (startProvider
// polls every second) find no drift in the objects of the Gateway named
// name: else the provider would update them poll after poll.
func settled(t *testing.T, logs *syncBuffer, name string) {
	t.Helper()
	request := fmt.Sprintf(`"request": {"name":%q}`, name)
	eventually(t, 20*time.Second, "three polls in a row find no drift", func() error {
		mark := len(logs.String())
		time.Sleep(3 * time.Second)
		for _, l := range strings.Split(logs.String()[mark:], "\n") {
			if strings.Contains(l, "External resource differs from desired state") && strings.Contains(l, request) {
				return fmt.Errorf("drift found: %s", l)
			}
		}
		return nil
	})
}

// rendered returns the files and objects the provider renders for gw, with
// the PSK of gatewaySpec's tunnel, as it would apply them.
func rendered(t *testing.T, gw *gwv1alpha1.Gateway) (*render.Files, *workload.Objects) {
	t.Helper()
	f, err := render.Render(render.Input{Spec: gw.Spec.ForProvider, PSKs: map[string][]byte{"branch-a": []byte(psk)}})
	if err != nil {
		t.Fatal(err)
	}
	objs, err := workload.Build(gw, f)
	if err != nil {
		t.Fatal(err)
	}
	return f, objs
}

// olderProviderObjects returns the typed objects a provider before apply
// configurations applied for objs: each apply configuration decoded into
// its kind, without the defaults the provider now applies itself (the
// container ports' protocol, the field selectors' API version).
func olderProviderObjects(t *testing.T, objs *workload.Objects) []client.Object {
	t.Helper()
	out := []client.Object{objs.NetworkAttachment}
	for _, c := range []struct {
		ac  any
		obj client.Object
	}{
		{objs.Config, &corev1.ConfigMap{}}, {objs.Secrets, &corev1.Secret{}}, {objs.Status, &corev1.ConfigMap{}},
		{objs.ServiceAccount, &corev1.ServiceAccount{}}, {objs.Role, &rbacv1.Role{}}, {objs.RoleBinding, &rbacv1.RoleBinding{}},
		{objs.NetworkPolicy, &networkingv1.NetworkPolicy{}}, {objs.Deployment, &appsv1.Deployment{}},
	} {
		b, err := json.Marshal(c.ac)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, c.obj); err != nil {
			t.Fatal(err)
		}
		out = append(out, c.obj)
	}
	d := out[len(out)-1].(*appsv1.Deployment)
	for i := range d.Spec.Template.Spec.Containers {
		c := &d.Spec.Template.Spec.Containers[i]
		for j := range c.Ports {
			c.Ports[j].Protocol = ""
		}
		for _, e := range c.Env {
			if e.ValueFrom != nil && e.ValueFrom.FieldRef != nil {
				e.ValueFrom.FieldRef.APIVersion = ""
			}
		}
	}
	return out
}

// loadedHash is contract.ConfigHash of the files in cm, the gateway's
// ConfigMap: what status.atProvider.configHash must say for it.
func loadedHash(cm *corev1.ConfigMap) string {
	return contract.ConfigHash([]byte(cm.Data[contract.KeySwanctlConf]), []byte(cm.Data[contract.KeyNATRules]), []byte(cm.Data[contract.KeyStrongSwanConf]), []byte(cm.Data[contract.KeyXFRMInterfaces]))
}

// gatewayEvent finds an event of gw with reason and a message holding msg.
func gatewayEvent(gw client.Object, reason, msg string) error {
	events := &corev1.EventList{}
	if err := kube.List(context.Background(), events); err != nil {
		return err
	}
	for _, e := range events.Items {
		if e.InvolvedObject.UID == gw.GetUID() && e.Reason == reason && strings.Contains(e.Message, msg) {
			return nil
		}
	}
	return fmt.Errorf("no %s event %q on the Gateway", reason, msg)
}

// assertNoPSK fails t if the PSK, plain or hex, is in any ConfigMap of ns,
// the Gateway's status, any event, or the provider's logs.
func assertNoPSK(t *testing.T, ns string, gw *gwv1alpha1.Gateway, logs *syncBuffer) {
	t.Helper()
	ctx := context.Background()
	leaks := func(where, s string) {
		if strings.Contains(s, psk) || strings.Contains(s, hex.EncodeToString([]byte(psk))) {
			t.Errorf("the PSK appears in %s", where)
		}
	}
	cms := &corev1.ConfigMapList{}
	if err := kube.List(ctx, cms, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	for _, cm := range cms.Items {
		b, _ := json.Marshal(cm)
		leaks("ConfigMap "+cm.Name, string(b))
	}
	b, _ := json.Marshal(gw.Status)
	leaks("the Gateway's status", string(b))
	events := &corev1.EventList{}
	if err := kube.List(ctx, events); err != nil {
		t.Fatal(err)
	}
	for _, e := range events.Items {
		leaks("event "+e.Name, e.Message)
	}
	leaks("the provider's logs", logs.String())
	if len(logs.String()) == 0 {
		t.Errorf("the provider logged nothing: the log check proves nothing")
	}
}

// TestGatewayMissingPSK proves a Gateway whose PSK Secret is missing says
// so in ConfigRendered and Synced, naming the Secret, and creates nothing.
func TestGatewayMissingPSK(t *testing.T) {
	ctx := context.Background()
	startProvider(t, gatewayControllers())
	ns := "tenant-nopsk"
	create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	defaultProviderConfig(t)
	gw := &gwv1alpha1.Gateway{ObjectMeta: metav1.ObjectMeta{Name: "gw-nopsk"}, Spec: gwv1alpha1.GatewaySpec{ForProvider: gatewaySpec(ns)}}
	create(t, gw)
	t.Cleanup(func() { _ = kube.Delete(context.Background(), gw) })
	want := "Secret tenant-nopsk/vpn-psk with the pre-shared key of tunnel branch-a does not exist: create it or fix the secretRef"
	eventually(t, 30*time.Second, "ConfigRendered and Synced name the missing Secret", func() error {
		if err := kube.Get(ctx, client.ObjectKeyFromObject(gw), gw); err != nil {
			return err
		}
		c := condition(gw, gwv1alpha1.TypeConfigRendered)
		if c.Status != corev1.ConditionFalse || c.Reason != gwv1alpha1.ReasonMissingSecret || c.Message != want {
			return fmt.Errorf("ConfigRendered = %s/%s %q", c.Status, c.Reason, c.Message)
		}
		if s := condition(gw, xpv2.TypeSynced); s.Status != corev1.ConditionFalse || !strings.Contains(s.Message, want) {
			return fmt.Errorf("Synced = %s %q", s.Status, s.Message)
		}
		return nil
	})
	if err := kube.Get(ctx, client.ObjectKey{Namespace: ns, Name: "gw-nopsk"}, &appsv1.Deployment{}); !kerrors.IsNotFound(err) {
		t.Errorf("a Deployment exists for a Gateway that cannot render (err %v)", err)
	}
}

// TestGatewayWarnings proves the advisories reach a Gateway that renders
// and syncs: an IKEv1 tunnel offering modp1024 is deployed (ConfigRendered),
// its status.atProvider.warnings name both findings by field, and a
// ConfigAdvisory Warning event says each; a PSK with a trailing newline is
// refused at reconcile, naming the field, without the key in the message.
func TestGatewayWarnings(t *testing.T) {
	ctx := context.Background()
	startProvider(t, gatewayControllers())
	ns := "tenant-warnings"
	create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}},
		pskSecret(ns))
	defaultProviderConfig(t)
	spec := gatewaySpec(ns)
	spec.Tunnels[0].IKEVersion = 1
	spec.Tunnels[0].IKEProposals = []string{"aes256-sha256-modp1024"}
	gw := &gwv1alpha1.Gateway{ObjectMeta: metav1.ObjectMeta{Name: "gw-warnings"}, Spec: gwv1alpha1.GatewaySpec{ForProvider: spec}}
	create(t, gw)
	t.Cleanup(func() { _ = kube.Delete(context.Background(), gw) })
	want := []string{
		"tunnels[branch-a].ikeVersion: IKEv1 is deprecated",
		"tunnels[branch-a].ikeProposals[0]: modp1024 is a weak DH group",
	}
	eventually(t, 30*time.Second, "the Gateway renders with its warnings in status and events", func() error {
		if err := kube.Get(ctx, client.ObjectKeyFromObject(gw), gw); err != nil {
			return err
		}
		if c := condition(gw, gwv1alpha1.TypeConfigRendered); c.Status != corev1.ConditionTrue {
			return fmt.Errorf("ConfigRendered %s: %s", c.Status, c.Message)
		}
		if got := gw.Status.AtProvider.Warnings; len(got) != len(want) {
			return fmt.Errorf("status.atProvider.warnings %q, want %d", got, len(want))
		}
		for i, w := range want {
			if !strings.HasPrefix(gw.Status.AtProvider.Warnings[i], w) {
				return fmt.Errorf("warnings[%d] %q, want it to start with %q", i, gw.Status.AtProvider.Warnings[i], w)
			}
			if err := gatewayEvent(gw, "ConfigAdvisory", w); err != nil {
				return err
			}
		}
		return nil
	})

	sec := &corev1.Secret{}
	if err := kube.Get(ctx, client.ObjectKey{Namespace: ns, Name: "vpn-psk"}, sec); err != nil {
		t.Fatal(err)
	}
	sec.Data["branch-a"] = []byte(psk + "\n")
	if err := kube.Update(ctx, sec); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "a PSK with a trailing newline is refused, naming the field", func() error {
		if err := kube.Get(ctx, client.ObjectKeyFromObject(gw), gw); err != nil {
			return err
		}
		c := condition(gw, gwv1alpha1.TypeConfigRendered)
		if c.Status != corev1.ConditionFalse || !strings.Contains(c.Message, "tunnels[branch-a].preSharedKeySecretRef: the pre-shared key contains a line break") {
			return fmt.Errorf("ConfigRendered %s: %s", c.Status, c.Message)
		}
		if strings.Contains(c.Message, psk) {
			t.Fatalf("the condition's message holds the PSK")
		}
		return nil
	})
}

// objectName is the name of a gateway's object o among names: its
// ConfigMap's, its Secret's, or the gateway's own that the rest share.
func objectName(names workload.Names, o client.Object) string {
	switch o.(type) {
	case *corev1.ConfigMap:
		return names.Config
	case *corev1.Secret:
		return names.Secrets
	}
	return names.Gateway
}

// TestGatewayUpgradeKeepsPod proves a provider upgrade replaces no gateway
// pod: a Deployment the provider applied before start hashes (its pod
// template carries the config hash of the whole configuration, and no start
// hash) keeps its pod template, field for field, when this provider takes
// it over, and through a tunnel edit, which reaches the ConfigMap only. A
// change the pod reads at start (the data plane's strongswan.conf fragment)
// replaces the pod anyway, and the template then takes the new form. The
// older provider's objects are this provider's with the pod template as it
// rendered it (workload.LegacyTemplate, proven byte for byte against the
// older provider's goldens in internal/workload).
func TestGatewayUpgradeKeepsPod(t *testing.T) {
	ctx := context.Background()
	ns := "tenant-upgrade"
	create(t,
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}},
		pskSecret(ns),
	)
	defaultProviderConfig(t)
	// The older provider's CRD defaulted the images; this one late-initializes
	// them from its --gateway-image, so the Gateway names them as the older
	// one's did.
	spec := gatewaySpec(ns)
	spec.Images = gwv1alpha1.Images{StrongSwan: gateway.DefaultImage, Agent: gateway.DefaultImage}
	gw := &gwv1alpha1.Gateway{ObjectMeta: metav1.ObjectMeta{Name: "gw-upgrade"}, Spec: gwv1alpha1.GatewaySpec{ForProvider: spec}}
	create(t, gw)
	t.Cleanup(func() { _ = kube.Delete(context.Background(), gw) })

	// What the older provider applied, with its field manager: typed
	// objects, whose empty structs it sent too, without the defaults this
	// provider applies itself.
	f, objs := rendered(t, gw)
	workload.LegacyTemplate(objs.Deployment, f.Hash)
	names := workload.NamesOf(gw.Name)
	key := client.ObjectKey{Namespace: ns, Name: names.Gateway}
	for _, o := range olderProviderObjects(t, objs) {
		//nolint:staticcheck // as the older provider applied them
		if err := kube.Patch(ctx, o, client.Apply, client.FieldOwner("provider-ipsec"), client.ForceOwnership); err != nil {
			t.Fatalf("apply %T %s as the older provider: %v", o, o.GetName(), err)
		}
	}
	dep := &appsv1.Deployment{}
	if err := kube.Get(ctx, key, dep); err != nil {
		t.Fatal(err)
	}
	// The pod template alone decides whether the pod is replaced (the
	// ReplicaSet's pod-template-hash); the Deployment's own annotations,
	// which this provider adds to, bump its generation but replace no pod.
	template := dep.Spec.Template.DeepCopy()
	samePod := func(what string) {
		t.Helper()
		if err := kube.Get(ctx, key, dep); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(template, &dep.Spec.Template); diff != "" {
			t.Errorf("%s changed the older provider's pod template: the gateway pod would be replaced; -before, +after:\n%s", what, diff)
		}
	}

	startProvider(t, gatewayControllers())
	synced := func(what string, check func() error) {
		t.Helper()
		eventually(t, 30*time.Second, what, func() error {
			if err := kube.Get(ctx, client.ObjectKeyFromObject(gw), gw); err != nil {
				return err
			}
			if c := condition(gw, gwv1alpha1.TypeConfigRendered); c.Status != corev1.ConditionTrue {
				return fmt.Errorf("ConfigRendered %s: %s", c.Status, c.Message)
			}
			if c := condition(gw, xpv2.TypeSynced); c.Status != corev1.ConditionTrue {
				return fmt.Errorf("Synced %s: %s", c.Status, c.Message)
			}
			return check()
		})
	}
	synced("the provider takes the older provider's objects over", func() error { return nil })
	// A few polls (1 s) more: each one would have applied a changed template.
	time.Sleep(3 * time.Second)
	samePod("taking the older provider's Deployment over")

	// edit changes the Gateway as a user would, again on a conflict with the
	// provider's own writes (its status at each poll).
	edit := func(change func()) {
		t.Helper()
		if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			if err := kube.Get(ctx, client.ObjectKeyFromObject(gw), gw); err != nil {
				return err
			}
			change()
			return kube.Update(ctx, gw)
		}); err != nil {
			t.Fatal(err)
		}
	}
	edit(func() {
		gw.Spec.ForProvider.Tunnels[0].TrafficSelectors = append(gw.Spec.ForProvider.Tunnels[0].TrafficSelectors,
			gwv1alpha1.TrafficSelector{Local: "100.64.1.0/24", Remote: "192.168.11.0/24"})
	})
	cm := &corev1.ConfigMap{}
	synced("a tunnel edit reaches the ConfigMap", func() error {
		if err := kube.Get(ctx, client.ObjectKey{Namespace: ns, Name: names.Config}, cm); err != nil {
			return err
		}
		if !strings.Contains(cm.Data[contract.KeySwanctlConf], "192.168.11.0/24") {
			return fmt.Errorf("swanctl.conf lacks the new subnet pair")
		}
		if gw.Status.AtProvider.ConfigHash != loadedHash(cm) {
			return fmt.Errorf("status.atProvider.configHash %s, the ConfigMap's %s", gw.Status.AtProvider.ConfigHash, loadedHash(cm))
		}
		return nil
	})
	time.Sleep(3 * time.Second)
	samePod("a tunnel edit")

	edit(func() { gw.Spec.ForProvider.DataPlane = gwv1alpha1.DataPlaneLibipsec })
	synced("a data plane change gives the pod template the new form", func() error {
		if err := kube.Get(ctx, key, dep); err != nil {
			return err
		}
		a := dep.Spec.Template.Annotations
		if _, legacy := a[workload.AnnotationHash]; legacy || a[workload.AnnotationStartHash] == "" {
			return fmt.Errorf("pod template annotations %v, want a start hash and no %s", a, workload.AnnotationHash)
		}
		return nil
	})
}
