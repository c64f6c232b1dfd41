package topology

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"testing"
	"time"
)

// ServeWhoAmI listens on network ("tcp" or "udp") address addr in namespace
// ns, as a tenant service or client host would, and answers every TCP
// connection or UDP datagram with the address and port it came from, one
// line: what the listener sees after every NAT on the way. It stops when t
// ends.
func (tp *Topology) ServeWhoAmI(t testing.TB, ns, network, addr string) {
	t.Helper()
	var ln net.Listener
	var pc net.PacketConn
	err := tp.Do(ns, func() error {
		var err error
		if network == "udp" {
			pc, err = net.ListenPacket("udp4", addr)
		} else {
			ln, err = net.Listen("tcp4", addr)
		}
		return err
	})
	if err != nil {
		t.Fatalf("cannot listen on %s %s in %s: %v", network, addr, ns, err)
	}
	done := make(chan struct{})
	if pc != nil {
		go func() {
			defer close(done)
			buf := make([]byte, 1500)
			for {
				_, from, err := pc.ReadFrom(buf)
				if err != nil {
					return
				}
				_, _ = pc.WriteTo([]byte(from.String()+"\n"), from)
			}
		}()
		t.Cleanup(func() { _ = pc.Close(); <-done })
		return
	}
	go func() {
		defer close(done)
		AnswerWhoAmI(ln)
	}()
	t.Cleanup(func() { _ = ln.Close(); <-done })
}

// whoAmITimeout bounds how long a TCP connection may take to take its
// answer.
const whoAmITimeout = 5 * time.Second

// AnswerWhoAmI answers every TCP connection of ln with the address and
// port it came from, one line ("10.20.0.5:41234\n"), until ln is closed.
func AnswerWhoAmI(ln net.Listener) {
	for {
		c, err := ln.Accept()
		if errors.Is(err, net.ErrClosed) {
			return
		}
		if err != nil {
			continue
		}
		go func() {
			defer c.Close() //nolint:errcheck // the answer is written or not: closing has nothing to add
			_ = c.SetDeadline(time.Now().Add(whoAmITimeout))
			_, _ = fmt.Fprintln(c, c.RemoteAddr())
		}()
	}
}

// AskWhoAmI connects from namespace ns to a ServeWhoAmI listener at
// network ("tcp" or "udp") address addr and returns the source address and
// port the listener saw. Each attempt waits up to timeout for the answer; a
// UDP datagram is sent again up to three times.
func (tp *Topology) AskWhoAmI(ns, network, addr string, timeout time.Duration) (string, error) {
	return tp.AskWhoAmIFrom(ns, network, netip.Addr{}, addr, timeout)
}

// AskWhoAmIFrom is AskWhoAmI from source address src of ns (the kernel's
// choice when src is the zero Addr), as a host with several addresses
// would connect from one of them.
func (tp *Topology) AskWhoAmIFrom(ns, network string, src netip.Addr, addr string, timeout time.Duration) (string, error) {
	var c net.Conn
	err := tp.Do(ns, func() error {
		d := net.Dialer{Timeout: timeout}
		if src.IsValid() {
			d.LocalAddr = &net.TCPAddr{IP: src.AsSlice()}
			if network == "udp" {
				d.LocalAddr = &net.UDPAddr{IP: src.AsSlice()}
			}
		}
		var err error
		c, err = d.Dial(network+"4", addr)
		return err
	})
	if err != nil {
		return "", fmt.Errorf("cannot connect from %s to %s %s: %w", ns, network, addr, err)
	}
	defer c.Close() //nolint:errcheck // the exchange is over: nothing to report
	tries := 1
	if network == "udp" {
		tries = 3
	}
	var last error
	for range tries {
		if network == "udp" {
			if _, err := c.Write([]byte("who am i?\n")); err != nil {
				return "", err
			}
		}
		if err := c.SetReadDeadline(time.Now().Add(timeout)); err != nil {
			return "", err
		}
		line, err := bufio.NewReader(c).ReadString('\n')
		if err == nil {
			return strings.TrimSpace(line), nil
		}
		last = err
		var ne net.Error
		if !errors.As(err, &ne) || !ne.Timeout() {
			break
		}
	}
	return "", fmt.Errorf("no answer from %s %s to %s: %w", network, addr, ns, last)
}
