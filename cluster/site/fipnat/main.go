// Command fipnat stands in for Neutron's L3 agent on the local stack's site
// (cluster/site): it polls the floating IPs of the real Neutron API (from
// the host's namespace, where the API listens on loopback) and keeps, in
// the router's network namespace, an nftables table of its own in which each
// floating IP associated with a port is DNATed 1:1 to the port's fixed IP
// and that fixed IP SNATed back to the floating IP on the way out of the
// external interface; a disassociated floating IP loses its mapping. When a
// mapping changes it deletes the conntrack entries of the floating IP and
// the fixed IPs involved, as the L3 agent does, so that flows already seen
// (IKE and NAT-T on UDP 500/4500) follow the new mapping instead of the old
// port. Nothing more: no router, no security groups.
//
// Each change is logged as one JSON line on standard output, with the time
// the rules were in place:
//
//	{"time":"…","level":"INFO","msg":"mapped","floating_ip":"203.0.113.10","fixed_ip":"10.20.0.10","port_id":"…","previous":"10.20.0.5"}
//	{"time":"…","level":"INFO","msg":"unmapped","floating_ip":"203.0.113.10","previous":"10.20.0.5"}
//
// Usage (cluster/site/up.sh starts it):
//
//	fipnat -clouds $OS_STATE/clouds.yaml -netns /run/netns/<router> [-cloud admin] [-interval 500ms] [-tenant tenant] [-external external]
package main

import (
	"context"
	"flag"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"
)

func main() {
	clouds := flag.String("clouds", "", "path of the clouds.yaml with the Neutron credentials")
	cloud := flag.String("cloud", "admin", "the cloud of clouds.yaml to use; an admin sees every project's floating IPs, as the L3 agent does")
	interval := flag.Duration("interval", 500*time.Millisecond, "how often to read the floating IPs")
	tenant := flag.String("tenant", "tenant", "the interface of the tenant network (the router's interface on it)")
	external := flag.String("external", "external", "the interface of the external network")
	netns := flag.String("netns", "", "the router's network namespace (a path such as /run/netns/NAME) the rules go into")
	flag.Parse()
	log := slog.New(slog.NewJSONHandler(os.Stdout, nil))
	if *clouds == "" || *netns == "" {
		log.Error("-clouds and -netns are required")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	fips, err := newNeutron(ctx, *clouds, *cloud)
	if err != nil {
		log.Error("cannot connect to Neutron", "error", err)
		os.Exit(1) //nolint:gocritic // exitAfterDefer: stop only releases the signal handler
	}
	r := &router{netns: *netns, tenant: *tenant, external: *external, log: log}
	if err := r.loop(ctx, fips, *interval); err != nil {
		log.Error("stopped", "error", err)
		os.Exit(1)
	}
}
