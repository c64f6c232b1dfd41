// Command probe is the client host's view of the tunnel on the local
// stack's site (cluster/site): run in the client host's namespace, it
// connects to the tenant service through the tunnel (the claim's exposure,
// 100.64.0.10:443) every interval, each connection with a short timeout,
// reads the address the service saw it come from (cluster/site/echo) and
// prints each change of the gateway that carried it: the first answer, a
// stop of the answers, and the first answer via another gateway with the
// outage, from the last answer via the old one to the first via the new
// one, in milliseconds. With -json each change is one JSON line (Event).
//
// Usage (site.sh probe runs it in the client host's namespace):
//
//	probe [-target 100.64.0.10:443] [-interval 50ms] [-timeout 500ms] [-for 0] [-json]
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"
)

// A result is what one connection got.
type result struct {
	begun, at time.Time
	via       string // the address the service saw, "" on error
	err       error
}

func main() {
	target := flag.String("target", "100.64.0.10:443", "the echo service's address through the tunnel")
	interval := flag.Duration("interval", 50*time.Millisecond, "time between connections")
	timeout := flag.Duration("timeout", 500*time.Millisecond, "how long one connection may take to answer")
	duration := flag.Duration("for", 0, "stop after this long; 0 runs until SIGINT or SIGTERM")
	asJSON := flag.Bool("json", false, "print each change as a JSON line")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if *duration > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, *duration)
		defer cancel()
	}
	// Connections overlap when they take longer than interval: at most
	// timeout/interval+1 of them, so the channel never blocks one.
	results := make(chan result, int(*timeout / *interval)+2)
	tick := time.NewTicker(*interval)
	defer tick.Stop()
	var tr tracker
	out := json.NewEncoder(os.Stdout)
	attempts, answers := 0, 0
	for {
		select {
		case <-ctx.Done():
			fmt.Fprintf(os.Stderr, "probe: %d connections, %d answered\n", attempts, answers)
			return
		case <-tick.C:
			attempts++
			go func() { results <- ask(*target, *timeout) }()
		case r := <-results:
			var e *Event
			if r.err != nil {
				e = tr.fail(r.begun, r.at, r.err)
			} else {
				answers++
				e = tr.answer(r.begun, r.at, r.via)
			}
			switch {
			case e == nil:
			case *asJSON:
				_ = out.Encode(e) //nolint:errchkjson // to stdout, like the Println beside it: no one to report a failed write to
			default:
				fmt.Println(e)
			}
		}
	}
}

// ask connects to target and reads the echo's line within timeout.
func ask(target string, timeout time.Duration) result {
	r := result{begun: time.Now()}
	r.via, r.err = echo(target, r.begun.Add(timeout))
	r.at = time.Now()
	return r
}

// echo connects to target and returns the host part of the echo's line,
// by deadline.
func echo(target string, deadline time.Time) (string, error) {
	c, err := net.DialTimeout("tcp4", target, time.Until(deadline))
	if err != nil {
		return "", err
	}
	defer c.Close() //nolint:errcheck // the exchange is over: nothing to report
	_ = c.SetDeadline(deadline)
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return "", err
	}
	host, _, err := net.SplitHostPort(strings.TrimSpace(line))
	if err != nil {
		return "", fmt.Errorf("unexpected answer %q", line)
	}
	return host, nil
}
