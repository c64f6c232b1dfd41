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
	"net/netip"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/logging"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/ipsecgw/provider-ipsec/internal/agent/apply"
	"github.com/ipsecgw/provider-ipsec/internal/agent/leader"
	"github.com/ipsecgw/provider-ipsec/internal/agent/metrics"
	"github.com/ipsecgw/provider-ipsec/internal/agent/nat"
	"github.com/ipsecgw/provider-ipsec/internal/agent/role"
	"github.com/ipsecgw/provider-ipsec/internal/agent/run"
	"github.com/ipsecgw/provider-ipsec/internal/agent/source"
	"github.com/ipsecgw/provider-ipsec/internal/agent/status"
	"github.com/ipsecgw/provider-ipsec/internal/agent/watchdog"
	"github.com/ipsecgw/provider-ipsec/internal/agent/xfrmlink"
	"github.com/ipsecgw/provider-ipsec/internal/contract"
)

type options struct {
	configDir, secretsDir, viciSocket string
	namespace, statusConfigMap        string
	configMap, secret                 string
	metricsAddr, healthAddr           string
	interval, poll, publishInterval   time.Duration
	reinitiateAfterSeconds            int
	unansweredAfterSeconds            int
	validate, debug                   bool
	// Active/standby (--lease): the Lease, this pod and its node, and the
	// address the active pod holds.
	lease, podName, nodeName string
	iface, address           string
	addressUp, addressDown   string
}

