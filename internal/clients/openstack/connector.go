package openstack

import (
	"context"
	"errors"
	"fmt"

	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
	"github.com/gophercloud/gophercloud/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ipsecgw/provider-ipsec/apis/cluster/v1alpha1"
	nsv1alpha1 "github.com/ipsecgw/provider-ipsec/apis/namespaced/v1alpha1"
)

// Errors of the resolution of a managed resource's ProviderConfig.
const (
	errTrackUsage = "cannot track ProviderConfig usage"
	errNoPCRef    = "spec.providerConfigRef is not set"
)

// A Connector gives a managed resource the Neutron client of its
// ProviderConfig, recording the use of that ProviderConfig first. The
// OpenStack kinds' connectors embed one; it serves both scopes.
type Connector struct {
	// Kube reads ProviderConfigs, ClusterProviderConfigs and credential
	// Secrets: in the provider a clients.WatchedSecrets, which watches
	// only the Secrets it reads.
	Kube client.Reader
	// Usage records the ProviderConfigUsages (ipsecgw.io) of cluster-scoped
	// managed resources.
	Usage resource.LegacyTracker
	// ModernUsage records the ProviderConfigUsages (m.ipsecgw.io) of
	// namespaced managed resources.
	ModernUsage resource.ModernTracker
	// Clients caches authenticated clients per ProviderConfig.
	Clients *Clients
}

// Network resolves mg's ProviderConfig, tracks mg's use of it and returns a Neutron
// client for it: for a cluster-scoped mg its ProviderConfig (ipsecgw.io),
// for a namespaced one its ProviderConfig of its own namespace or its
// ClusterProviderConfig (m.ipsecgw.io; see ResolveConfig). Errors name the
// ProviderConfig and what failed.
func (c *Connector) Network(ctx context.Context, mg resource.Managed) (*gophercloud.ServiceClient, error) {
	// Resolved first: a config mg may not use (another namespace's, a
	// ClusterProviderConfig that does not select mg's namespace) gets no
	// usage that would hold it.
	cfg, err := ResolveConfig(ctx, c.Kube, mg)
	if err != nil {
		return nil, err
	}
	switch m := mg.(type) {
	case resource.ModernManaged:
		if err := c.ModernUsage.Track(ctx, m); err != nil {
			return nil, fmt.Errorf(errTrackUsage+": %w", err)
		}
	case resource.LegacyManaged: //nolint:staticcheck // SA1019: the cluster-scoped kinds are legacy managed resources
		if err := c.Usage.Track(ctx, m); err != nil {
			return nil, fmt.Errorf(errTrackUsage+": %w", err)
		}
	}
	return c.Clients.NetworkFor(ctx, c.Kube, cfg)
}

// A Config is the ProviderConfig or ClusterProviderConfig a managed
// resource uses, as Clients needs it.
type Config struct {
	// Key identifies the config among every kind and namespace, for the
	// client cache and the Gate (and the request metrics): the name of a
	// cluster-scoped ProviderConfig (ipsecgw.io), "<namespace>/<name>" of
	// a namespaced ProviderConfig, "ClusterProviderConfig/<name>" of a
	// ClusterProviderConfig. Names and namespaces hold no "/" and
	// namespaces no capitals, so no two configs share a key.
	Key string
	// Name names it in errors: "ProviderConfig default",
	// "ProviderConfig tenant-a/default", "ClusterProviderConfig default".
	Name string
	// Credentials are its OpenStack credentials. A namespaced
	// ProviderConfig's Secrets are in its own namespace.
	Credentials v1alpha1.OpenStackCredentials
	// Cluster is the cluster its Gateways run in and whose Nodes its
	// NodeAddressPairs read; a namespaced ProviderConfig's kubeconfig
	// Secret is in its own namespace.
	Cluster v1alpha1.ClusterCredentials
}

