package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/ipsecgw/provider-ipsec/test/topology"
)

// numbered is the result of attempt n.
type numbered struct {
	n int
	result
}

// probe is the client host's view of the tunnel: from the client host's
// namespace it opens a new TCP connection to the tenant service through
// the tunnel (the claim's exposure, 100.64.0.10:443) every interval, each
// with a short timeout (no connection is reused: each attempt is a fresh
// SYN through the tunnel and the gateway's NAT), reads the address the
// service saw it come from and prints each change of the gateway that
// carried it: the first answer, a stop of the answers, and the first
// answer after them (or via another gateway) with the outage, from the
// last answer before to the first after, in milliseconds. Its resolution
// is the interval (tracker). With -json each change is one JSON line
// (Event). It says on stderr what it measures and, at the end, how many
// connections were answered.
func probe(tp *topology.Topology, args []string) error {
	fs := flag.NewFlagSet("probe", flag.ExitOnError)
	target := fs.String("target", insideService+":443", "the echo service's address through the tunnel")
	interval := fs.Duration("interval", 50*time.Millisecond, "time between connections")
	timeout := fs.Duration("timeout", 500*time.Millisecond, "how long one connection may take to answer")
	duration := fs.Duration("for", 0, "stop after this long; 0 runs until SIGINT or SIGTERM")
	asJSON := fs.Bool("json", false, "print each change as a JSON line")
	_ = fs.Parse(args)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if *duration > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, *duration)
		defer cancel()
	}
	_, host := topology.PeerRoles(0)
	ns := tp.NS(host)
	// Connections overlap when they take longer than interval: at most
	// 2*timeout/interval+1 of them (the connect and the read may each take
	// timeout), so the channel never blocks one.
	results := make(chan numbered, int(2**timeout / *interval)+2)
	tick := time.NewTicker(*interval)
	defer tick.Stop()
	var tr tracker
	out := json.NewEncoder(os.Stdout)
	attempts, answers := 0, 0
	fmt.Fprintf(os.Stderr, "probe: a new TCP connection to %s every %s, timeout %s: outages resolved to %s\n", *target, *interval, *timeout, *interval)
	for {
		select {
		case <-ctx.Done():
			fmt.Fprintf(os.Stderr, "probe: %d connections, %d answered\n", attempts, answers)
			return nil
		case <-tick.C:
			go func(n int) {
				r := result{begun: time.Now()}
				var from string
				if from, r.err = tp.AskWhoAmI(ns, "tcp", *target, *timeout); r.err == nil {
					r.via, _, r.err = net.SplitHostPort(from)
				}
				r.at = time.Now()
				results <- numbered{n, r}
			}(attempts)
			attempts++
		case r := <-results:
			if r.err == nil {
				answers++
			}
			for _, e := range tr.add(r.n, r.result) {
				if *asJSON {
					_ = out.Encode(e) //nolint:errchkjson // its Time is the clock's now, which JSON encodes; a failed write to stdout is ignored as Println's is
				} else {
					fmt.Println(e)
				}
			}
		}
	}
}
