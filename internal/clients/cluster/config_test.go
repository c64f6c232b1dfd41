package cluster

import (
	"context"
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