// ClusterConfig is the Config of a cluster-scoped ProviderConfig
// (ipsecgw.io), whose Secrets may be in any namespace.
func ClusterConfig(pc *v1alpha1.ProviderConfig) Config {
	return Config{Key: pc.Name, Name: "ProviderConfig " + pc.Name, Credentials: pc.Spec.Credentials, Cluster: pc.Spec.Cluster}
}

// ResolveConfig reads the ProviderConfig mg names. A cluster-scoped mg
// names a ProviderConfig of ipsecgw.io. A namespaced mg names, by
// spec.providerConfigRef.kind, a ProviderConfig of m.ipsecgw.io in mg's
// own namespace (the reference has no namespace: another namespace's
// cannot be named) or a ClusterProviderConfig whose spec.namespaceSelector
// selects mg's namespace; a namespaced
// ProviderConfig whose Secrets are in another namespace is refused, so
// that a tenant's ProviderConfig cannot read another namespace's
// credentials. Errors name the field at fault and the fix.
func ResolveConfig(ctx context.Context, kube client.Reader, mg resource.Managed) (Config, error) {
	m, ok := mg.(resource.ModernManaged)
	if !ok {
		lm, ok := mg.(resource.LegacyManaged) //nolint:staticcheck // SA1019: the cluster-scoped kinds are legacy managed resources
		if !ok {
			return Config{}, fmt.Errorf("%s is neither a namespaced nor a cluster-scoped managed resource", mg.GetName())
		}
		ref := lm.GetProviderConfigReference()
		if ref == nil {
			return Config{}, errors.New(errNoPCRef)
		}
		pc := &v1alpha1.ProviderConfig{}
		if err := kube.Get(ctx, types.NamespacedName{Name: ref.Name}, pc); err != nil {
			return Config{}, fmt.Errorf("cannot get ProviderConfig %s: %w", ref.Name, err)
		}
		return ClusterConfig(pc), nil // its Key is ConfigKey(mg), the name
	}
	ref := m.GetProviderConfigReference()
	if ref == nil {
		return Config{}, errors.New(errNoPCRef)
	}
	switch ref.Kind {
	case nsv1alpha1.ClusterProviderConfigKind:
		cpc := &nsv1alpha1.ClusterProviderConfig{}
		if err := kube.Get(ctx, types.NamespacedName{Name: ref.Name}, cpc); err != nil {
			return Config{}, fmt.Errorf("cannot get ClusterProviderConfig %s: %w", ref.Name, err)
		}
		if err := selects(ctx, kube, cpc, m.GetNamespace()); err != nil {
			return Config{}, err
		}
		return Config{Key: ConfigKey(mg), Name: nsv1alpha1.ClusterProviderConfigKind + " " + ref.Name,
			Credentials: cpc.Spec.Credentials, Cluster: cpc.Spec.Cluster}, nil
	case nsv1alpha1.ProviderConfigKind:
		ns := m.GetNamespace()
		pc := &nsv1alpha1.ProviderConfig{}
		if err := kube.Get(ctx, types.NamespacedName{Namespace: ns, Name: ref.Name}, pc); err != nil {
			return Config{}, fmt.Errorf("cannot get ProviderConfig %s/%s (spec.providerConfigRef names a ProviderConfig of the resource's own namespace): %w", ns, ref.Name, err)
		}
		cfg := Config{Key: ConfigKey(mg), Name: "ProviderConfig " + ns + "/" + ref.Name, Credentials: pc.Spec.Credentials, Cluster: pc.Spec.Cluster}
		if err := ownNamespace(cfg, ns); err != nil {
			return Config{}, err
		}
		return cfg, nil
	default:
		return Config{}, fmt.Errorf("spec.providerConfigRef.kind %q is not %s or %s: name a %s of namespace %s or a %s",
			ref.Kind, nsv1alpha1.ProviderConfigKind, nsv1alpha1.ClusterProviderConfigKind, nsv1alpha1.ProviderConfigKind, m.GetNamespace(), nsv1alpha1.ClusterProviderConfigKind)
	}
}

