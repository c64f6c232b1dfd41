//go:build integration

package integration

import (
	"context"
	"slices"
	"strings"
	"testing"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	extv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ipsecgw/provider-ipsec/apis/cluster/v1alpha1"
	"github.com/ipsecgw/provider-ipsec/internal/clients/openstack"
)

// TestCRDsInstalled proves that every file in package/crds is a CRD the API
// server accepts and serves.
func TestCRDsInstalled(t *testing.T) {
	var want []string
	for f, crd := range packageCRDs(t) {
		want = append(want, crd.Name)
		got := &extv1.CustomResourceDefinition{}
		if err := kube.Get(context.Background(), client.ObjectKey{Name: crd.Name}, got); err != nil {
			t.Errorf("CRD %s from %s is not served: %v", crd.Name, f, err)
			continue
		}
		if !established(got) {
			t.Errorf("CRD %s is not Established", crd.Name)
		}
	}
	for _, name := range want {
		if !slices.Contains(installed, name) {
			t.Errorf("envtest did not install CRD %s from package/crds", name)
		}
	}
}

func established(crd *extv1.CustomResourceDefinition) bool {
	for _, c := range crd.Status.Conditions {
		if c.Type == extv1.Established && c.Status == extv1.ConditionTrue {
			return true
		}
	}
	return false
}

func secretRef(name, key string) *xpv2.SecretKeySelector {
	return &xpv2.SecretKeySelector{SecretReference: xpv2.SecretReference{Namespace: "default", Name: name}, Key: key}
}

// TestProviderConfigRoundTrip proves a ProviderConfig is stored and read back
// whole, with the schema's defaults filled in.
func TestProviderConfigRoundTrip(t *testing.T) {
	ctx := context.Background()
	in := &v1alpha1.ProviderConfig{
		ObjectMeta: metav1.ObjectMeta{Name: "roundtrip"},
		Spec: v1alpha1.ProviderConfigSpec{Credentials: v1alpha1.OpenStackCredentials{
			SecretRef:         secretRef("clouds", "clouds.yaml"),
			Cloud:             "lab",
			Region:            "RegionOne",
			Interface:         "internal",
			CABundleSecretRef: secretRef("ca", "ca.crt"),
		}},
	}
	if err := kube.Create(ctx, in); err != nil {
		t.Fatalf("Create: %v", err)
	}
	t.Cleanup(func() { _ = kube.Delete(context.Background(), in) })

	got := &v1alpha1.ProviderConfig{}
	if err := kube.Get(ctx, client.ObjectKeyFromObject(in), got); err != nil {
		t.Fatalf("Get: %v", err)
	}
	want := in.Spec.DeepCopy()
	want.Credentials.Source = xpv2.CredentialsSourceSecret
	want.Cluster.Source = xpv2.CredentialsSourceInjectedIdentity
	if diff := cmp.Diff(*want, got.Spec); diff != "" {
		t.Errorf("ProviderConfig spec after a round trip: -want, +got:\n%s", diff)
	}
}

// TestProviderConfigAdmission proves the CRD schema refuses what cannot work.
func TestProviderConfigAdmission(t *testing.T) {
	cases := map[string]struct {
		reason string
		spec   v1alpha1.ProviderConfigSpec
		want   string
	}{
		"NoSecretRef": {
			reason: "source Secret without secretRef is refused with a message saying what to add.",
			spec:   v1alpha1.ProviderConfigSpec{Credentials: v1alpha1.OpenStackCredentials{Source: xpv2.CredentialsSourceSecret, Cloud: "lab"}},
			want:   "source Secret needs secretRef",
		},
		"NoCloud": {
			reason: "An empty cloud name is refused.",
			spec:   v1alpha1.ProviderConfigSpec{Credentials: v1alpha1.OpenStackCredentials{SecretRef: secretRef("c", "clouds.yaml")}},
			want:   "spec.credentials.cloud",
		},
		"BadInterface": {
			reason: "An interface other than public, internal or admin is refused.",
			spec:   v1alpha1.ProviderConfigSpec{Credentials: v1alpha1.OpenStackCredentials{SecretRef: secretRef("c", "clouds.yaml"), Cloud: "lab", Interface: "private"}},
			want:   `spec.credentials.interface: Unsupported value: "private"`,
		},
		"ClusterSecretWithoutRef": {
			reason: "A kubeconfig Secret source without secretRef is refused.",
			spec: v1alpha1.ProviderConfigSpec{
				Credentials: v1alpha1.OpenStackCredentials{SecretRef: secretRef("c", "clouds.yaml"), Cloud: "lab"},
				Cluster:     v1alpha1.ClusterCredentials{Source: xpv2.CredentialsSourceSecret},
			},
			want: "source Secret needs secretRef: the namespace, name and key of the Secret holding a kubeconfig",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			pc := &v1alpha1.ProviderConfig{ObjectMeta: metav1.ObjectMeta{Name: strings.ToLower(name)}, Spec: tc.spec}
			err := kube.Create(context.Background(), pc)
			if err == nil {
				_ = kube.Delete(context.Background(), pc)
				t.Fatalf("%s\nCreate succeeded, want an error containing %q", tc.reason, tc.want)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%s\nCreate error = %q, want it to contain %q", tc.reason, err, tc.want)
			}
		})
	}
}

