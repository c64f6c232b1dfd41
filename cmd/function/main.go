// Command function serves the IPsecGateway's composition function
// (internal/function) over gRPC, as Crossplane calls functions: with mTLS
// (--tls-certs-dir holding tls.crt and tls.key, and the ca.crt that signs
// Crossplane's client certificates), or with --insecure for `crossplane
// render`. Its flags are those of crossplane/function-template-go's, with
// their units (--max-recv-message-size is in MB).
//
// It serves through function-sdk-go's Serve, as function-template-go does,
// with Prometheus metrics (gRPC requests, by method and code) only when
// --metrics-address is given: the SDK's default, :8080 on every interface,
// is no address for a function that `crossplane render` and the local
// stack run on the host.
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"

	sdk "github.com/crossplane/function-sdk-go"

	"github.com/ipsecgw/provider-ipsec/internal/function"
)

const (
	errNoCredentials = "cannot serve without credentials: give --tls-certs-dir (or --insecure for crossplane render)"
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
	maxRecvB int    // --max-recv-message-size, which is in MB, in bytes
	metrics  string // --metrics-address; empty: no metrics
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
	fs.StringVar(&o.metrics, "metrics-address", "", "Address at which to serve Prometheus metrics on /metrics (such as :8080); none when empty.")
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

// serve listens on o's network and address and serves RunFunction, with
// mTLS from o's certificates or insecure, until it fails.
func serve(o options) error {
	if !o.insec && o.certs == "" {
		return errors.New(errNoCredentials)
	}
	log, err := sdk.NewLogger(o.debug)
	if err != nil {
		return err
	}
	return sdk.Serve(function.New(log),
		sdk.Listen(o.network, o.address),
		sdk.MTLSCertificates(o.certs),
		sdk.Insecure(o.insec),
		sdk.MaxRecvMessageSize(o.maxRecvB),
		sdk.WithMetricsServer(o.metrics))
}
