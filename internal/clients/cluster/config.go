// Package cluster builds the REST config for the Kubernetes cluster in which
// Gateway managed resources run their pods.
package cluster

import (
	"context"
	"crypto/sha256"
	"fmt"
	"sync"

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
		doc, err := kubeconfigOf(ctx, c, pc, cc)
		if err != nil {
			return nil, err
		}
		return parse(pc, cc, doc)
	default:
		return nil, fmt.Errorf("%s: spec.cluster.source %q is not supported: use InjectedIdentity or Secret", pc, cc.Source)
	}
}

// kubeconfigOf reads the kubeconfig document of cc, a Secret source.
func kubeconfigOf(ctx context.Context, c client.Reader, pc string, cc v1alpha1.ClusterCredentials) ([]byte, error) {
	if cc.SecretRef == nil {
		return nil, fmt.Errorf("%s: spec.cluster.secretRef is not set: name the Secret key holding a kubeconfig", pc)
	}
	doc, err := clients.SecretKey(ctx, c, *cc.SecretRef, "kubeconfig")
	if err != nil {
		return nil, fmt.Errorf("%s: %w", pc, err)
	}
	return doc, nil
}

// parse returns the REST config of doc, the kubeconfig document of cc.
func parse(pc string, cc v1alpha1.ClusterCredentials, doc []byte) (*rest.Config, error) {
	cfg, err := clientcmd.RESTConfigFromKubeConfig(doc)
	if err != nil {
		return nil, fmt.Errorf("%s: Secret %s/%s key %q is not a usable kubeconfig: %w",
			pc, cc.SecretRef.Namespace, cc.SecretRef.Name, cc.SecretRef.Key, err)
	}
	return cfg, nil
}

// Targets gives the client of the cluster a ProviderConfig selects: Own
// for InjectedIdentity (the default), else one New builds from the
// kubeconfig in its Secret, built once per ProviderConfig and again only
// when that kubeconfig changes. A client built per reconcile would start
// with an empty discovery cache and look up the remote API server's kinds
// anew each time. Safe for concurrent use; the zero value with Own and New
// set is ready.
type Targets[C any] struct {
	// Own is the provider's own cluster.
	Own C
	// New builds a client of a cluster a kubeconfig names.
	New func(*rest.Config) (C, error)

	mu    sync.Mutex
	built map[string]built[C]
}

// built is the client of one ProviderConfig's kubeconfig.
type built[C any] struct {
	// kubeconfig is the SHA-256 of the document it was built from: the
	// document holds credentials, which are not kept twice.
	kubeconfig [sha256.Size]byte
	client     C
}

// Target returns the client of the cluster that cc, the spec.cluster of
// the ProviderConfig pc (named as for RESTConfig), selects, reading a
// kubeconfig Secret through c at each call (a change takes effect at the
// next). Errors name the ProviderConfig, and the Secret and key at fault.
func (t *Targets[C]) Target(ctx context.Context, c client.Reader, pc string, cc v1alpha1.ClusterCredentials) (C, error) {
	if cc.Source != xpv2.CredentialsSourceSecret {
		return t.Own, nil
	}
	doc, err := kubeconfigOf(ctx, c, pc, cc)
	if err != nil {
		return t.Own, err
	}
	sum := sha256.Sum256(doc)
	t.mu.Lock()
	b, ok := t.built[pc]
	t.mu.Unlock()
	if ok && b.kubeconfig == sum {
		return b.client, nil
	}
	cfg, err := parse(pc, cc, doc)
	if err != nil {
		return t.Own, err
	}
	target, err := t.New(cfg)
	if err != nil {
		return t.Own, fmt.Errorf("%s: cannot create a client of the target cluster: %w", pc, err)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.built == nil {
		t.built = map[string]built[C]{}
	}
	t.built[pc] = built[C]{kubeconfig: sum, client: target}
	return target, nil
}
