// Package source gives the gateway agent the gateway's configuration: the
// rendered files of its ConfigMap (swanctl.conf, nat.nft, strongswan.conf)
// and Secret (secrets.conf), read either from the directories the pod
// mounts them in (Dir) or, within seconds of a change, through the API
// server (API).
//
// The mounted volumes alone are slow to follow a change: the kubelet
// refreshes a ConfigMap or Secret volume of a running pod only when it
// syncs the pod, about once a minute (its sync period, plus the TTL of
// its object cache with the Ttl change detection strategy), so a tunnel
// edit would reach charon up to a minute or more after the provider
// applied it. API watches both objects by name (the agent's Role grants
// get and watch on them and nothing else) and hands every change to the
// agent at once; the volumes remain the start-up source until the API
// server has answered, so a pod that starts while the API server is away
// still loads the configuration it was started with.
package source

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/logging"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"

	"github.com/ipsecgw/provider-ipsec/internal/render"
	"github.com/ipsecgw/provider-ipsec/internal/workload"
)

// Files are one snapshot of a gateway's configuration, as rendered.
type Files struct {
	// SwanctlConf, NATRules, StrongSwanConf and XFRMInterfaces are the
	// ConfigMap's files (all but SwanctlConf nil when absent).
	SwanctlConf, NATRules, StrongSwanConf, XFRMInterfaces []byte
	// Secrets is the Secret's secrets.conf. It holds the PSKs: never log
	// it.
	Secrets []byte
}

// Hash returns render.ConfigHash of f: the provider's
// status.atProvider.configHash of the rendering f came from.
func (f Files) Hash() string {
	return render.ConfigHash(f.SwanctlConf, f.NATRules, f.StrongSwanConf, f.XFRMInterfaces)
}

// A Source gives the agent the current configuration.
type Source interface {
	// Read returns the current files.
	Read() (Files, error)
	// Changed receives a value when the files may have changed since the
	// last Read; nil for a source that is only read on the agent's tick.
	Changed() <-chan struct{}
}

// Dir reads the mounted ConfigMap from ConfigDir and the mounted Secret
// from SecretsDir (the kubelet swaps their contents atomically through a
// symlink). It has no Changed signal: the agent reads it every tick.
type Dir struct {
	ConfigDir, SecretsDir string
}

// Read returns the mounted files; a missing nat.nft, strongswan.conf or
// xfrm.json is nil, a missing swanctl.conf or secrets.conf an error.
func (d Dir) Read() (Files, error) {
	var f Files
	var err error
	if f.SwanctlConf, err = os.ReadFile(filepath.Join(d.ConfigDir, workload.KeySwanctlConf)); err != nil {
		return Files{}, err
	}
	if f.Secrets, err = os.ReadFile(filepath.Join(d.SecretsDir, workload.KeySecrets)); err != nil {
		return Files{}, err
	}
	if f.NATRules, err = os.ReadFile(filepath.Join(d.ConfigDir, workload.KeyNATRules)); err != nil && !os.IsNotExist(err) {
		return Files{}, err
	}
	if f.StrongSwanConf, err = os.ReadFile(filepath.Join(d.ConfigDir, workload.KeyStrongSwanConf)); err != nil && !os.IsNotExist(err) {
		return Files{}, err
	}
	if f.XFRMInterfaces, err = os.ReadFile(filepath.Join(d.ConfigDir, workload.KeyXFRMInterfaces)); err != nil && !os.IsNotExist(err) {
		return Files{}, err
	}
	return f, nil
}

// Changed returns nil: the directories are read every tick.
func (Dir) Changed() <-chan struct{} { return nil }

// Retry is how long API waits before watching again after a watch ended
// or failed.
const Retry = time.Second

