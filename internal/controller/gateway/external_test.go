package gateway

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/event"
	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"
	"github.com/crossplane/crossplane-runtime/v2/pkg/test"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/ipsecgw/provider-ipsec/apis/cluster/gateway/v1alpha1"
	"github.com/ipsecgw/provider-ipsec/internal/contract"
	"github.com/ipsecgw/provider-ipsec/internal/workload"
)

const (
	testNS  = "tenant-a"
	testPSK = "correct-horse-battery-staple"
	// handEdit is the field manager of a hand edit (kubectl edit's).
	handEdit = "kubectl-edit"
)

// testGateway returns a Gateway with one PSK tunnel and an exposure, whose
// objects run in testNS.
func testGateway() *v1alpha1.Gateway {
	target := v1alpha1.IPv4("10.96.0.20")
	return &v1alpha1.Gateway{
		ObjectMeta: metav1.ObjectMeta{Name: "vpn", UID: "uid-vpn"},
		Spec: v1alpha1.GatewaySpec{ForProvider: v1alpha1.GatewayParameters{
			Namespace: testNS,
			GatewayConfig: v1alpha1.GatewayConfig{
				Endpoint: v1alpha1.Endpoint{PrivateAddress: "10.20.0.10", PrefixLength: 24, Gateway: "10.20.0.1",
					MACAddress: "fa:16:3e:00:00:0a", LocalID: "203.0.113.10"},
				Images: v1alpha1.Images{StrongSwan: "gw:1", Agent: "gw:1"},
				Tunnels: []v1alpha1.Tunnel{{
					Name: "branch-a", Peer: v1alpha1.Peer{Address: "198.51.100.7"}, IKEVersion: 2,
					IKEProposals: []string{"aes256-sha256-modp2048"}, ESPProposals: []string{"aes256gcm16"},
					PreSharedKeySecretRef: &xpv2.LocalSecretKeySelector{LocalSecretReference: xpv2.LocalSecretReference{Name: "vpn-psk"}, Key: "branch-a"},
					TrafficSelectors:      []v1alpha1.TrafficSelector{{Local: "100.64.0.0/24", Remote: "192.168.10.0/24"}},
				}},
				Exposures: []v1alpha1.Exposure{{Name: "web", InsideAddress: "100.64.0.10", Port: 443,
					Target: v1alpha1.ExposureTarget{Address: &target, Port: 8443}}},
				ReverseExposures: []v1alpha1.ReverseExposure{{Name: "db", Protocol: "udp", ListenPort: 5353,
					ClientAddress: "192.168.10.5", ClientPort: 53, SourceAddress: "100.64.0.53"}},
			},
		}},
	}
}

// serviceExposure is gw with its exposure targeting the Service web.
func serviceExposure(gw *v1alpha1.Gateway) *v1alpha1.Gateway {
	gw.Spec.ForProvider.Exposures[0].Target = v1alpha1.ExposureTarget{ServiceName: ptr.To("web"), Port: 8443}
	return gw
}

// pskSecret is the tenant's Secret of testGateway's PSK.
func pskSecret() *corev1.Secret {
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: testNS, Name: "vpn-psk"}, Data: map[string][]byte{"branch-a": []byte(testPSK)}}
}

// newExternal is the external client of a Gateway reading PSKs from kube
// and running its objects in target, for one reconcile.
func newExternal(kube, target client.Client) *external {
	return &external{kube: &readOnce{Reader: kube}, target: target, live: &readOnce{Reader: target}, recorder: event.NewNopRecorder(), details: &detailHold{}, image: DefaultImage}
}

// created returns a target cluster holding gw's objects as the provider
// created them, and the kube cluster holding its PSK.
func created(t *testing.T, gw *v1alpha1.Gateway) (kube client.Client, target client.WithWatch) {
	t.Helper()
	kube = fake.NewClientBuilder().WithObjects(pskSecret()).Build()
	target = newTarget(nil)
	e := newExternal(kube, target)
	if _, err := e.Observe(context.Background(), gw.DeepCopy()); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Create(context.Background(), gw.DeepCopy()); err != nil {
		t.Fatal(err)
	}
	return kube, target
}

