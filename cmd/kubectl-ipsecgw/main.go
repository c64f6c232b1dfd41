// Command kubectl-ipsecgw is the IPsecGateway plugin of kubectl (krew's
// conventions: kubectl ipsecgw ...), also run on its own. Subcommand import
// reads a VM gateway's ipsec.conf and ipsec.secrets (or swanctl.conf) and
// writes the IPsecGateway and its Secrets to stdout and a report of every
// setting to stderr (or --report FILE).
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/ipsecgw/provider-ipsec/internal/migrate"
)

// Exit codes: 0 all imported, 1 an error, 2 a usage error, 3 imported with
// refused settings (the report lists them).
const (
	exitError   = 1
	exitUsage   = 2
	exitRefused = 3
)

const usage = `usage: kubectl ipsecgw import [flags] IPSEC.CONF|SWANCTL.CONF

Imports a VM gateway's ipsec.conf (strongSwan or libreswan, with
ipsec.secrets and ipsec.d beside it) or swanctl.conf (a file named
*swanctl.conf, its secrets section included) into an IPsecGateway and its
Secrets (stdout) and a report of every setting, converted, approximated or
refused (stderr or --report). Exits 3 when a setting is refused.
`

func main() { os.Exit(run(os.Args[1:], os.Stdout, os.Stderr)) }

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] != "import" {
		fmt.Fprint(stderr, usage)
		return exitUsage
	}
	fl := flag.NewFlagSet("import", flag.ContinueOnError)
	fl.SetOutput(stderr)
	var o migrate.Options
	fl.StringVar(&o.Name, "name", "", "name of the IPsecGateway (required)")
	fl.StringVar(&o.Namespace, "namespace", "default", "namespace of the IPsecGateway and its Secrets")
	fl.StringVar(&o.FloatingIP, "floating-ip", "", "the VM's floating IP, which the IPsecGateway pins (required)")
	fl.StringVar(&o.VMAddress, "vm-address", "", "the VM's private address (its identity with left=%defaultroute and no leftid)")
	fl.StringVar(&o.NetworkID, "network-id", "", "Neutron network of the gateway's port")
	fl.StringVar(&o.SubnetID, "subnet-id", "", "Neutron subnet of the gateway's port")
	fl.StringVar(&o.FixedIP, "fixed-ip", "", "fixed IP of the gateway's port")
	fl.StringVar(&o.RouterID, "router-id", "", "the tenant's Neutron router, which routes the client subnets to the gateway")
	fl.BoolVar(&o.LegacyClaim, "legacy-claim", false, "write the legacy claim (vpn.ipsecgw.io) instead of the namespaced IPsecGateway")
	secrets := fl.String("secrets", "", "ipsec.secrets (default: ipsec.secrets beside IPSEC.CONF, when it exists)")
	reportFile := fl.String("report", "", "write the report to this file instead of stderr")
	format := fl.String("o", "text", "the report's format: text or json")
	if err := fl.Parse(args[1:]); err != nil {
		return exitUsage
	}
	if fl.NArg() != 1 || o.Name == "" || o.FloatingIP == "" || (*format != "text" && *format != "json") {
		fmt.Fprint(stderr, usage)
		fl.PrintDefaults()
		return exitUsage
	}
	conf, err := filepath.Abs(fl.Arg(0))
	if err != nil {
		fmt.Fprintln(stderr, err)
		return exitError
	}
	if *secrets == "" {
		if _, err := os.Stat(filepath.Join(filepath.Dir(conf), "ipsec.secrets")); err == nil {
			*secrets = filepath.Join(filepath.Dir(conf), "ipsec.secrets")
		}
	}
	if *secrets != "" {
		if *secrets, err = filepath.Abs(*secrets); err != nil {
			fmt.Fprintln(stderr, err)
			return exitError
		}
	}
	return importFiles(conf, *secrets, *reportFile, *format, o, stdout, stderr)
}

// importFiles runs the import over the root file system and writes its
// outputs.
func importFiles(conf, secrets, reportFile, format string, o migrate.Options, stdout, stderr io.Writer) int {
	rel := func(p string) string { return p[1:] } // os.DirFS("/") takes paths without the leading '/'
	if secrets != "" {
		secrets = rel(secrets)
	}
	res, err := migrate.Import(os.DirFS("/"), rel(conf), secrets, o)
	if err != nil {
		fmt.Fprintln(stderr, "import:", err)
		return exitError
	}
	if len(res.Tunnels) > 0 {
		if code := writeManifests(res, o, stdout, stderr); code != 0 {
			return code
		}
	} else {
		fmt.Fprintln(stderr, "import: no conn could be imported, so there is no IPsecGateway: the report says why")
	}
	out := stderr
	if reportFile != "" {
		f, err := os.Create(reportFile) //nolint:gosec // G304: the operator's own --report file
		if err != nil {
			fmt.Fprintln(stderr, "import: cannot write the report:", err)
			return exitError
		}
		defer f.Close() //nolint:errcheck // the report's write error is checked below
		out = f
	}
	write := res.Report.WriteText
	if format == "json" {
		write = res.Report.WriteJSON
	}
	if err := write(out); err != nil {
		fmt.Fprintln(stderr, "import: cannot write the report:", err)
		return exitError
	}
	if res.Report.Refusals() > 0 || len(res.Tunnels) == 0 {
		return exitRefused
	}
	return 0
}

// writeManifests writes the IPsecGateway and its Secrets to stdout.
func writeManifests(res *migrate.Result, o migrate.Options, stdout, stderr io.Writer) int {
	gw, err := migrate.GatewayManifest(res, o)
	if err != nil {
		fmt.Fprintln(stderr, "import: cannot write the IPsecGateway:", err)
		return exitError
	}
	sec, err := migrate.SecretManifests(res, o)
	if err != nil {
		fmt.Fprintln(stderr, "import: cannot write the Secrets")
		return exitError
	}
	fmt.Fprintf(stdout, "%s", gw)
	if len(sec) > 0 {
		fmt.Fprintf(stdout, "---\n%s", sec)
	}
	return 0
}