// TestProviderConfigCredentialErrors proves that a ProviderConfig whose
// clouds.yaml is missing, malformed or lacks the named cloud yields an error
// that names the Secret and what is missing, read through the real API.
func TestProviderConfigCredentialErrors(t *testing.T) {
	ctx := context.Background()
	cases := map[string]struct {
		reason string
		data   map[string]string
		cloud  string
		want   string
	}{
		"KeyMissing": {
			reason: "A Secret without the clouds.yaml key names the Secret and the key.",
			data:   map[string]string{"clouds.yml": "clouds: {}"},
			cloud:  "lab",
			want:   `ProviderConfig bad-keymissing: Secret default/clouds-keymissing has no key "clouds.yaml" holding the clouds.yaml (keys present: clouds.yml): add the key or fix secretRef.key`,
		},
		"KeyEmpty": {
			reason: "A clouds.yaml key that is there but empty is said to be empty, not missing (issue 29).",
			data:   map[string]string{"clouds.yaml": ""},
			cloud:  "lab",
			want:   `ProviderConfig bad-keyempty: Secret default/clouds-keyempty has the key "clouds.yaml" for the clouds.yaml, but its value is empty: write the clouds.yaml into it or fix secretRef.key`,
		},
		"AppCredWithoutID": {
			reason: "An application credential without its ID names the field to add (issue 29: it was 'You must provide a password to authenticate').",
			data:   map[string]string{"clouds.yaml": "clouds:\n  lab:\n    auth_type: v3applicationcredential\n    auth: {auth_url: http://127.0.0.1:5000/v3, application_credential_secret: s3cr3t}\n"},
			cloud:  "lab",
			want: `ProviderConfig bad-appcredwithoutid: Secret default/clouds-appcredwithoutid key "clouds.yaml": cloud "lab" of clouds.yaml: ` +
				`auth_type v3applicationcredential needs auth.application_credential_id (or auth.application_credential_name with the user ` +
				`who owns it): add application_credential_id, as openstack application credential show <name> -c id prints it`,
		},
		"Malformed": {
			reason: "Malformed YAML names the Secret and key.",
			data:   map[string]string{"clouds.yaml": "clouds:\n\t- lab"},
			cloud:  "lab",
			want:   `ProviderConfig bad-malformed: Secret default/clouds-malformed key "clouds.yaml": clouds.yaml is not valid YAML: yaml: line 2: found character that cannot start any token`,
		},
		"CloudAbsent": {
			reason: "A cloud the document lacks is named with the ones it has.",
			data:   map[string]string{"clouds.yaml": "clouds:\n  lab:\n    auth: {auth_url: http://127.0.0.1:5000/v3}\n"},
			cloud:  "prod",
			want:   `ProviderConfig bad-cloudabsent: Secret default/clouds-cloudabsent key "clouds.yaml": clouds.yaml has no cloud "prod" under clouds: (clouds present: "lab")`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			suffix := strings.ToLower(name)
			s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "clouds-" + suffix}, StringData: tc.data}
			if err := kube.Create(ctx, s); err != nil {
				t.Fatalf("Create Secret: %v", err)
			}
			t.Cleanup(func() { _ = kube.Delete(context.Background(), s) })
			pc := &v1alpha1.ProviderConfig{
				ObjectMeta: metav1.ObjectMeta{Name: "bad-" + suffix},
				Spec: v1alpha1.ProviderConfigSpec{Credentials: v1alpha1.OpenStackCredentials{
					SecretRef: secretRef(s.Name, "clouds.yaml"), Cloud: tc.cloud,
				}},
			}
			if err := kube.Create(ctx, pc); err != nil {
				t.Fatalf("Create ProviderConfig: %v", err)
			}
			t.Cleanup(func() { _ = kube.Delete(context.Background(), pc) })

			_, err := openstack.FromProviderConfig(ctx, kube, pc)
			got := ""
			if err != nil {
				got = err.Error()
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\nFromProviderConfig(...): -want error, +got error:\n%s", tc.reason, diff)
			}
		})
	}
}