// selects refuses a ClusterProviderConfig whose spec.namespaceSelector does
// not select the namespace ns by its labels (unset: none), naming the field
// and the fix, so that a tenant cannot use credentials the platform offers
// to other namespaces only.
func selects(ctx context.Context, kube client.Reader, cpc *nsv1alpha1.ClusterProviderConfig, ns string) error {
	if cpc.Spec.NamespaceSelector == nil {
		return fmt.Errorf("%s %s has no spec.namespaceSelector, so no namespace may use it: "+
			"name a ProviderConfig of namespace %s in spec.providerConfigRef, or have the platform select namespace %s in the ClusterProviderConfig's spec.namespaceSelector ({} selects every namespace)",
			nsv1alpha1.ClusterProviderConfigKind, cpc.Name, ns, ns)
	}
	sel, err := metav1.LabelSelectorAsSelector(cpc.Spec.NamespaceSelector)
	if err != nil {
		return fmt.Errorf("%s %s: spec.namespaceSelector: %w", nsv1alpha1.ClusterProviderConfigKind, cpc.Name, err)
	}
	n := &corev1.Namespace{}
	if err := kube.Get(ctx, types.NamespacedName{Name: ns}, n); err != nil {
		return fmt.Errorf("cannot get Namespace %s to match it against %s %s's spec.namespaceSelector: %w", ns, nsv1alpha1.ClusterProviderConfigKind, cpc.Name, err)
	}
	if !sel.Matches(labels.Set(n.GetLabels())) {
		return fmt.Errorf("%s %s: spec.namespaceSelector (%s) does not select namespace %s: "+
			"name a ProviderConfig of namespace %s in spec.providerConfigRef, or have the platform label the namespace or widen the selector",
			nsv1alpha1.ClusterProviderConfigKind, cpc.Name, sel, ns, ns)
	}
	return nil
}

// ConfigKey is the Config.Key of the config mg names, known without reading
// it: the name of a cluster-scoped mg's ProviderConfig,
// "<namespace>/<name>" of a namespaced mg's ProviderConfig,
// "ClusterProviderConfig/<name>" of its ClusterProviderConfig; "" when mg
// names none.
func ConfigKey(mg resource.Managed) string {
	switch m := mg.(type) {
	case resource.ModernManaged:
		ref := m.GetProviderConfigReference()
		switch {
		case ref == nil:
			return ""
		case ref.Kind == nsv1alpha1.ClusterProviderConfigKind:
			return nsv1alpha1.ClusterProviderConfigKind + "/" + ref.Name
		default:
			return m.GetNamespace() + "/" + ref.Name
		}
	case resource.LegacyManaged: //nolint:staticcheck // SA1019: the cluster-scoped kinds are legacy managed resources
		if ref := m.GetProviderConfigReference(); ref != nil {
			return ref.Name
		}
	}
	return ""
}

// ownNamespace refuses a namespaced ProviderConfig's Secret (of OpenStack
// credentials, CA bundle or the target cluster's kubeconfig) of another
// namespace than ns, naming the field and the fix.
func ownNamespace(cfg Config, ns string) error {
	cr := cfg.Credentials
	for _, s := range []struct {
		field string
		ref   *xpv2.SecretKeySelector
	}{
		{"spec.credentials.secretRef.namespace", cr.SecretRef},
		{"spec.credentials.caBundleSecretRef.namespace", cr.CABundleSecretRef},
		{"spec.cluster.secretRef.namespace", cfg.Cluster.SecretRef},
	} {
		if s.ref != nil && s.ref.Namespace != ns {
			return fmt.Errorf("%s: %s is %q, but a namespaced ProviderConfig reads Secrets of its own namespace only: "+
				"set it to %q and keep the Secret there, or use a ClusterProviderConfig", cfg.Name, s.field, s.ref.Namespace, ns)
		}
	}
	return nil
}