// edit reads the object of target named name into o, changes it with
// change and writes it back as manager does, with an update (as kubectl
// edit or a controller does).
func edit(t *testing.T, target client.Client, o client.Object, name, manager string, change func(client.Object)) {
	t.Helper()
	if err := target.Get(context.Background(), client.ObjectKey{Namespace: testNS, Name: name}, o); err != nil {
		t.Fatal(err)
	}
	change(o)
	if err := target.Update(context.Background(), o, client.FieldOwner(manager)); err != nil {
		t.Fatal(err)
	}
}

// reapply applies ac to target as the provider did before the Gateway
// changed.
func reapply(t *testing.T, target client.Client, ac runtime.ApplyConfiguration) {
	t.Helper()
	if err := target.Apply(context.Background(), ac, client.FieldOwner(fieldManager), client.ForceOwnership); err != nil {
		t.Fatal(err)
	}
}

// observation is what a test compares of an Observe.
type observation struct {
	Exists, UpToDate bool
	// Diff holds each of these and nothing of notIn.
	Diff []string
	// Rendered is the ConfigRendered condition's status.
	Rendered corev1.ConditionStatus
}

func TestObserve(t *testing.T) {
	n := workload.NamesOf("vpn")
	type args struct {
		gw *v1alpha1.Gateway
		// change edits the objects after the provider created them.
		change func(t *testing.T, target client.Client)
		// nothing leaves the target cluster empty.
		nothing bool
		// noPSK leaves the PSK Secret out.
		noPSK bool
		// services are the target cluster's Services.
		services []client.Object
	}
	cases := map[string]struct {
		reason string
		args   args
		want   observation
		notIn  []string
		err    error
	}{
		"NotCreated": {
			reason: "A Gateway without a Deployment does not exist yet: Create will apply its objects.",
			args:   args{gw: testGateway(), nothing: true},
			want:   observation{Rendered: corev1.ConditionUnknown},
		},
		"MissingPSK": {
			reason: "A PSK Secret that is missing is an error, and ConfigRendered=False says which.",
			args:   args{gw: testGateway(), nothing: true, noPSK: true},
			want:   observation{Rendered: corev1.ConditionFalse},
			err:    errors.New("any"),
		},
		"ServiceExposure": {
			reason: "An exposure of a Service renders with the Service's cluster IP.",
			args: args{gw: serviceExposure(testGateway()), nothing: true, services: []client.Object{&corev1.Service{
				ObjectMeta: metav1.ObjectMeta{Namespace: testNS, Name: "web"}, Spec: corev1.ServiceSpec{ClusterIP: "10.96.0.30"}}}},
			want: observation{Rendered: corev1.ConditionUnknown},
		},
		"MissingService": {
			reason: "An exposure of a Service that does not exist is an error, and ConfigRendered=False.",
			args:   args{gw: serviceExposure(testGateway()), nothing: true},
			want:   observation{Rendered: corev1.ConditionFalse},
			err:    errors.New("any"),
		},
		"MissingCertificate": {
			reason: "A certificate tunnel whose Secret is missing is an error, and ConfigRendered=False.",
			args: args{gw: func() *v1alpha1.Gateway {
				g := testGateway()
				g.Spec.ForProvider.Tunnels[0].PreSharedKeySecretRef = nil
				g.Spec.ForProvider.Tunnels[0].Certificate = &v1alpha1.CertificateAuth{SecretName: "vpn-tls", PeerCA: v1alpha1.CARef{ConfigMapName: ptr.To("ca")}}
				return g
			}(), nothing: true},
			want: observation{Rendered: corev1.ConditionFalse},
			err:  errors.New("any"),
		},
		"UpToDate": {
			reason: "Objects as the provider applied them are up to date: nothing the provider applies reads back otherwise.",
			args:   args{gw: testGateway()},
			want:   observation{Exists: true, UpToDate: true, Rendered: corev1.ConditionTrue},
		},
		"OthersFields": {
			reason: "Fields others own alone are not drift: the agent's status, a label of someone else's, the Deployment controller's annotation, a replica count nobody changed.",
			args: args{gw: testGateway(), change: func(t *testing.T, target client.Client) {
				edit(t, target, &corev1.ConfigMap{}, n.Status, "gateway-agent", func(o client.Object) {
					o.(*corev1.ConfigMap).Data = map[string]string{contract.KeyTunnels: "[]"}
				})
				edit(t, target, &corev1.ConfigMap{}, n.Config, handEdit, func(o client.Object) { o.GetLabels()["team"] = "blue" })
				edit(t, target, &appsv1.Deployment{}, n.Gateway, "kube-controller-manager", func(o client.Object) {
					o.SetAnnotations(map[string]string{"deployment.kubernetes.io/revision": "1"})
				})
			}},
			want: observation{Exists: true, UpToDate: true, Rendered: corev1.ConditionTrue},
		},
		"NetworkPolicyEdited": {
			reason: "A NetworkPolicy opened by hand is drift, named: its ingress rules are the provider's.",
			args: args{gw: testGateway(), change: func(t *testing.T, target client.Client) {
				edit(t, target, &networkingv1.NetworkPolicy{}, n.Gateway, handEdit, func(o client.Object) {
					np := o.(*networkingv1.NetworkPolicy)
					np.Spec.Ingress = append(np.Spec.Ingress, networkingv1.NetworkPolicyIngressRule{})
				})
			}},
			want: observation{Exists: true, Diff: []string{"NetworkPolicy tenant-a/vpn"}, Rendered: corev1.ConditionUnknown},
		},
		"RoleEdited": {
			reason: "A Role widened by hand is drift, named.",
			args: args{gw: testGateway(), change: func(t *testing.T, target client.Client) {
				edit(t, target, &rbacv1.Role{}, n.Gateway, handEdit, func(o client.Object) {
					r := o.(*rbacv1.Role)
					r.Rules[0].Verbs = append(r.Rules[0].Verbs, "delete")
				})
			}},
			want: observation{Exists: true, Diff: []string{"Role tenant-a/vpn"}, Rendered: corev1.ConditionUnknown},
		},
		"ServiceAccountLabelRemoved": {
			reason: "A label of the provider's removed from the ServiceAccount is drift: the watches and Delete find the objects by it.",
			args: args{gw: testGateway(), change: func(t *testing.T, target client.Client) {
				edit(t, target, &corev1.ServiceAccount{}, n.Gateway, handEdit, func(o client.Object) {
					l := o.GetLabels()
					delete(l, workload.LabelGateway)
					o.SetLabels(l)
				})
			}},
			want: observation{Exists: true, Diff: []string{"ServiceAccount tenant-a/vpn", workload.LabelGateway}, Rendered: corev1.ConditionUnknown},
		},
		"ReplicasScaled": {
			reason: "A Deployment scaled by hand is drift: its replicas are the provider's (active, replicas).",
			args: args{gw: testGateway(), change: func(t *testing.T, target client.Client) {
				edit(t, target, &appsv1.Deployment{}, n.Gateway, handEdit, func(o client.Object) { o.(*appsv1.Deployment).Spec.Replicas = ptr.To[int32](3) })
			}},
			want: observation{Exists: true, Diff: []string{"Deployment tenant-a/vpn", "Replicas"}, Rendered: corev1.ConditionUnknown},
		},
		"ConfigMapDeleted": {
			reason: "An object deleted by hand is drift.",
			args: args{gw: testGateway(), change: func(t *testing.T, target client.Client) {
				if err := target.Delete(context.Background(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: testNS, Name: n.Config}}); err != nil {
					t.Fatal(err)
				}
			}},
			want: observation{Exists: true, Diff: []string{"ConfigMap tenant-a/vpn-config: missing"}, Rendered: corev1.ConditionUnknown},
		},
		"SecretEdited": {
			reason: "The gateway's Secret edited by hand is drift, and the difference shows neither value.",
			args: args{gw: testGateway(), change: func(t *testing.T, target client.Client) {
				edit(t, target, &corev1.Secret{}, n.Secrets, handEdit, func(o client.Object) {
					o.(*corev1.Secret).Data[contract.KeySecrets] = []byte("secrets { ike-x { secret = hand-typed-secret } }")
				})
			}},
			want:  observation{Exists: true, Diff: []string{"Secret tenant-a/vpn-secrets", "secrets.conf"}, Rendered: corev1.ConditionUnknown},
			notIn: []string{"hand-typed-secret", testPSK, "0x"},
		},
		"SecretOutdated": {
			reason: "A gateway Secret the provider wrote before a PSK rotation is drift, and the difference shows neither value.",
			args: args{gw: testGateway(), change: func(t *testing.T, target client.Client) {
				reapply(t, target, corev1ac.Secret(n.Secrets, testNS).WithLabels(workload.Labels("vpn")).WithType(corev1.SecretTypeOpaque).
					WithData(map[string][]byte{contract.KeySecrets: []byte("secrets { ike-x { secret = old-secret } }")}))
			}},
			want:  observation{Exists: true, Diff: []string{"Secret tenant-a/vpn-secrets", "another value"}, Rendered: corev1.ConditionUnknown},
			notIn: []string{"old-secret", testPSK, "0x"},
		},
		"SpecChanged": {
			reason: "A Gateway whose tunnels changed differs from its objects in the ConfigMap only.",
			args: args{gw: testGateway(), change: func(t *testing.T, target client.Client) {
				reapply(t, target, corev1ac.ConfigMap(n.Config, testNS).WithLabels(workload.Labels("vpn")).
					WithData(map[string]string{contract.KeySwanctlConf: "connections {\n}\n", contract.KeyNATRules: ""}))
			}},
			want: observation{Exists: true, Diff: []string{"ConfigMap tenant-a/vpn-config"}, Rendered: corev1.ConditionUnknown},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var kube, target client.Client
			if tc.args.nothing {
				kube, target = fake.NewClientBuilder().WithObjects(pskSecret()).Build(), newTarget(nil, tc.args.services...)
				if tc.args.noPSK {
					kube = fake.NewClientBuilder().Build()
				}
			} else {
				kube, target = created(t, tc.args.gw)
			}
			if tc.args.change != nil {
				tc.args.change(t, target)
			}
			gw := tc.args.gw.DeepCopy()
			got, err := newExternal(kube, target).Observe(context.Background(), gw)
			if diff := cmp.Diff(tc.err != nil, err != nil); diff != "" {
				t.Fatalf("%s\nObserve(): error %v, -want error, +got error:\n%s", tc.reason, err, diff)
			}
			o := observation{Exists: got.ResourceExists, UpToDate: got.ResourceUpToDate, Diff: tc.want.Diff,
				Rendered: gw.Status.GetCondition(v1alpha1.TypeConfigRendered).Status}
			for _, s := range tc.want.Diff {
				if !strings.Contains(got.Diff, s) {
					o.Diff = append(o.Diff[:len(o.Diff):len(o.Diff)], "not in the diff: "+s)
				}
			}
			for _, s := range tc.notIn {
				if strings.Contains(got.Diff, s) {
					o.Diff = append(o.Diff[:len(o.Diff):len(o.Diff)], "in the diff: "+s)
				}
			}
			if tc.want.Diff == nil && got.Diff != "" {
				o.Diff = []string{got.Diff}
			}
			if diff := cmp.Diff(tc.want, o); diff != "" {
				t.Errorf("%s\nObserve(): -want, +got:\n%s\ndiff:\n%s", tc.reason, diff, got.Diff)
			}
		})
	}
}

