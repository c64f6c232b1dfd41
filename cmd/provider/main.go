// Command provider runs provider-ipsec's controllers: the Crossplane provider
// that gives tenants site-to-site IPsec VPN gateways on Kubernetes clusters
// hosted on OpenStack. In cluster it uses its ServiceAccount; out of cluster
// it uses KUBECONFIG (or --kubeconfig).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/controller"
	"github.com/crossplane/crossplane-runtime/v2/pkg/feature"
	"github.com/crossplane/crossplane-runtime/v2/pkg/gate"
	"github.com/crossplane/crossplane-runtime/v2/pkg/logging"
	"github.com/crossplane/crossplane-runtime/v2/pkg/ratelimiter"
	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/customresourcesgate"
	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"
	"github.com/crossplane/crossplane-runtime/v2/pkg/statemetrics"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/ipsecgw/provider-ipsec/apis"
	"github.com/ipsecgw/provider-ipsec/internal/clients/openstack"
	ipsecctrl "github.com/ipsecgw/provider-ipsec/internal/controller"
	"github.com/ipsecgw/provider-ipsec/internal/controller/gateway"
	"github.com/ipsecgw/provider-ipsec/internal/controller/mrsetup"
)

// options are the provider's command-line flags. The names of the first five
// are those every Crossplane provider takes.
type options struct {
	debug              bool
	poll               time.Duration
	sync               time.Duration
	maxReconcileRate   int
	leaderElection     bool
	leaderElectionNS   string
	metricsAddr        string
	healthAddr         string
	pollStateMetrics   time.Duration
	managementPolicies bool
	requestTimeout     time.Duration
	requestRate        float64
	gatewayImage       string
}

func parseFlags(args []string) (options, error) {
	var o options
	fs := flag.NewFlagSet("provider", flag.ContinueOnError)
	fs.BoolVar(&o.debug, "debug", false, "Log at debug level, in a human-readable format.")
	fs.BoolVar(&o.debug, "d", false, "Shorthand for --debug.")
	fs.DurationVar(&o.poll, "poll", time.Minute, "How often each managed resource is checked for drift from its external resource.")
	fs.DurationVar(&o.sync, "sync", time.Hour, "How often all watched objects are resynced from the API server's cache.")
	fs.IntVar(&o.maxReconcileRate, "max-reconcile-rate", 10, "Most reconciles per second across all controllers; also each controller's concurrency.")
	fs.BoolVar(&o.leaderElection, "leader-election", false, "Elect a leader so that only one replica reconciles at a time.")
	fs.StringVar(&o.leaderElectionNS, "leader-election-namespace", envOr("POD_NAMESPACE", "crossplane-system"), "Namespace of the leader election Lease (defaults to $POD_NAMESPACE).")
	fs.StringVar(&o.metricsAddr, "metrics-bind-address", ":8080", "Address of the Prometheus /metrics endpoint; 0 turns it off.")
	fs.StringVar(&o.healthAddr, "health-probe-bind-address", ":8081", "Address of the /healthz and /readyz probes.")
	fs.DurationVar(&o.pollStateMetrics, "poll-state-metric", 5*time.Second, "How often managed resource state metrics are recorded.")
	fs.BoolVar(&o.managementPolicies, "enable-management-policies", true, "Honour spec.managementPolicies of managed resources.")
	fs.DurationVar(&o.requestTimeout, "openstack-request-timeout", openstack.DefaultRequestTimeout, "Longest wait for one OpenStack API request; an interrupted create is concluded to have made nothing only 1.5 times this after it was sent.")
	fs.Float64Var(&o.requestRate, "openstack-request-rate", openstack.DefaultRequestRate, "Most OpenStack API requests a second for each ProviderConfig (a token bucket, bursts of twice that); a request that would wait more than 5 s for its slot is not sent and its resource retries later.")
	fs.StringVar(&o.gatewayImage, "gateway-image", gateway.DefaultImage, "Image of the gateway pods of a Gateway that names none (spec.forProvider.images), such as REGISTRY/ipsecgw/gateway:v0.1.0; written into each such Gateway when first observed, so a later change restarts no running gateway.")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if o.requestTimeout <= 0 {
		return o, fmt.Errorf("--openstack-request-timeout must be positive, not %s", o.requestTimeout)
	}
	if o.requestRate <= 0 {
		return o, fmt.Errorf("--openstack-request-rate must be positive, not %g", o.requestRate)
	}
	if o.gatewayImage == "" || len(o.gatewayImage) > 512 {
		return o, fmt.Errorf("--gateway-image must be an image reference of 1 to 512 characters, not %q", o.gatewayImage)
	}
	if o.maxReconcileRate < 1 {
		return o, fmt.Errorf("--max-reconcile-rate must be at least 1, not %d", o.maxReconcileRate)
	}
	return o, nil
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

func main() {
	o, err := parseFlags(os.Args[1:])
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(0)
		}
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "provider-ipsec:", err)
		os.Exit(1)
	}
}

