package cluster

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/crossplane/crossplane-runtime/v2/pkg/test"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ipsecgw/provider-ipsec/apis/cluster/v1alpha1"
)

const kubeconfig = `apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:16443"}}]
users: [{name: u, user: {token: abc}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
`

func TestRESTConfig(t *testing.T) {
	own := &rest.Config{Host: "https://own.example.test"}
	ref := &xpv2.SecretKeySelector{SecretReference: xpv2.SecretReference{Namespace: "crossplane-system", Name: "target"}, Key: "kubeconfig"}
	cases := map[string]struct {
		reason   string
		cluster  v1alpha1.ClusterCredentials
		data     map[string][]byte
		wantHost string
		wantErr  string
	}{
		"InjectedIdentity": {
			reason:   "InjectedIdentity is the provider's own cluster.",
			cluster:  v1alpha1.ClusterCredentials{Source: xpv2.CredentialsSourceInjectedIdentity},
			wantHost: own.Host,
		},
		"Unset": {
			reason:   "An unset source (defaulted by admission) means InjectedIdentity.",
			wantHost: own.Host,
		},
		"Kubeconfig": {
			reason:   "A kubeconfig Secret yields its current context's server.",
			cluster:  v1alpha1.ClusterCredentials{Source: xpv2.CredentialsSourceSecret, SecretRef: ref},
			data:     map[string][]byte{"kubeconfig": []byte(kubeconfig)},
			wantHost: "https://127.0.0.1:16443",
		},
		"BadKubeconfig": {
			reason:  "A Secret key that is no kubeconfig is named.",
			cluster: v1alpha1.ClusterCredentials{Source: xpv2.CredentialsSourceSecret, SecretRef: ref},
			data:    map[string][]byte{"kubeconfig": []byte("apiVersion: v1\nkind: Config\n")},
			wantErr: `ProviderConfig default: Secret crossplane-system/target key "kubeconfig" is not a usable kubeconfig: invalid configuration: no configuration has been provided, try setting KUBERNETES_MASTER environment variable`,
		},
		"KeyMissing": {
			reason:  "A Secret without the key names the key.",
			cluster: v1alpha1.ClusterCredentials{Source: xpv2.CredentialsSourceSecret, SecretRef: ref},
			data:    map[string][]byte{},
			wantErr: `ProviderConfig default: Secret crossplane-system/target has no key "kubeconfig" holding the kubeconfig (keys present: none): add the key or fix secretRef.key`,
		},
		"Unsupported": {
			reason:  "A source other than InjectedIdentity or Secret is refused.",
			cluster: v1alpha1.ClusterCredentials{Source: xpv2.CredentialsSourceFilesystem},
			wantErr: `ProviderConfig default: spec.cluster.source "Filesystem" is not supported: use InjectedIdentity or Secret`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c := &test.MockClient{MockGet: func(_ context.Context, _ client.ObjectKey, obj client.Object) error {
				obj.(*corev1.Secret).Data = tc.data
				return nil
			}}
			got, err := RESTConfig(context.Background(), c, "ProviderConfig default", tc.cluster, own)
			gotErr := ""
			if err != nil {
				gotErr = err.Error()
			}
			if diff := cmp.Diff(tc.wantErr, gotErr); diff != "" {
				t.Fatalf("%s\nRESTConfig(...): -want error, +got error:\n%s", tc.reason, diff)
			}
			if err == nil && got.Host != tc.wantHost {
				t.Errorf("%s\nRESTConfig(...).Host = %q, want %q", tc.reason, got.Host, tc.wantHost)
			}
		})
	}
}

