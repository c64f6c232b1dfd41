// Package cluster builds the REST config for the Kubernetes cluster in which
// Gateway managed resources run their pods.
package cluster

import (
	"context"
	"fmt"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ipsecgw/provider-ipsec/apis/cluster/v1alpha1"
	"github.com/ipsecgw/provider-ipsec/internal/clients"
)

// RESTConfig returns the REST config of the cluster that cc, the
// spec.cluster of the ProviderConfig or ClusterProviderConfig pc names (as
// errors name it: "ProviderConfig default", "ProviderConfig tenant-a/x",
// "ClusterProviderConfig x"), selects. InjectedIdentity (the default)
// returns a copy of own, the provider's own config; Secret parses the
// kubeconfig document held in the Secret key that secretRef names (its
// current context). Errors name the ProviderConfig and the Secret and key
// at fault.
func RESTConfig(ctx context.Context, c client.Reader, pc string, cc v1alpha1.ClusterCredentials, own *rest.Config) (*rest.Config, error) {
	switch cc.Source {
	case xpv2.CredentialsSourceInjectedIdentity, "":
		return rest.CopyConfig(own), nil
	case xpv2.CredentialsSourceSecret:
		if cc.SecretRef == nil {
			return nil, fmt.Errorf("%s: spec.cluster.secretRef is not set: name the Secret key holding a kubeconfig", pc)
		}
		doc, err := clients.SecretKey(ctx, c, *cc.SecretRef, "kubeconfig")
		if err != nil {
			return nil, fmt.Errorf("%s: %w", pc, err)
		}
		cfg, err := clientcmd.RESTConfigFromKubeConfig(doc)
		if err != nil {
			return nil, fmt.Errorf("%s: Secret %s/%s key %q is not a usable kubeconfig: %w",
				pc, cc.SecretRef.Namespace, cc.SecretRef.Name, cc.SecretRef.Key, err)
		}
		return cfg, nil
	default:
		return nil, fmt.Errorf("%s: spec.cluster.source %q is not supported: use InjectedIdentity or Secret", pc, cc.Source)
	}
}

// Target returns the client of the cluster cc, the spec.cluster of the
// ProviderConfig pc (named as for RESTConfig), selects: own for
// InjectedIdentity (the default), else the one newClient builds from the
// kubeconfig in the Secret (see RESTConfig; ownConfig is own's config).
// Errors name the ProviderConfig.
func Target[C any](ctx context.Context, c client.Reader, pc string, cc v1alpha1.ClusterCredentials, own C, ownConfig *rest.Config, newClient func(*rest.Config) (C, error)) (C, error) {
	if cc.Source != xpv2.CredentialsSourceSecret {
		return own, nil
	}
	cfg, err := RESTConfig(ctx, c, pc, cc, ownConfig)
	if err != nil {
		return own, err
	}
	target, err := newClient(cfg)
	if err != nil {
		return own, fmt.Errorf("%s: cannot create a client of the target cluster: %w", pc, err)
	}
	return target, nil
}
