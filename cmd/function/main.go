// Command function serves the IPsecGateway's composition function
// (internal/function) over gRPC, as Crossplane calls functions: with mTLS
// (--tls-certs-dir holding tls.crt and tls.key, and the ca.crt that signs
// Crossplane's client certificates), or with --insecure for `crossplane
// render`. Its flags are those of crossplane/function-template-go's, with
// their units (--max-recv-message-size is in MB).
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
	errMaxRecv       = "cannot accept requests of at most %d MB: give --max-recv-message-size at least 1"
)

// options are the function's command-line flags, those of
// function-template-go's with its units.
type options struct {
	debug    bool
	network  string
	address  string
	certs    string
	insec    bool
	maxRecvB int // --max-recv-message-size, which is in MB, in bytes
}

// parseFlags parses args. --max-recv-message-size is in MB (MiB), 4 by
// default, as the template's, and must be at least 1.
func parseFlags(args []string) (options, error) {
	var o options
	var maxRecvMB int
	fs := flag.NewFlagSet("function", flag.ContinueOnError)
	fs.BoolVar(&o.debug, "debug", false, "Log at debug level.")
	fs.StringVar(&o.network, "network", "tcp", "Network on which to listen for gRPC connections.")
	fs.StringVar(&o.address, "address", ":9443", "Address at which to listen for gRPC connections.")
	fs.StringVar(&o.certs, "tls-certs-dir", os.Getenv("TLS_SERVER_CERTS_DIR"), "Directory of the server certificate (tls.crt, tls.key) and the CA of Crossplane's client certificates (ca.crt).")
	fs.BoolVar(&o.insec, "insecure", false, "Serve without mTLS (crossplane render only: Crossplane always uses mTLS).")
	fs.IntVar(&maxRecvMB, "max-recv-message-size", 4, "Largest request accepted, in MB (MiB).")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if maxRecvMB < 1 {
		return o, fmt.Errorf(errMaxRecv, maxRecvMB)
	}
	o.maxRecvB = maxRecvMB * 1024 * 1024
	return o, nil
}

func main() {
	o, err := parseFlags(os.Args[1:])
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(0)
		}
		fmt.Fprintln(os.Stderr, "function:", err)
		os.Exit(2)
	}
	if err := serve(o); err != nil {
		fmt.Fprintln(os.Stderr, "function:", err)
		os.Exit(1)
	}
}

// serve listens on o's network and address and serves RunFunction until it
// fails.
func serve(o options) error {
	creds, err := serverCredentials(o.certs, o.insec)
	if err != nil {
		return err
	}
	log, err := logging.NewLogger(o.debug)
	if err != nil {
		return err
	}
	l, err := (&net.ListenConfig{}).Listen(context.Background(), o.network, o.address)
	if err != nil {
		return err
	}
	srv := grpc.NewServer(grpc.Creds(creds), grpc.MaxRecvMsgSize(o.maxRecvB))
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
