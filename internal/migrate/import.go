package migrate

import (
	"fmt"
	"io/fs"
	"net/netip"
	"path"
	"strings"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	gwv1alpha1 "github.com/ipsecgw/provider-ipsec/apis/cluster/gateway/v1alpha1"
)

// A Dialect is the kind of configuration imported.
type Dialect string

// Dialects the importer reads.
const (
	// StrongSwan is strongSwan's legacy ipsec.conf (starter and stroke).
	StrongSwan Dialect = "strongswan-ipsec.conf"
)

// Errors of an import.
const (
	errReadConf    = "cannot read ipsec.conf %s"
	errReadSecrets = "cannot read ipsec.secrets %s" //nolint:gosec // G101: an error message, no credential
	errFloatingIP  = "--floating-ip %q is not an IPv4 address: give the VM's floating IP, the address its peers know"
)

// Options are what the files do not say: where the gateway goes.
type Options struct {
	// Name and Namespace of the IPsecGateway; its Secrets' names start
	// with Name.
	Name, Namespace string
	// FloatingIP is the VM's floating IP, which the IPsecGateway pins
	// (IPv4).
	FloatingIP string
	// VMAddress is the VM's private address (IPv4), which it presented as
	// its identity with left=%defaultroute and no leftid.
	VMAddress string
	// NetworkID, SubnetID and FixedIP place the gateway's port; RouterID
	// is the tenant router that routes the client subnets (mode routed).
	NetworkID, SubnetID, FixedIP, RouterID string
	// LegacyClaim writes the legacy claim (vpn.ipsecgw.io) instead of the
	// namespaced IPsecGateway (vpn.m.ipsecgw.io).
	LegacyClaim bool
}

// A Result is an import's output.
type Result struct {
	Tunnels []gwv1alpha1.Tunnel
	// Sources maps each tunnel's name to the conn (or swanctl
	// connection) it was imported from.
	Sources map[string]string
	// PSKs maps each PSK tunnel's name to its key, for the Secret
	// manifest only.
	PSKs map[string][]byte
	// TLS maps a kubernetes.io/tls Secret's name to its certificate and
	// key (PEM); CA is the peers' CA bundle (PEM).
	TLS    map[string][2][]byte
	CA     []byte
	Report Report
}

// importer holds an import's state.
type importer struct {
	fsys    fs.FS
	dir     string
	dialect Dialect
	opts    Options
	conf    *IPsecConf
	secrets []Secret
	report  Report
	psks    map[string][]byte
	tls     map[string][2][]byte
	ca      []byte
}

// ImportIPsecConf imports conf (strongSwan's or libreswan's ipsec.conf, told
// apart by their keywords) and secrets
// (ipsec.secrets; empty for none) from fsys; certificates and keys come from
// ipsec.d beside conf. Errors name the file and line, never a secret.
func ImportIPsecConf(fsys fs.FS, conf, secrets string, opts Options) (*Result, error) {
	if a, err := netip.ParseAddr(opts.FloatingIP); err != nil || !a.Is4() {
		return nil, fmt.Errorf(errFloatingIP, opts.FloatingIP)
	}
	im := &importer{fsys: fsys, dir: path.Dir(conf), opts: opts, psks: map[string][]byte{}, tls: map[string][2][]byte{},
		report: Report{Source: conf, Dialect: StrongSwan}}
	var err error
	if im.conf, err = ReadIPsecConf(fsys, conf); err != nil {
		return nil, fmt.Errorf(errReadConf+": %w", conf, err)
	}
	if secrets != "" {
		if im.secrets, err = ReadIPsecSecrets(fsys, secrets); err != nil {
			return nil, fmt.Errorf(errReadSecrets+": %w", secrets, err)
		}
	}
	im.dialect = detectDialect(im.conf)
	im.report.Dialect = im.dialect
	for _, k := range sortedKeys(im.conf.Setup) {
		if k != "uniqueids" {
			im.report.add(Finding{Setting: k, Value: im.conf.Setup[k].Value, Outcome: Converted, From: im.conf.Setup[k].From,
				Detail: "config setup: the daemon's own behaviour (logging, CRLs); the peer sees no difference: not carried"})
		}
	}
	res := &Result{PSKs: im.psks, TLS: im.tls, Sources: map[string]string{}}
	for _, c := range im.conf.Conns {
		if im.dialect == Libreswan {
			c = im.fromLibreswan(c)
		}
		if t := im.strokeTunnel(c); t != nil {
			res.Tunnels = append(res.Tunnels, *t)
			res.Sources[t.Name] = c.Name
		}
	}
	res.CA, res.Report = im.ca, im.report
	return res, nil
}

// Import imports conf from fsys: a swanctl.conf (a file named *swanctl.conf)
// with ImportSwanctlConf, else an ipsec.conf with ImportIPsecConf (secrets
// is then its ipsec.secrets).
func Import(fsys fs.FS, conf, secrets string, opts Options) (*Result, error) {
	if strings.HasSuffix(conf, "swanctl.conf") {
		return ImportSwanctlConf(fsys, conf, opts)
	}
	return ImportIPsecConf(fsys, conf, secrets, opts)
}

// setup returns config setup's value of key, or def.
func (im *importer) setup(key, def string) string {
	if s, ok := im.conf.Setup[key]; ok && s.Value != "" {
		return s.Value
	}
	return def
}

// pskSecretName is the Secret that holds every tunnel's PSK, one key per
// tunnel.
func (im *importer) pskSecretName() string { return im.opts.Name + "-psk" }

func pskRef(name, key string) *xpv2.LocalSecretKeySelector {
	return &xpv2.LocalSecretKeySelector{LocalSecretReference: xpv2.LocalSecretReference{Name: name}, Key: key}
}
