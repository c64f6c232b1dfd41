// Command gateway-agent runs beside charon in the gateway pod (container
// agent): it loads the mounted configuration into charon over VICI when it
// changes, applies the NAT rules in the pod's network namespace, publishes
// the tunnels' status into the gateway's status ConfigMap and serves
// Prometheus metrics and health probes.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/logging"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/ipsecgw/provider-ipsec/internal/agent/apply"
	"github.com/ipsecgw/provider-ipsec/internal/agent/metrics"
	"github.com/ipsecgw/provider-ipsec/internal/agent/nat"
	"github.com/ipsecgw/provider-ipsec/internal/agent/run"
	"github.com/ipsecgw/provider-ipsec/internal/agent/status"
	"github.com/ipsecgw/provider-ipsec/internal/agent/watchdog"
)

type options struct {
	configDir, secretsDir, viciSocket string
	namespace, statusConfigMap        string
	metricsAddr, healthAddr           string
	interval, poll, publishInterval   time.Duration
	reinitiateAfterSeconds            int
	validate, debug                   bool
}

func parseFlags(args []string) (options, error) {
	var o options
	fs := flag.NewFlagSet("gateway-agent", flag.ContinueOnError)
	fs.StringVar(&o.configDir, "config-dir", "/etc/ipsecgw/config", "Directory of the mounted ConfigMap (swanctl.conf, nat.nft).")
	fs.StringVar(&o.secretsDir, "secrets-dir", "/etc/ipsecgw/secrets", "Directory of the mounted Secret (secrets.conf).")
	fs.StringVar(&o.viciSocket, "vici-socket", "/var/run/charon/charon.vici", "charon's VICI socket.")
	fs.StringVar(&o.namespace, "namespace", os.Getenv("POD_NAMESPACE"), "Namespace of the status ConfigMap (defaults to $POD_NAMESPACE).")
	fs.StringVar(&o.statusConfigMap, "status-configmap", "", "Name of the ConfigMap the tunnel status is written to; empty publishes nothing.")
	fs.StringVar(&o.metricsAddr, "metrics-bind-address", ":9100", "Address of the Prometheus /metrics endpoint.")
	fs.StringVar(&o.healthAddr, "health-probe-bind-address", ":9101", "Address of /healthz and /readyz (ready: configuration loaded and charon answering).")
	fs.DurationVar(&o.interval, "interval", 2*time.Second, "How often the mounted files are checked for a new configuration.")
	fs.DurationVar(&o.poll, "poll", status.DefaultPoll, "How often the tunnels' counters are read from charon.")
	fs.DurationVar(&o.publishInterval, "publish-interval", status.DefaultMinInterval, "Least time between writes of the status ConfigMap once its burst of two is spent.")
	fs.IntVar(&o.reinitiateAfterSeconds, "reinitiate-after-seconds", int(watchdog.DefaultAfter/time.Second),
		"Initiate again an always-on tunnel (startAction start) or CHILD_SA that has been down this many seconds while charon was not trying; 0 never does.")
	fs.BoolVar(&o.validate, "validate", true, "Validate each new configuration in a scratch charon, beside the live one on random ports, before loading it.")
	fs.BoolVar(&o.debug, "debug", false, "Log at debug level.")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if o.reinitiateAfterSeconds < 0 {
		return o, fmt.Errorf("--reinitiate-after-seconds must be 0 or more, not %d", o.reinitiateAfterSeconds)
	}
	if o.statusConfigMap != "" && o.namespace == "" {
		return o, errors.New("--status-configmap needs --namespace or $POD_NAMESPACE")
	}
	return o, nil
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
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	err = runAgent(ctx, o)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "gateway-agent:", err)
		os.Exit(1)
	}
}

func runAgent(ctx context.Context, o options) error {
	zl := zap.New(zap.UseDevMode(o.debug))
	log := logging.NewLogrLogger(zl.WithName("gateway-agent"))
	m := metrics.New()
	reg := prometheus.NewRegistry()
	if err := reg.Register(m); err != nil {
		return err
	}
	ro := run.Options{
		ConfigDir: o.configDir, SecretsDir: o.secretsDir, ViciSocket: o.viciSocket,
		Interval: o.interval, Poll: o.poll, NAT: nat.New(), Metrics: m, Log: log,
		ReinitiateAfter: time.Duration(o.reinitiateAfterSeconds) * time.Second,
	}
	if o.validate {
		ro.Validator = apply.CharonValidator{}
	}
	if o.statusConfigMap != "" {
		c, err := kubeClient()
		if err != nil {
			return err
		}
		ro.Publisher = &status.Publisher{Client: c, Namespace: o.namespace, Name: o.statusConfigMap, MinInterval: o.publishInterval}
	}
	agent := run.New(ro)

	servers := []*http.Server{
		{Addr: o.metricsAddr, Handler: promhttp.HandlerFor(reg, promhttp.HandlerOpts{}), ReadHeaderTimeout: 5 * time.Second},
		{Addr: o.healthAddr, Handler: health(agent), ReadHeaderTimeout: 5 * time.Second},
	}
	for _, s := range servers {
		go func() {
			if err := s.ListenAndServe(); err != nil && !errors.Is(err, http.ErrServerClosed) {
				log.Info("HTTP server stopped", "addr", s.Addr, "error", err)
			}
		}()
	}
	log.Info("Starting", "config", o.configDir, "vici", o.viciSocket, "status", o.statusConfigMap)
	err := agent.Run(ctx)
	shutdown, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	for _, s := range servers {
		_ = s.Shutdown(shutdown)
	}
	log.Info("Stopped")
	return err
}

// health serves /healthz (the process runs) and /readyz (the configuration
// is loaded into a charon that answers).
func health(a *run.Agent) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		if !a.Ready() {
			http.Error(w, "configuration not loaded or charon not answering", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ok")
	})
	return mux
}

// kubeClient returns a client with the pod's own identity (its
// ServiceAccount), or KUBECONFIG out of cluster.
func kubeClient() (client.Client, error) {
	cfg, err := ctrl.GetConfig()
	if err != nil {
		return nil, fmt.Errorf("cannot find the API server: %w", err)
	}
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		return nil, err
	}
	return client.New(cfg, client.Options{Scheme: s})
}