// API follows the gateway's ConfigMap and Secret through the API server:
// one watch on each, by name (a field selector on metadata.name, which
// RBAC authorizes as a watch of that one object). A watch opened without a
// resource version starts with the object as it is, so a watch that ends
// (the API server closes them after a while, or restarts) is opened again
// after Retry and loses nothing. Until both objects were read, Read returns
// Fallback's files; from then on the API's, which are never older than
// the volumes' (the provider writes through the API server). A deleted
// object leaves the last content in place: the provider recreates it.
type API struct {
	Client    kubernetes.Interface
	Namespace string
	// ConfigMap and Secret are the names of the gateway's objects.
	ConfigMap, Secret string
	// Fallback is read until the API server has answered for both.
	Fallback Source
	Log      logging.Logger

	once    sync.Once
	changed chan struct{}

	mu     sync.Mutex
	config map[string]string
	secret []byte
	// seenConfig and seenSecret say whether the watch delivered the object.
	seenConfig, seenSecret bool
}

func (a *API) init() {
	a.once.Do(func() { a.changed = make(chan struct{}, 1) })
}

// Changed receives a value after each change an API watch delivered.
func (a *API) Changed() <-chan struct{} {
	a.init()
	return a.changed
}

// Read returns the files the API server last delivered, or Fallback's
// until it delivered both objects.
func (a *API) Read() (Files, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if !a.seenConfig || !a.seenSecret {
		return a.Fallback.Read()
	}
	f := Files{SwanctlConf: []byte(a.config[workload.KeySwanctlConf]), Secrets: a.secret}
	if v, ok := a.config[workload.KeyNATRules]; ok {
		f.NATRules = []byte(v)
	}
	if v, ok := a.config[workload.KeyStrongSwanConf]; ok {
		f.StrongSwanConf = []byte(v)
	}
	if v, ok := a.config[workload.KeyXFRMInterfaces]; ok {
		f.XFRMInterfaces = []byte(v)
	}
	return f, nil
}

// Run watches the ConfigMap and the Secret until ctx ends.
func (a *API) Run(ctx context.Context) {
	a.init()
	if a.Log == nil {
		a.Log = logging.NewNopLogger()
	}
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		a.follow(ctx, "ConfigMap "+a.ConfigMap, func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.FieldSelector = fields.OneTermEqualSelector("metadata.name", a.ConfigMap).String()
			return a.Client.CoreV1().ConfigMaps(a.Namespace).Watch(ctx, o)
		})
	}()
	go func() {
		defer wg.Done()
		a.follow(ctx, "Secret "+a.Secret, func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.FieldSelector = fields.OneTermEqualSelector("metadata.name", a.Secret).String()
			return a.Client.CoreV1().Secrets(a.Namespace).Watch(ctx, o)
		})
	}()
	wg.Wait()
}

// follow runs one object's watch, opened again after Retry whenever it
// ends, until ctx ends.
func (a *API) follow(ctx context.Context, what string, open func(context.Context, metav1.ListOptions) (watch.Interface, error)) {
	for ctx.Err() == nil {
		w, err := open(ctx, metav1.ListOptions{})
		if err != nil {
			a.Log.Info("Cannot watch the gateway's configuration; the last one read stays", "object", what, "error", err)
		} else {
			a.deliver(ctx, w)
		}
		select {
		case <-ctx.Done():
		case <-time.After(Retry):
		}
	}
}

// deliver takes every event of w until it ends or ctx does.
func (a *API) deliver(ctx context.Context, w watch.Interface) {
	defer w.Stop()
	for {
		var ev watch.Event
		var ok bool
		select {
		case <-ctx.Done():
			return
		case ev, ok = <-w.ResultChan():
		}
		if !ok {
			return
		}
		if ev.Type != watch.Added && ev.Type != watch.Modified {
			continue
		}
		a.mu.Lock()
		switch o := ev.Object.(type) {
		case *corev1.ConfigMap:
			a.config, a.seenConfig = o.Data, true
		case *corev1.Secret:
			a.secret, a.seenSecret = o.Data[workload.KeySecrets], true
		}
		a.mu.Unlock()
		select {
		case a.changed <- struct{}{}:
		default:
		}
	}
}
