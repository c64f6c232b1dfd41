package openstack

import (
	"context"
	"testing"

	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	clusternet "github.com/ipsecgw/provider-ipsec/apis/cluster/networking/v1alpha1"
	"github.com/ipsecgw/provider-ipsec/apis/cluster/v1alpha1"
	nsnet "github.com/ipsecgw/provider-ipsec/apis/namespaced/networking/v1alpha1"
	nsv1alpha1 "github.com/ipsecgw/provider-ipsec/apis/namespaced/v1alpha1"
)

func TestResolveConfig(t *testing.T) {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{v1alpha1.SchemeBuilder.AddToScheme, nsv1alpha1.SchemeBuilder.AddToScheme, corev1.AddToScheme} {
		if err := add(s); err != nil {
			t.Fatal(err)
		}
	}
	creds := func(ns string) v1alpha1.OpenStackCredentials {
		return v1alpha1.OpenStackCredentials{Cloud: "lab", SecretRef: &xpv2.SecretKeySelector{
			SecretReference: xpv2.SecretReference{Namespace: ns, Name: "clouds"}, Key: "clouds.yaml"}}
	}
	spec := func(ns string) v1alpha1.ProviderConfigSpec {
		return v1alpha1.ProviderConfigSpec{Credentials: creds(ns)}
	}
	withCA := spec("tenant-a")
	withCA.Credentials.CABundleSecretRef = &xpv2.SecretKeySelector{SecretReference: xpv2.SecretReference{Namespace: "tenant-b", Name: "ca"}, Key: "ca.crt"}
	// cpc is a ClusterProviderConfig's spec selecting namespaces by sel.
	cpc := func(sel *metav1.LabelSelector) nsv1alpha1.ClusterProviderConfigSpec {
		return nsv1alpha1.ClusterProviderConfigSpec{ProviderConfigSpec: spec("crossplane-system"), NamespaceSelector: sel}
	}
	kubeconfigElsewhere := spec("tenant-a")
	kubeconfigElsewhere.Cluster = v1alpha1.ClusterCredentials{Source: xpv2.CredentialsSourceSecret,
		SecretRef: &xpv2.SecretKeySelector{SecretReference: xpv2.SecretReference{Namespace: "tenant-b", Name: "kubeconfig"}, Key: "kubeconfig"}}
	// Every kind has a config named default; tenant-b has one named
	// other that tenant-a does not. Namespace tenant-a is labelled a
	// tenant of the shared project, which ClusterProviderConfig default
	// selects; ClusterProviderConfig admin selects the platform's
	// namespaces only, unset selects none, every selects all.
	kube := fake.NewClientBuilder().WithScheme(s).WithObjects(
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "tenant-a", Labels: map[string]string{"ipsecgw.io/project": "shared"}}},
		&v1alpha1.ProviderConfig{ObjectMeta: metav1.ObjectMeta{Name: "default"}, Spec: spec("crossplane-system")},
		&nsv1alpha1.ClusterProviderConfig{ObjectMeta: metav1.ObjectMeta{Name: "default"},
			Spec: cpc(&metav1.LabelSelector{MatchLabels: map[string]string{"ipsecgw.io/project": "shared"}})},
		&nsv1alpha1.ClusterProviderConfig{ObjectMeta: metav1.ObjectMeta{Name: "admin"},
			Spec: cpc(&metav1.LabelSelector{MatchLabels: map[string]string{"ipsecgw.io/project": "admin"}})},
		&nsv1alpha1.ClusterProviderConfig{ObjectMeta: metav1.ObjectMeta{Name: "unset"}, Spec: cpc(nil)},
		&nsv1alpha1.ClusterProviderConfig{ObjectMeta: metav1.ObjectMeta{Name: "every"}, Spec: cpc(&metav1.LabelSelector{})},
		&nsv1alpha1.ProviderConfig{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-a", Name: "default"}, Spec: spec("tenant-a")},
		&nsv1alpha1.ProviderConfig{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-a", Name: "borrowed"}, Spec: spec("tenant-b")},
		&nsv1alpha1.ProviderConfig{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-a", Name: "ca-elsewhere"}, Spec: withCA},
		&nsv1alpha1.ProviderConfig{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-a", Name: "kubeconfig-elsewhere"}, Spec: kubeconfigElsewhere},
		&nsv1alpha1.ProviderConfig{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-b", Name: "other"}, Spec: spec("tenant-b")},
	).Build()
	port := func(ref *xpv2.ProviderConfigReference) *nsnet.Port {
		p := &nsnet.Port{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-a", Name: "p"}}
		p.SetProviderConfigReference(ref)
		return p
	}
	type want struct {
		Config Config
		Err    string
	}
	cases := map[string]struct {
		reason string
		mg     resource.Managed
		want   want
	}{
		"ClusterScoped": {
			reason: "A cluster-scoped managed resource uses the cluster-scoped ProviderConfig of ipsecgw.io it names, keyed by its name as before.",
			mg:     &clusternet.Port{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Spec: clusternet.PortSpec{ClusterManagedResourceSpec: xpv2.ClusterManagedResourceSpec{ProviderConfigReference: &xpv2.Reference{Name: "default"}}}},
			want:   want{Config: Config{Key: "default", Name: "ProviderConfig default", Credentials: creds("crossplane-system")}},
		},
		"OwnNamespace": {
			reason: "A namespaced managed resource naming kind ProviderConfig uses the ProviderConfig of its own namespace, keyed apart from the cluster kinds' of the same name.",
			mg:     port(&xpv2.ProviderConfigReference{Kind: "ProviderConfig", Name: "default"}),
			want:   want{Config: Config{Key: "tenant-a/default", Name: "ProviderConfig tenant-a/default", Credentials: creds("tenant-a")}},
		},
		"ClusterProviderConfig": {
			reason: "A namespaced managed resource naming kind ClusterProviderConfig uses that cluster-scoped config, whose Secret may be anywhere.",
			mg:     port(&xpv2.ProviderConfigReference{Kind: "ClusterProviderConfig", Name: "default"}),
			want:   want{Config: Config{Key: "ClusterProviderConfig/default", Name: "ClusterProviderConfig default", Credentials: creds("crossplane-system")}},
		},
		"ClusterProviderConfigOfEveryNamespace": {
			reason: "A ClusterProviderConfig whose namespaceSelector is {} may be used from every namespace.",
			mg:     port(&xpv2.ProviderConfigReference{Kind: "ClusterProviderConfig", Name: "every"}),
			want:   want{Config: Config{Key: "ClusterProviderConfig/every", Name: "ClusterProviderConfig every", Credentials: creds("crossplane-system")}},
		},
		"ClusterProviderConfigOfOtherNamespaces": {
			reason: "A ClusterProviderConfig whose namespaceSelector does not select the resource's namespace is refused, naming the field, the selector and the fix.",
			mg:     port(&xpv2.ProviderConfigReference{Kind: "ClusterProviderConfig", Name: "admin"}),
			want: want{Err: `ClusterProviderConfig admin: spec.namespaceSelector (ipsecgw.io/project=admin) does not select namespace tenant-a: ` +
				`name a ProviderConfig of namespace tenant-a in spec.providerConfigRef, or have the platform label the namespace or widen the selector`},
		},
		"ClusterProviderConfigWithoutSelector": {
			reason: "A ClusterProviderConfig without a namespaceSelector selects no namespace, as a nil label selector does.",
			mg:     port(&xpv2.ProviderConfigReference{Kind: "ClusterProviderConfig", Name: "unset"}),
			want: want{Err: `ClusterProviderConfig unset has no spec.namespaceSelector, so no namespace may use it: ` +
				`name a ProviderConfig of namespace tenant-a in spec.providerConfigRef, or have the platform select namespace tenant-a in the ClusterProviderConfig's spec.namespaceSelector ({} selects every namespace)`},
		},
		"OtherNamespacesConfig": {
			reason: "A ProviderConfig of another namespace cannot be named: the name is looked up in the resource's own namespace only.",
			mg:     port(&xpv2.ProviderConfigReference{Kind: "ProviderConfig", Name: "other"}),
			want: want{Err: `cannot get ProviderConfig tenant-a/other (spec.providerConfigRef names a ProviderConfig of the resource's own namespace): ` +
				`providerconfigs.m.ipsecgw.io "other" not found`},
		},
		"SecretOfAnotherNamespace": {
			reason: "A namespaced ProviderConfig whose credentials Secret is in another namespace is refused, naming the field and the fix.",
			mg:     port(&xpv2.ProviderConfigReference{Kind: "ProviderConfig", Name: "borrowed"}),
			want: want{Err: `ProviderConfig tenant-a/borrowed: spec.credentials.secretRef.namespace is "tenant-b", but a namespaced ProviderConfig reads Secrets of its own namespace only: ` +
				`set it to "tenant-a" and keep the Secret there, or use a ClusterProviderConfig`},
		},
		"CABundleOfAnotherNamespace": {
			reason: "The CA bundle's Secret is confined to the namespace as the credentials' is.",
			mg:     port(&xpv2.ProviderConfigReference{Kind: "ProviderConfig", Name: "ca-elsewhere"}),
			want: want{Err: `ProviderConfig tenant-a/ca-elsewhere: spec.credentials.caBundleSecretRef.namespace is "tenant-b", but a namespaced ProviderConfig reads Secrets of its own namespace only: ` +
				`set it to "tenant-a" and keep the Secret there, or use a ClusterProviderConfig`},
		},
		"KubeconfigOfAnotherNamespace": {
			reason: "The target cluster's kubeconfig Secret (the Gateways' and NodeAddressPairs') is confined to the namespace as the credentials' is.",
			mg:     port(&xpv2.ProviderConfigReference{Kind: "ProviderConfig", Name: "kubeconfig-elsewhere"}),
			want: want{Err: `ProviderConfig tenant-a/kubeconfig-elsewhere: spec.cluster.secretRef.namespace is "tenant-b", but a namespaced ProviderConfig reads Secrets of its own namespace only: ` +
				`set it to "tenant-a" and keep the Secret there, or use a ClusterProviderConfig`},
		},
		"UnknownKind": {
			reason: "A kind other than ProviderConfig or ClusterProviderConfig is refused, naming the two.",
			mg:     port(&xpv2.ProviderConfigReference{Kind: "Secret", Name: "default"}),
			want:   want{Err: `spec.providerConfigRef.kind "Secret" is not ProviderConfig or ClusterProviderConfig: name a ProviderConfig of namespace tenant-a or a ClusterProviderConfig`},
		},
		"NoReference": {
			reason: "A namespaced managed resource without a providerConfigRef is refused.",
			mg:     port(nil),
			want:   want{Err: errNoPCRef},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var got want
			var err error
			if got.Config, err = ResolveConfig(context.Background(), kube, tc.mg); err != nil {
				got.Err = err.Error()
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\nResolveConfig(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}