func parseFlags(args []string) (options, error) {
	var o options
	fs := flag.NewFlagSet("gateway-agent", flag.ContinueOnError)
	fs.StringVar(&o.configDir, contract.FlagConfigDir, contract.ConfigDir, "Directory of the mounted ConfigMap (swanctl.conf, nat.nft).")
	fs.StringVar(&o.secretsDir, contract.FlagSecretsDir, contract.SecretsDir, "Directory of the mounted Secret (secrets.conf).")
	fs.StringVar(&o.viciSocket, contract.FlagViciSocket, contract.ViciSocket, "charon's VICI socket.")
	fs.StringVar(&o.namespace, "namespace", os.Getenv(contract.EnvPodNamespace), "Namespace of the status ConfigMap (defaults to $POD_NAMESPACE).")
	fs.StringVar(&o.configMap, contract.FlagConfigConfigMap, "", "Name of the ConfigMap in --namespace mounted at --config-dir: with --secret, the agent watches both through the API server and loads a change within a second; empty reads only the mounted files (every --interval; the kubelet updates them within about a minute).")
	fs.StringVar(&o.secret, contract.FlagSecret, "", "Name of the Secret in --namespace mounted at --secrets-dir (see --config-configmap).")
	fs.StringVar(&o.statusConfigMap, contract.FlagStatusConfigMap, "", "Name of the ConfigMap the tunnel status is written to; empty publishes nothing.")
	fs.StringVar(&o.metricsAddr, "metrics-bind-address", fmt.Sprintf(":%d", contract.MetricsPort), "Address of the Prometheus /metrics endpoint.")
	fs.StringVar(&o.healthAddr, "health-probe-bind-address", fmt.Sprintf(":%d", contract.HealthPort), "Address of /healthz and /readyz (ready: configuration loaded and charon answering).")
	fs.DurationVar(&o.interval, "interval", 2*time.Second, "How often the mounted files are checked for a new configuration.")
	fs.DurationVar(&o.poll, "poll", status.DefaultPoll, "How often the tunnels' counters are read from charon.")
	fs.DurationVar(&o.publishInterval, "publish-interval", status.DefaultMinInterval, "Least time between writes of the status ConfigMap once its burst of two is spent.")
	fs.IntVar(&o.reinitiateAfterSeconds, "reinitiate-after-seconds", int(watchdog.DefaultAfter/time.Second),
		"Initiate again an always-on tunnel (startAction start) or CHILD_SA that has been down this many seconds while charon was not trying; 0 never does.")
	fs.IntVar(&o.unansweredAfterSeconds, "unanswered-after-seconds", int(watchdog.DefaultUnanswered/time.Second),
		"Report a tunnel down once an exchange on its ESTABLISHED IKE SA (a DPD) has gone unanswered this many seconds, and close and initiate it anew if it is always on; 0 never does (nor does --reinitiate-after-seconds=0).")
	fs.BoolVar(&o.validate, "validate", true, "Validate each new configuration in a scratch charon, beside the live one on random ports, before loading it.")
	fs.BoolVar(&o.debug, "debug", false, "Log at debug level.")
	fs.StringVar(&o.lease, contract.FlagLease, "", "Name of the Lease in --namespace that elects the active pod of an active/standby pair; empty: this pod is the only one and always active.")
	fs.StringVar(&o.podName, "pod-name", os.Getenv(contract.EnvPodName), "This pod's name, its identity in the Lease (defaults to $POD_NAME).")
	fs.StringVar(&o.nodeName, "node-name", os.Getenv(contract.EnvNodeName), "This pod's node, reported while active (defaults to $NODE_NAME).")
	fs.StringVar(&o.iface, contract.FlagInterface, contract.SecondaryInterface, "The interface on the tenant network; without --lease it is silenced (ARP off) on SIGTERM.")
	fs.StringVar(&o.address, contract.FlagAddress, "", "With --lease: the gateway's fixed IP, which only the active pod holds and announces (gratuitous ARP).")
	fs.StringVar(&o.addressUp, contract.FlagAddressUp, "", "With --lease: shell commands that give --interface the address and its routes.")
	fs.StringVar(&o.addressDown, contract.FlagAddressDown, "", "With --lease: shell commands that take the address and its routes away.")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if o.reinitiateAfterSeconds < 0 {
		return o, fmt.Errorf("--reinitiate-after-seconds must be 0 or more, not %d", o.reinitiateAfterSeconds)
	}
	if o.unansweredAfterSeconds < 0 {
		return o, fmt.Errorf("--unanswered-after-seconds must be 0 or more, not %d", o.unansweredAfterSeconds)
	}
	if o.statusConfigMap != "" && o.namespace == "" {
		return o, errors.New("--status-configmap needs --namespace or $POD_NAMESPACE")
	}
	if (o.configMap == "") != (o.secret == "") {
		return o, errors.New("--config-configmap and --secret go together")
	}
	if o.configMap != "" && o.namespace == "" {
		return o, errors.New("--config-configmap needs --namespace or $POD_NAMESPACE")
	}
	if o.lease != "" {
		if o.namespace == "" || o.podName == "" || o.addressUp == "" || o.addressDown == "" {
			return o, errors.New("--lease needs --namespace, --pod-name, --address-up and --address-down")
		}
		if _, err := netip.ParseAddr(o.address); err != nil {
			return o, fmt.Errorf("--address %q is not an IP address", o.address)
		}
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
		UnansweredAfter: time.Duration(o.unansweredAfterSeconds) * time.Second,
	}
	if o.validate {
		ro.Validator = apply.CharonValidator{}
	}
	// The route-mode tunnels' XFRM interfaces, on the tenant network's
	// interface; without route-mode tunnels it only makes sure that none
	// of its interfaces is left.
	xa, errX := xfrmlink.New(contract.SecondaryInterface)
	if errX != nil {
		return errX
	}
	ro.XFRM = xa
	var c client.Client
	var cs kubernetes.Interface
	if o.statusConfigMap != "" || o.lease != "" || o.configMap != "" {
		var err error
		if c, cs, err = kubeClients(); err != nil {
			return err
		}
	}
	if o.configMap != "" {
		api := &source.API{
			Client: cs, Namespace: o.namespace, ConfigMap: o.configMap, Secret: o.secret,
			Fallback: source.Dir{ConfigDir: o.configDir, SecretsDir: o.secretsDir}, Log: log,
		}
		go api.Run(ctx)
		ro.Source = api
	}
	if o.statusConfigMap != "" {
		ro.Publisher = &status.Publisher{Client: c, Namespace: o.namespace, Name: o.statusConfigMap, MinInterval: o.publishInterval}
	}
	handover := role.HandoverLease(o.lease, o.statusConfigMap)
	ro.Standby = o.lease != "" || handover != ""
	agent := run.New(ro)
	m.Leader(!ro.Standby)

	servers := serve(log,
		&http.Server{Addr: o.metricsAddr, Handler: promhttp.HandlerFor(reg, promhttp.HandlerOpts{}), ReadHeaderTimeout: 5 * time.Second},
		&http.Server{Addr: o.healthAddr, Handler: health(agent), ReadHeaderTimeout: 5 * time.Second})
	log.Info("Starting", "config", o.configDir, "vici", o.viciSocket, "status", o.statusConfigMap, "lease", o.lease)
	ropts := role.Options{
		Agent: agent, Metrics: m, Kube: cs, Client: c, Namespace: o.namespace, StatusConfigMap: o.statusConfigMap,
		Pod: o.podName, Node: o.nodeName, Log: log,
	}
	var err error
	if o.lease != "" {
		ip, _ := netip.ParseAddr(o.address) // parseFlags checked it
		err = role.Elected{Options: ropts, Lease: o.lease,
			Address: &leader.Address{Interface: o.iface, IP: ip, Up: o.addressUp, Down: o.addressDown}}.Run(ctx)
	} else {
		err = role.Single{Options: ropts, Interface: leader.Handover{Interface: o.iface}, Lease: handover}.Run(ctx)
	}
	shutdown, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	for _, s := range servers {
		_ = s.Shutdown(shutdown)
	}
	log.Info("Stopped")
	return err
}

// serve starts each server and returns them; one that stops other than
// by Shutdown is logged.
func serve(log logging.Logger, servers ...*http.Server) []*http.Server {
	for _, s := range servers {
		go func() {
			if err := s.ListenAndServe(); err != nil && !errors.Is(err, http.ErrServerClosed) {
				log.Info("HTTP server stopped", "addr", s.Addr, "error", err)
			}
		}()
	}
	return servers
}

// health serves /healthz (the process runs) and /readyz (the configuration
// is loaded into a charon that answers).
func health(a *run.Agent) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc(contract.HealthzPath, func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
	mux.HandleFunc(contract.ReadyzPath, func(w http.ResponseWriter, _ *http.Request) {
		if !a.Ready() {
			http.Error(w, "configuration not loaded or charon not answering", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ok")
	})
	return mux
}

// kubeClients returns a client and a clientset with the pod's own
// identity (its ServiceAccount), or KUBECONFIG out of cluster.
func kubeClients() (client.Client, kubernetes.Interface, error) {
	cfg, err := ctrl.GetConfig()
	if err != nil {
		return nil, nil, fmt.Errorf("cannot find the API server: %w", err)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, nil, err
	}
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		return nil, nil, err
	}
	c, err := client.New(cfg, client.Options{Scheme: s})
	return c, cs, err
}