// TestObserveDeleting: a Gateway being deleted exists while any of its
// objects does, and needs no PSK to tell.
func TestObserveDeleting(t *testing.T) {
	gw := testGateway()
	gw.DeletionTimestamp = &metav1.Time{Time: time.Now()}
	cases := map[string]struct {
		reason string
		target client.Client
		want   managed.ExternalObservation
	}{
		"ObjectsLeft": {
			reason: "An object left (the ServiceAccount) keeps the Gateway existing.",
			target: newTarget(nil, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: testNS, Name: "vpn"}}),
			want:   managed.ExternalObservation{ResourceExists: true},
		},
		"Gone": {
			reason: "With every object gone the Gateway no longer exists.",
			target: newTarget(nil),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := newExternal(fake.NewClientBuilder().Build(), tc.target).Observe(context.Background(), gw.DeepCopy())
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\nObserve(): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

// errBoom is the error of a failing API call.
var errBoom = errors.New("boom")

// failApply fails every apply of kind.
func failApply(kind string) *interceptor.Funcs {
	return &interceptor.Funcs{Apply: func(ctx context.Context, c client.WithWatch, obj runtime.ApplyConfiguration, opts ...client.ApplyOption) error {
		if k, ok := obj.(interface{ GetKind() *string }); ok && ptr.Deref(k.GetKind(), "") == kind {
			return errBoom
		}
		return c.Apply(ctx, obj, opts...)
	}}
}

func TestCreateUpdate(t *testing.T) {
	n := workload.NamesOf("vpn")
	cases := map[string]struct {
		reason string
		// change edits the objects after they were created.
		change func(t *testing.T, target client.Client)
		// funcs intercept the target's calls after the objects were
		// created.
		funcs  *interceptor.Funcs
		update bool
		err    error
	}{
		"Create": {
			reason: "Create applies every object: the next Observe finds them up to date.",
		},
		"UpdateCorrectsHandEdits": {
			reason: "Update takes back every field of the provider's that was edited by hand, in every kind, and leaves others' fields alone.",
			update: true,
			change: func(t *testing.T, target client.Client) {
				edit(t, target, &networkingv1.NetworkPolicy{}, n.Gateway, handEdit, func(o client.Object) {
					o.(*networkingv1.NetworkPolicy).Spec.Ingress = nil
				})
				edit(t, target, &rbacv1.Role{}, n.Gateway, handEdit, func(o client.Object) { o.(*rbacv1.Role).Rules = nil })
				edit(t, target, &corev1.ServiceAccount{}, n.Gateway, handEdit, func(o client.Object) {
					o.GetLabels()[workload.LabelGateway] = "other"
				})
				edit(t, target, &appsv1.Deployment{}, n.Gateway, handEdit, func(o client.Object) { o.(*appsv1.Deployment).Spec.Replicas = ptr.To[int32](0) })
			},
		},
		"ApplyFails": {
			reason: "An object that cannot be applied is an error naming it.",
			funcs:  failApply("Role"),
			update: true,
			err:    fmt.Errorf(errApply, "Role", testNS, "vpn", errBoom),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			gw := testGateway()
			var kube client.Client = fake.NewClientBuilder().WithObjects(pskSecret()).Build()
			target := newTarget(nil)
			if tc.update {
				kube, target = created(t, gw)
			}
			if tc.change != nil {
				tc.change(t, target)
			}
			var c client.Client = target
			if tc.funcs != nil {
				c = interceptor.NewClient(target, *tc.funcs)
			}
			e := newExternal(kube, c)
			if _, err := e.Observe(context.Background(), gw); err != nil {
				t.Fatal(err)
			}
			var err error
			if tc.update {
				_, err = e.Update(context.Background(), gw)
			} else {
				_, err = e.Create(context.Background(), gw)
			}
			if diff := cmp.Diff(tc.err, err, test.EquateErrors()); diff != "" {
				t.Fatalf("%s\n-want error, +got error:\n%s", tc.reason, diff)
			}
			if tc.err != nil {
				return
			}
			if c := gw.Status.GetCondition(v1alpha1.TypeConfigRendered); c.Status != corev1.ConditionTrue {
				t.Errorf("%s\nConfigRendered %s after every object was applied, want True", tc.reason, c.Status)
			}
			got, err := newExternal(kube, c).Observe(context.Background(), testGateway())
			if err != nil {
				t.Fatal(err)
			}
			if !got.ResourceExists || !got.ResourceUpToDate {
				t.Errorf("%s\nObserve() after applying: exists %t, up to date %t, diff:\n%s", tc.reason, got.ResourceExists, got.ResourceUpToDate, got.Diff)
			}
		})
	}
}