// TestTargetsReuse proves that the client of a kubeconfig Secret is built
// once per ProviderConfig and kubeconfig: again for another kubeconfig in
// the Secret or another ProviderConfig, never for InjectedIdentity.
func TestTargetsReuse(t *testing.T) {
	ref := &xpv2.SecretKeySelector{SecretReference: xpv2.SecretReference{Namespace: "crossplane-system", Name: "target"}, Key: "kubeconfig"}
	remote := v1alpha1.ClusterCredentials{Source: xpv2.CredentialsSourceSecret, SecretRef: ref}
	other := strings.Replace(kubeconfig, "16443", "26443", 1)
	// call is one Target call: the ProviderConfig, its spec.cluster and
	// the kubeconfig its Secret holds then.
	type call struct {
		pc      string
		cluster v1alpha1.ClusterCredentials
		doc     string
	}
	cases := map[string]struct {
		reason string
		calls  []call
		// want are the hosts of the clients returned, "own" for Own.
		want []string
		// built are the hosts New was called with.
		built []string
	}{
		"InjectedIdentity": {
			reason: "The provider's own cluster needs no client built.",
			calls:  []call{{pc: "ProviderConfig a"}, {pc: "ProviderConfig a"}},
			want:   []string{"own", "own"},
		},
		"SameKubeconfig": {
			reason: "A ProviderConfig's kubeconfig unchanged reuses the client built at its first use.",
			calls:  []call{{"ProviderConfig a", remote, kubeconfig}, {"ProviderConfig a", remote, kubeconfig}, {"ProviderConfig a", remote, kubeconfig}},
			want:   []string{"https://127.0.0.1:16443", "https://127.0.0.1:16443", "https://127.0.0.1:16443"},
			built:  []string{"https://127.0.0.1:16443"},
		},
		"KubeconfigChanged": {
			reason: "A kubeconfig changed in its Secret builds a client of the new one, and the next call reuses that.",
			calls:  []call{{"ProviderConfig a", remote, kubeconfig}, {"ProviderConfig a", remote, other}, {"ProviderConfig a", remote, other}},
			want:   []string{"https://127.0.0.1:16443", "https://127.0.0.1:26443", "https://127.0.0.1:26443"},
			built:  []string{"https://127.0.0.1:16443", "https://127.0.0.1:26443"},
		},
		"TwoProviderConfigs": {
			reason: "Each ProviderConfig has a client of its own, even of the same kubeconfig.",
			calls:  []call{{"ProviderConfig a", remote, kubeconfig}, {"ProviderConfig tenant-a/b", remote, kubeconfig}, {"ProviderConfig a", remote, kubeconfig}},
			want:   []string{"https://127.0.0.1:16443", "https://127.0.0.1:16443", "https://127.0.0.1:16443"},
			built:  []string{"https://127.0.0.1:16443", "https://127.0.0.1:16443"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var built []string
			tg := &Targets[string]{Own: "own", New: func(c *rest.Config) (string, error) {
				built = append(built, c.Host)
				return c.Host, nil
			}}
			var got []string
			for _, c := range tc.calls {
				r := &test.MockClient{MockGet: func(_ context.Context, _ client.ObjectKey, obj client.Object) error {
					obj.(*corev1.Secret).Data = map[string][]byte{"kubeconfig": []byte(c.doc)}
					return nil
				}}
				host, err := tg.Target(context.Background(), r, c.pc, c.cluster)
				if err != nil {
					t.Fatalf("%s\nTarget(%s): %v", tc.reason, c.pc, err)
				}
				got = append(got, host)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\nTarget(): -want, +got:\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(tc.built, built); diff != "" {
				t.Errorf("%s\nclients built: -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

// TestTargetsErrors proves that Target names the ProviderConfig and what
// failed, and returns Own with the error.
func TestTargetsErrors(t *testing.T) {
	ref := &xpv2.SecretKeySelector{SecretReference: xpv2.SecretReference{Namespace: "crossplane-system", Name: "target"}, Key: "kubeconfig"}
	errBoom := errors.New("boom")
	cases := map[string]struct {
		reason  string
		cluster v1alpha1.ClusterCredentials
		newErr  error
		want    string
	}{
		"NoSecretRef": {
			reason:  "A Secret source without secretRef says which field to set.",
			cluster: v1alpha1.ClusterCredentials{Source: xpv2.CredentialsSourceSecret},
			want:    "ProviderConfig a: spec.cluster.secretRef is not set: name the Secret key holding a kubeconfig",
		},
		"NewFails": {
			reason:  "A client that cannot be built is named as the target cluster's.",
			cluster: v1alpha1.ClusterCredentials{Source: xpv2.CredentialsSourceSecret, SecretRef: ref},
			newErr:  errBoom,
			want:    "ProviderConfig a: cannot create a client of the target cluster: boom",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			tg := &Targets[string]{Own: "own", New: func(*rest.Config) (string, error) { return "", tc.newErr }}
			r := &test.MockClient{MockGet: func(_ context.Context, _ client.ObjectKey, obj client.Object) error {
				obj.(*corev1.Secret).Data = map[string][]byte{"kubeconfig": []byte(kubeconfig)}
				return nil
			}}
			got, err := tg.Target(context.Background(), r, "ProviderConfig a", tc.cluster)
			if diff := cmp.Diff(tc.want, fmt.Sprint(err)); diff != "" {
				t.Errorf("%s\nTarget(): -want error, +got:\n%s", tc.reason, diff)
			}
			if got != "own" {
				t.Errorf("%s\nTarget() = %q with the error, want Own", tc.reason, got)
			}
		})
	}
}
