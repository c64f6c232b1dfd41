// Command echo is the tenant service of the local stack's site
// (cluster/site): it listens on TCP and answers every connection with the
// address and port it came from, one line ("10.20.0.5:41234\n"): what the
// service sees after every
// NAT on the way, so a client knows which gateway carried it.
//
// Usage (in the tenant service's namespace; cluster/site/up.sh starts it):
//
//	echo [-listen :443]
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"net"
	"os/signal"
	"syscall"
	"time"
)

// answerTimeout bounds how long a TCP connection may take to take its
// answer.
const answerTimeout = 5 * time.Second

func main() {
	listen := flag.String("listen", ":443", "TCP address to listen on")
	flag.Parse()
	ln, err := net.Listen("tcp4", *listen)
	if err != nil {
		log.Fatal(err)
	}
	log.Printf("answering on tcp %s", *listen)
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		_ = ln.Close()
	}()
	serveTCP(ln)
}

// serveTCP answers every connection of ln until ln is closed.
func serveTCP(ln net.Listener) {
	for {
		c, err := ln.Accept()
		if errors.Is(err, net.ErrClosed) {
			return
		}
		if err != nil {
			log.Print(err)
			continue
		}
		go func() {
			defer c.Close() //nolint:errcheck // the exchange is over: nothing to report
			_ = c.SetDeadline(time.Now().Add(answerTimeout))
			_, _ = fmt.Fprintln(c, c.RemoteAddr())
		}()
	}
}