// TestApplyNothingRendered: Create without an Observe that rendered the
// Gateway applies nothing and says so.
func TestApplyNothingRendered(t *testing.T) {
	_, err := newExternal(fake.NewClientBuilder().Build(), newTarget(nil)).Create(context.Background(), testGateway())
	if diff := cmp.Diff(errors.New(errNothingRendered), err, test.EquateErrors()); diff != "" {
		t.Errorf("Create() without a rendering: -want error, +got error:\n%s", diff)
	}
}

func TestDelete(t *testing.T) {
	n := workload.NamesOf("vpn")
	cases := map[string]struct {
		reason string
		// others are objects of the same names the provider did not make.
		others []client.Object
		funcs  *interceptor.Funcs
		// left are the objects that must be left, by kind and name.
		left []string
		err  error
	}{
		"All": {
			reason: "Delete removes every object of the Gateway.",
		},
		"OnlyOwn": {
			reason: "An object of the same name without the Gateway's labels is someone else's: Delete leaves it.",
			others: []client.Object{&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: testNS, Name: n.Status}}},
			left:   []string{"ConfigMap " + n.Status},
		},
		"DeleteFails": {
			reason: "An object that cannot be deleted is an error naming it.",
			funcs: &interceptor.Funcs{Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
				if _, ok := obj.(*rbacv1.Role); ok {
					return errBoom
				}
				return c.Delete(ctx, obj, opts...)
			}},
			left: []string{"Role " + n.Gateway, "ServiceAccount " + n.Gateway, "ConfigMap " + n.Status,
				"Secret " + n.Secrets, "ConfigMap " + n.Config, "NetworkAttachmentDefinition " + n.Gateway},
			err: fmt.Errorf(errDelete, "*v1.Role", testNS, "vpn", errBoom),
		},
		"GetFails": {
			reason: "An object that cannot be read is an error.",
			funcs: &interceptor.Funcs{Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
				if _, ok := obj.(*networkingv1.NetworkPolicy); ok {
					return errBoom
				}
				return c.Get(ctx, key, obj, opts...)
			}},
			left: []string{"NetworkPolicy " + n.Gateway, "Role " + n.Gateway, "RoleBinding " + n.Gateway, "ServiceAccount " + n.Gateway, "ConfigMap " + n.Status,
				"Secret " + n.Secrets, "ConfigMap " + n.Config, "NetworkAttachmentDefinition " + n.Gateway},
			err: errBoom,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			gw := testGateway()
			_, gotTarget := created(t, gw)
			var target client.Client = gotTarget
			for _, o := range tc.others {
				if err := target.Delete(context.Background(), o.DeepCopyObject().(client.Object)); err != nil {
					t.Fatal(err)
				}
				if err := target.Create(context.Background(), o); err != nil {
					t.Fatal(err)
				}
			}
			if tc.funcs != nil {
				target = interceptor.NewClient(gotTarget, *tc.funcs)
			}
			_, err := newExternal(nil, target).Delete(context.Background(), gw)
			if diff := cmp.Diff(tc.err, err, test.EquateErrors()); diff != "" {
				t.Errorf("%s\nDelete(): -want error, +got error:\n%s", tc.reason, diff)
			}
			var left []string
			for _, o := range existing(gw) {
				// An object that cannot be read (GetFails) is left.
				switch err := target.Get(context.Background(), client.ObjectKeyFromObject(o), o); {
				case err == nil, errors.Is(err, errBoom):
					left = append(left, kindOf(o)+" "+o.GetName())
				case !kerrors.IsNotFound(err):
					t.Fatal(err)
				}
			}
			if diff := cmp.Diff(tc.left, left, cmpSet); diff != "" {
				t.Errorf("%s\nobjects left: -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

// kindOf is the kind of o, a typed object or an unstructured one.
func kindOf(o client.Object) string {
	if gvk := o.GetObjectKind().GroupVersionKind(); gvk != (schema.GroupVersionKind{}) {
		return gvk.Kind
	}
	_, k, _ := strings.Cut(kind(o), ".")
	return k
}

// cmpSet compares string slices as sets.
var cmpSet = cmpopts.SortSlices(func(a, b string) bool { return a < b })

// TestObserveStatus: Observe reports the Deployment's readiness and, while
// a pod is ready, what the agent reports in its status ConfigMap.
func TestObserveStatus(t *testing.T) {
	n := workload.NamesOf("vpn")
	up := `[{"name":"branch-a","ikeState":"ESTABLISHED","up":true}]`
	type status struct {
		Ready                               xpv2.ConditionReason
		TunnelsUp, LoadedConfigHash, Leader string
		Replicas                            int32
	}
	cases := map[string]struct {
		reason string
		gw     func(*v1alpha1.Gateway)
		ready  int32
		report map[string]string
		want   status
		err    bool
	}{
		"Ready": {
			reason: "A ready pod: the agent's tunnels and loaded configuration count.",
			ready:  1, report: map[string]string{contract.KeyTunnels: up, contract.KeyConfigHash: "h1"},
			want: status{Ready: v1alpha1.ReasonPodReady, TunnelsUp: "1/1", LoadedConfigHash: "h1", Replicas: 1},
		},
		"NoReport": {
			reason: "A ready pod whose agent has not reported yet: no tunnel up, nothing loaded.",
			ready:  1,
			want:   status{Ready: v1alpha1.ReasonPodReady, TunnelsUp: "0/1", Replicas: 1},
		},
		"NoPodReady": {
			reason: "Without a ready pod the agent's last report (up) does not count.",
			report: map[string]string{contract.KeyTunnels: up, contract.KeyConfigHash: "h1"},
			want:   status{Ready: v1alpha1.ReasonPodNotReady, TunnelsUp: "0/1", Replicas: 1},
		},
		"PreStaged": {
			reason: "active false runs 0 replicas and says pre-staged.",
			gw:     func(g *v1alpha1.Gateway) { g.Spec.ForProvider.Active = ptr.To(false) },
			want:   status{Ready: v1alpha1.ReasonPreStaged, TunnelsUp: "0/1"},
		},
		"ActiveStandby": {
			reason: "Replicas 2 with pods ready: the active pod is the agent's report.",
			gw:     func(g *v1alpha1.Gateway) { g.Spec.ForProvider.Replicas = ptr.To[int32](2) },
			ready:  2, report: map[string]string{contract.KeyTunnels: up, contract.KeyLeader: `{"pod":"vpn-a","node":"node-1"}`},
			want: status{Ready: v1alpha1.ReasonPodReady, TunnelsUp: "1/1", Leader: "vpn-a", Replicas: 2},
		},
		"BadReport": {
			reason: "A report that does not parse is an error.",
			ready:  1, report: map[string]string{contract.KeyTunnels: "not json"},
			err: true,
		},
		"BadReportNoPodReady": {
			reason: "Without a ready pod the report does not count, nor does its content that does not parse.",
			report: map[string]string{contract.KeyTunnels: "not json"},
			want:   status{Ready: v1alpha1.ReasonPodNotReady, TunnelsUp: "0/1", Replicas: 1},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			gw := testGateway()
			if tc.gw != nil {
				tc.gw(gw)
			}
			kube, target := created(t, gw)
			dep := &appsv1.Deployment{}
			if err := target.Get(context.Background(), client.ObjectKey{Namespace: testNS, Name: n.Gateway}, dep); err != nil {
				t.Fatal(err)
			}
			dep.Status.ReadyReplicas = tc.ready
			if err := target.Status().Update(context.Background(), dep, client.FieldOwner("kube-controller-manager")); err != nil {
				t.Fatal(err)
			}
			if tc.report != nil {
				edit(t, target, &corev1.ConfigMap{}, n.Status, "gateway-agent", func(o client.Object) { o.(*corev1.ConfigMap).Data = tc.report })
			}
			obs, err := newExternal(kube, target).Observe(context.Background(), gw)
			if (err != nil) != tc.err {
				t.Fatalf("%s\nObserve(): error %v, want error %t", tc.reason, err, tc.err)
			}
			if tc.err {
				return
			}
			if !obs.ResourceUpToDate {
				t.Errorf("%s\nObserve(): not up to date:\n%s", tc.reason, obs.Diff)
			}
			a := gw.Status.AtProvider
			got := status{Ready: gw.Status.GetCondition(v1alpha1.TypeDeploymentReady).Reason, TunnelsUp: a.TunnelsUp,
				LoadedConfigHash: a.LoadedConfigHash, Replicas: a.Replicas}
			if a.Leader != nil {
				got.Leader = a.Leader.Pod
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\nstatus: -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

// TestObserveRefusesWhatCharonRefuses: a live Gateway (ConfigRendered
// True) whose stored spec holds a proposal charon refuses to load, as one
// stored before admission refused it, reports ConfigRendered False naming
// the tunnel, field and fix, and writes nothing: the agent's configuration
// stays as it was, and the status no longer says it was rendered.
func TestObserveRefusesWhatCharonRefuses(t *testing.T) {
	cases := map[string]struct {
		reason string
		mod    func(*v1alpha1.Tunnel)
		want   xpv2.Condition
	}{
		"MixedESP": {
			reason: "GCM beside a non-AEAD cipher in an ESP proposal.",
			mod:    func(tn *v1alpha1.Tunnel) { tn.ESPProposals = []string{"aes256-sha256-aes256gcm16"} },
			want: v1alpha1.ConfigNotRendered(v1alpha1.ReasonInvalidSpec,
				`cannot render the gateway configuration: tunnels[branch-a].espProposals[0]: "aes256-sha256-aes256gcm16": mixes AEAD encryption (aes256gcm16) with non-AEAD encryption: charon refuses to load such a proposal; write them as two proposals, such as aes256-sha256,aes256gcm16`),
		},
		"MixedIKE": {
			reason: "GCM beside a non-AEAD cipher in an IKE proposal.",
			mod:    func(tn *v1alpha1.Tunnel) { tn.IKEProposals = []string{"aes256-sha256-aes256gcm16-prfsha256-ecp256"} },
			want: v1alpha1.ConfigNotRendered(v1alpha1.ReasonInvalidSpec,
				`cannot render the gateway configuration: tunnels[branch-a].ikeProposals[0]: "aes256-sha256-aes256gcm16-prfsha256-ecp256": mixes AEAD encryption (aes256gcm16) with non-AEAD encryption: charon refuses to load such a proposal; write them as two proposals, such as aes256-sha256-prfsha256-ecp256,aes256gcm16-prfsha256-ecp256`),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			gw := testGateway()
			kube, target := created(t, gw)
			gw.SetConditions(v1alpha1.ConfigRendered())
			tc.mod(&gw.Spec.ForProvider.Tunnels[0])
			before := &corev1.ConfigMap{}
			if err := target.Get(context.Background(), client.ObjectKey{Namespace: testNS, Name: workload.NamesOf("vpn").Config}, before); err != nil {
				t.Fatal(err)
			}
			if _, err := newExternal(kube, target).Observe(context.Background(), gw); err == nil {
				t.Errorf("%s\nObserve(): no error, want the spec's problem (Synced False)", tc.reason)
			}
			if diff := cmp.Diff(tc.want, gw.Status.GetCondition(v1alpha1.TypeConfigRendered), cmpopts.IgnoreFields(xpv2.Condition{}, "LastTransitionTime")); diff != "" {
				t.Errorf("%s\nConfigRendered: -want, +got:\n%s", tc.reason, diff)
			}
			after := &corev1.ConfigMap{}
			if err := target.Get(context.Background(), client.ObjectKey{Namespace: testNS, Name: workload.NamesOf("vpn").Config}, after); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(before.Data, after.Data); diff != "" {
				t.Errorf("%s\nthe configuration ConfigMap changed: -before, +after:\n%s", tc.reason, diff)
			}
		})
	}
}
