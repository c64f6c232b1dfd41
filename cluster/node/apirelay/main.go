// Command apirelay connects the local node, which runs in a network
// namespace of its own, and the control plane, which listens on the host's
// loopback only, both ways:
//
//   - it listens on -listen inside the node's namespace and relays every
//     connection to -connect in the namespace it was started in (the
//     host's): the node's components and pods reach the kube-apiserver;
//   - with -proxy, it serves HTTP CONNECT on that Unix socket for the
//     kube-apiserver's egress to the cluster (--egress-selector-config-file):
//     a target on loopback is dialled from the host's namespace, any other
//     (the kubelet, pods) from the node's, so `kubectl logs`, `exec` and
//     `port-forward` work.
//
// Sockets are made from threads moved into the node's namespace; such a
// thread ends with its goroutine, so no other code ever runs there.
//
//	apirelay -netns /run/netns/NAME -listen 0.0.0.0:6443 -connect 127.0.0.1:6443 [-proxy PATH]
package main

import (
	"bufio"
	"flag"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"runtime"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

func main() {
	netns := flag.String("netns", "", "the node's network namespace (a path such as /run/netns/NAME)")
	listen := flag.String("listen", "", "TCP address to listen on inside -netns")
	connect := flag.String("connect", "", "TCP address to relay to, in this process's own namespace")
	proxy := flag.String("proxy", "", "Unix socket to serve HTTP CONNECT on for the kube-apiserver's egress to the cluster")
	flag.Parse()
	if *netns == "" || *listen == "" || *connect == "" {
		log.Fatal("apirelay: -netns, -listen and -connect are required")
	}
	ns, err := os.Open(*netns)
	if err != nil {
		log.Fatalf("apirelay: %v", err)
	}
	var l net.Listener
	if err := inNetns(ns, func() (err error) { l, err = net.Listen("tcp", *listen); return }); err != nil {
		log.Fatalf("apirelay: %v", err)
	}
	log.Printf("apirelay: %s in %s -> %s", *listen, *netns, *connect)
	if *proxy != "" {
		_ = os.Remove(*proxy)
		pl, err := net.Listen("unix", *proxy)
		if err != nil {
			log.Fatalf("apirelay: %v", err)
		}
		log.Printf("apirelay: HTTP CONNECT on %s into %s", *proxy, *netns)
		go func() { log.Fatal(http.Serve(pl, connectHandler(ns))) }()
	}
	for {
		c, err := l.Accept()
		if err != nil {
			log.Fatalf("apirelay: %v", err)
		}
		go func() {
			u, err := net.DialTimeout("tcp", *connect, 10*time.Second)
			if err != nil {
				log.Printf("apirelay: %v", err)
				_ = c.Close()
				return
			}
			pipe(c, u)
		}()
	}
}

// inNetns runs fn on a thread moved into the network namespace ns. The
// thread stays locked to its goroutine and so ends with it.
func inNetns(ns *os.File, fn func() error) error {
	ch := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		if err := unix.Setns(int(ns.Fd()), unix.CLONE_NEWNET); err != nil {
			ch <- err
			return
		}
		ch <- fn()
	}()
	return <-ch
}

// connectHandler serves HTTP CONNECT: it dials the requested address, on
// loopback from the host's namespace, otherwise from ns, and then relays.
func connectHandler(ns *os.File) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodConnect {
			http.Error(w, "CONNECT only", http.StatusMethodNotAllowed)
			return
		}
		var u net.Conn
		dial := func() (err error) { u, err = net.DialTimeout("tcp", r.Host, 10*time.Second); return }
		var err error
		if host, _, _ := net.SplitHostPort(r.Host); net.ParseIP(host) != nil && net.ParseIP(host).IsLoopback() {
			err = dial()
		} else {
			err = inNetns(ns, dial)
		}
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		c, buf, err := w.(http.Hijacker).Hijack()
		if err != nil {
			_ = u.Close()
			return
		}
		if _, err := io.WriteString(c, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
			_ = u.Close()
			_ = c.Close()
			return
		}
		pipe(&buffered{c, buf.Reader}, u)
	})
}

// buffered is a connection whose first bytes may wait in a reader.
type buffered struct {
	net.Conn
	r *bufio.Reader
}

func (b *buffered) Read(p []byte) (int, error) { return b.r.Read(p) }

// CloseWrite half-closes the connection, as pipe does to pass an EOF on.
func (b *buffered) CloseWrite() error {
	if cw, ok := b.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// pipe copies between a and b until both directions end, then closes both.
func pipe(a, b net.Conn) {
	defer a.Close() //nolint:errcheck // the exchange is over: nothing to report
	defer b.Close() //nolint:errcheck // the exchange is over: nothing to report
	var wg sync.WaitGroup
	wg.Add(2)
	half := func(dst, src net.Conn) {
		defer wg.Done()
		_, _ = io.Copy(dst, src)
		if cw, ok := dst.(interface{ CloseWrite() error }); ok {
			_ = cw.CloseWrite()
		}
	}
	go half(a, b)
	go half(b, a)
	wg.Wait()
}