func run(o options) error {
	zl := zap.New(zap.UseDevMode(o.debug))
	log := logging.NewLogrLogger(zl.WithName("provider-ipsec"))
	ctrl.SetLogger(zl)
	log.Debug("Starting", "poll", o.poll, "sync", o.sync, "max-reconcile-rate", o.maxReconcileRate)

	cfg, err := ctrl.GetConfig()
	if err != nil {
		return fmt.Errorf("cannot find the API server (set KUBECONFIG out of cluster): %w", err)
	}
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		return fmt.Errorf("cannot add Kubernetes types to scheme: %w", err)
	}
	if err := apis.AddToScheme(s); err != nil {
		return fmt.Errorf("cannot add provider-ipsec types to scheme: %w", err)
	}
	// The CRD gate reads CustomResourceDefinitions.
	if err := apiextensionsv1.AddToScheme(s); err != nil {
		return fmt.Errorf("cannot add CustomResourceDefinitions to scheme: %w", err)
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme: s,
		Cache: cache.Options{SyncPeriod: &o.sync, ByObject: map[client.Object]cache.ByObject{
			// The gate reads only a CRD's names, versions and conditions:
			// the cache keeps every CRD of the cluster without its schema.
			&apiextensionsv1.CustomResourceDefinition{}: {Transform: customresourcesgate.TransformStripCRDSchema},
		}},
		Metrics:                    metricsserver.Options{BindAddress: o.metricsAddr},
		HealthProbeBindAddress:     o.healthAddr,
		LeaderElection:             o.leaderElection,
		LeaderElectionID:           "crossplane-leader-election-provider-ipsec",
		LeaderElectionNamespace:    o.leaderElectionNS,
		LeaderElectionResourceLock: "leases",
		LeaseDuration:              ptr.To(60 * time.Second),
		RenewDeadline:              ptr.To(50 * time.Second),
	})
	if err != nil {
		return fmt.Errorf("cannot create controller manager: %w", err)
	}
	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return fmt.Errorf("cannot add health check: %w", err)
	}
	if err := mgr.AddReadyzCheck("cache", func(req *http.Request) error {
		if !mgr.GetCache().WaitForCacheSync(req.Context()) {
			return errors.New("informer caches have not synced")
		}
		return nil
	}); err != nil {
		return fmt.Errorf("cannot add readiness check: %w", err)
	}

	mrMetrics := managed.NewMRMetricRecorder()
	stateMetrics := statemetrics.NewMRStateMetrics()
	openstackMetrics := openstack.NewMetrics()
	metrics.Registry.MustRegister(mrMetrics, stateMetrics, openstackMetrics)

	co := controller.Options{
		Logger:                  log,
		MaxConcurrentReconciles: o.maxReconcileRate,
		PollInterval:            o.poll,
		GlobalRateLimiter:       ratelimiter.NewGlobal(o.maxReconcileRate),
		Features:                &feature.Flags{},
		// Safe start: each controller starts once its kind's CRD is
		// established (the package's safe-start capability; see
		// ipsecctrl.SetupGated).
		Gate: new(gate.Gate[schema.GroupVersionKind]),
		MetricOptions: &controller.MetricOptions{
			PollStateMetricInterval: o.pollStateMetrics,
			MRMetrics:               mrMetrics,
			MRStateMetrics:          stateMetrics,
		},
	}
	if o.managementPolicies {
		co.Features.Enable(feature.EnableBetaManagementPolicies)
		log.Info("Beta feature enabled", "flag", feature.EnableBetaManagementPolicies)
	}
	credentials, err := mrsetup.WatchCredentials(mgr)
	if err != nil {
		return err
	}
	// The cluster's identity goes into the marker of every Neutron object
	// the provider creates, so that an MR applied again under its name
	// adopts its object and no other cluster's MR of the same name does.
	cluster, err := openstack.ClusterID(context.Background(), mgr.GetAPIReader())
	if err != nil {
		return err
	}
	openstack.SetCluster(cluster)
	oc := openstack.NewClients()
	oc.RequestTimeout = o.requestTimeout
	oc.RequestRate = o.requestRate
	// A failing Neutron or Keystone is probed at least every half poll,
	// so that the resources are back within a poll of its return.
	oc.MaxBackoff = o.poll / 2
	oc.Metrics = openstackMetrics
	oc.Credentials = credentials
	oc.IdleConnsPerHost = o.maxReconcileRate
	if err := customresourcesgate.Setup(mgr, co); err != nil {
		return fmt.Errorf("cannot set up the CRD gate: %w", err)
	}
	if err := ipsecctrl.SetupGated(mgr, co, ipsecctrl.Dependencies{OpenStack: oc, GatewayImage: o.gatewayImage}); err != nil {
		return fmt.Errorf("cannot set up controllers: %w", err)
	}
	log.Info("Starting manager", "metrics", o.metricsAddr, "health", o.healthAddr, "leader-election", o.leaderElection)
	return mgr.Start(ctrl.SetupSignalHandler())
}
