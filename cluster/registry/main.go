// Command registry serves the local stack's OCI registry over TLS: the
// distribution API of go-containerregistry's pkg/registry, with blobs kept
// on disk under -dir (an image's layers are not held in memory once
// pushed) and manifests and tags in memory (they are lost when it stops;
// cluster/local/up.sh pushes every package and image again at each
// bring-up). Crossplane's package manager, `crossplane xpkg push` and the
// nodes' containerd use it as they would any registry: no authentication,
// the certificate from the stack's CA (cluster/local/pki.sh).
//
//	registry -listen 127.0.0.1:PORT -cert registry.crt -key registry.key -dir DIR
//
// It logs one line per request to stderr and stops on SIGTERM or SIGINT,
// after the requests in flight (10 s at most).
package main

import (
	"context"
	"errors"
	"flag"
	"log"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/google/go-containerregistry/pkg/registry"
)

func main() {
	if err := run(); err != nil {
		log.Fatalf("registry: %v", err)
	}
}

func run() error {
	listen := flag.String("listen", "127.0.0.1:5000", "TCP address to serve HTTPS on")
	cert := flag.String("cert", "", "PEM file of the serving certificate (and its chain)")
	key := flag.String("key", "", "PEM file of the certificate's private key")
	dir := flag.String("dir", "", "directory that holds the blobs (made if missing)")
	flag.Parse()
	if *cert == "" || *key == "" || *dir == "" {
		return errors.New("-cert, -key and -dir are required")
	}
	if err := os.MkdirAll(*dir, 0o700); err != nil {
		return err
	}
	logger := log.New(os.Stderr, "registry: ", log.LstdFlags)
	// HTTP/1.1 only: pkg/registry reads an upload's body under a lock
	// that every upload takes, so over HTTP/2 a client pushing layers in
	// parallel on one connection stalls for ever (the waiting streams hold
	// the connection's flow-control window; measured with a 53 MiB image).
	var protocols http.Protocols
	protocols.SetHTTP1(true)
	srv := &http.Server{
		Protocols:         &protocols,
		Addr:              *listen,
		Handler:           registry.New(registry.Logger(logger), registry.WithBlobHandler(registry.NewDiskBlobHandler(*dir))),
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          logger,
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdown)
	}()
	logger.Printf("serving on https://%s, blobs in %s", *listen, *dir)
	if err := srv.ListenAndServeTLS(*cert, *key); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
