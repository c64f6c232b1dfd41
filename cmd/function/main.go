// Command function serves the IPsecGateway's composition function
// (internal/function) over gRPC, as Crossplane calls functions: with mTLS
// (--tls-certs-dir holding tls.crt and tls.key, and the ca.crt that signs
// Crossplane's client certificates), or with --insecure for `crossplane
// render`. Its flags are those of crossplane/function-template-go's.
//
// It serves function-sdk-go's RunFunction service itself: the SDK's own
// Serve (v0.5.0 and v0.6.0) is in a package whose tests import
// crossplane-runtime's apis/common, which crossplane-runtime v2.4.0 no
// longer has, so `go mod tidy` cannot resolve it beside this module.
package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"path/filepath"

	"github.com/crossplane/function-sdk-go/logging"
	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/ipsecgw/provider-ipsec/internal/function"
)

const (
	errNoCredentials = "cannot serve without credentials: give --tls-certs-dir (or --insecure for crossplane render)"
	errKeyPair       = "cannot load the server certificate"
	errCA            = "cannot read the clients' CA certificate"
	errNoCA          = "cannot use the clients' CA certificate: no PEM certificate in ca.crt"
)

func main() {
	var (
		debug    = flag.Bool("debug", false, "Log at debug level.")
		network  = flag.String("network", "tcp", "Network on which to listen for gRPC connections.")
		address  = flag.String("address", ":9443", "Address at which to listen for gRPC connections.")
		certs    = flag.String("tls-certs-dir", os.Getenv("TLS_SERVER_CERTS_DIR"), "Directory of the server certificate (tls.crt, tls.key) and the CA of Crossplane's client certificates (ca.crt).")
		insec    = flag.Bool("insecure", false, "Serve without mTLS (crossplane render only: Crossplane always uses mTLS).")
		maxRecvB = flag.Int("max-recv-message-size", 4<<20, "Largest request accepted, in bytes.")
	)
	flag.Parse()
	if err := serve(*debug, *network, *address, *certs, *insec, *maxRecvB); err != nil {
		fmt.Fprintln(os.Stderr, "function:", err)
		os.Exit(1)
	}
}

// serve listens on network/address and serves RunFunction until it fails.
func serve(debug bool, network, address, certs string, insec bool, maxRecv int) error {
	creds, err := serverCredentials(certs, insec)
	if err != nil {
		return err
	}
	log, err := logging.NewLogger(debug)
	if err != nil {
		return err
	}
	l, err := (&net.ListenConfig{}).Listen(context.Background(), network, address)
	if err != nil {
		return err
	}
	srv := grpc.NewServer(grpc.Creds(creds), grpc.MaxRecvMsgSize(maxRecv))
	fnv1.RegisterFunctionRunnerServiceServer(srv, function.New(log))
	return srv.Serve(l)
}

// serverCredentials are mTLS credentials from the certificates in dir,
// which verify the client's certificate, or none with insec.
func serverCredentials(dir string, insec bool) (credentials.TransportCredentials, error) {
	if insec {
		return insecure.NewCredentials(), nil
	}
	if dir == "" {
		return nil, errors.New(errNoCredentials)
	}
	crt, err := tls.LoadX509KeyPair(filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key"))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", errKeyPair, err)
	}
	ca, err := os.ReadFile(filepath.Join(dir, "ca.crt")) //nolint:gosec // dir is the operator's --tls-certs-dir

	if err != nil {
		return nil, fmt.Errorf("%s: %w", errCA, err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(ca) {
		return nil, errors.New(errNoCA)
	}
	return credentials.NewTLS(&tls.Config{
		MinVersion:   tls.VersionTLS12,
		Certificates: []tls.Certificate{crt},
		ClientCAs:    pool,
		ClientAuth:   tls.RequireAndVerifyClientCert,
	}), nil
}
