// Package render turns a Gateway's spec into the files its pod runs with:
// swanctl.conf (connections, no secrets), a secrets file, the nftables
// NAT ruleset and, for data plane Libipsec, a strongswan.conf fragment. It
// is pure: no I/O, the same input gives the same bytes.
//
// Each tunnel is a connection named after it. In layout PerSubnetPair each
// subnet pair is a CHILD_SA named <tunnel>-<h>, h the first 8 hex digits of
// the SHA-256 of "<local> <remote>": a name that depends on the pair alone,
// so that a live reload after pairs were added, removed or reordered finds
// every remaining CHILD_SA under its old name and leaves it up. Validation
// refuses the (unlikely) pairs of one tunnel whose names collide. In layout
// Single the one CHILD_SA is named <tunnel>.
package render

import (
	"crypto/sha256"
	"encoding/hex"

	"github.com/ipsecgw/provider-ipsec/apis/cluster/gateway/v1alpha1"
	"github.com/ipsecgw/provider-ipsec/internal/contract"
)

// Input is everything rendering needs.
type Input struct {
	// Spec is the Gateway's spec.forProvider.
	Spec v1alpha1.GatewayParameters
	// PSKs holds each tunnel's pre-shared key, raw bytes, by tunnel name.
	PSKs map[string][]byte
	// Certs holds the X.509 material of each tunnel with a certificate,
	// by tunnel name (ParseTunnelCert).
	Certs map[string]*TunnelCert
	// ServiceAddresses holds the cluster IP of each exposure's
	// target.serviceName, by exposure name.
	ServiceAddresses map[string]string
}

// Files are the rendered configuration of one gateway.
type Files struct {
	// SwanctlConf is swanctl.conf with the connections. It holds no secret
	// and goes into a ConfigMap.
	SwanctlConf []byte
	// Secrets is a swanctl.conf fragment with the secrets section: the PSKs,
	// hex-encoded, and the private keys of certificate tunnels
	// (private-<tunnel>: type, hex DER data); with certificate tunnels also
	// a certs section holding, hex DER, the peer CA certificates
	// swanctl.conf names (cacert-<tunnel>-<i>), the gateway's certificates
	// (cert-<tunnel>) and their intermediates (chain-<tunnel>-<i>), the
	// contents of swanctl's x509ca and x509 directories. It goes into a
	// Secret.
	Secrets []byte
	// NATRules is an nftables script that atomically replaces the table
	// ipsecgw: its NAT chains (empty in mode routed) and the forward chain
	// that clamps the TCP MSS of every tunnel.
	NATRules []byte
	// StrongSwanConf is a strongswan.conf fragment for charon, which the
	// gateway image's strongswan.conf includes after its own settings; it
	// goes into the ConfigMap. Nil unless spec.dataPlane needs one: with
	// Libipsec it loads kernel-libipsec before kernel-netlink.
	StrongSwanConf []byte
	// XFRMInterfaces is the JSON of an xfrmi.Config: the XFRM interfaces
	// and routes of the route-mode tunnels, which the gateway agent
	// creates in the pod's network namespace; it goes into the ConfigMap.
	// Nil when no tunnel is in mode route.
	XFRMInterfaces []byte
	// Hash is the hex SHA-256 of SwanctlConf, NATRules and, when there are,
	// StrongSwanConf and XFRMInterfaces (contract.ConfigHash): the whole
	// rendered configuration, shown in status. Secrets are left out so that
	// the hash reveals nothing about a PSK.
	Hash string
	// StartHash is the hex SHA-256 of what charon reads only when it starts
	// (StartHash): the StrongSwanConf fragment. The pod template carries it,
	// so that a change of it, and only of it among the files, replaces the
	// gateway pod; the agent reloads the rest live.
	StartHash string
	// Advisories are what the spec holds that is accepted but advised
	// against, one sentence each naming the field and what to do (weak
	// DH groups, short CHILD_SA lifetimes, IKEv1, an ECDSA certificate
	// towards an IKEv1 peer, AEAD with an integrity algorithm, a PSK two
	// tunnels share): no secret, and no part of the hashes.
	Advisories []string
}

// StartHash returns Files.StartHash of the rendered strongswan.conf
// fragment strongSwanConf (empty when there is none).
func StartHash(strongSwanConf []byte) string {
	sum := sha256.Sum256(strongSwanConf)
	return hex.EncodeToString(sum[:])
}

// Render validates in and renders it. It returns Errors listing every
// problem, each naming the field at fault, and no Files when in is invalid.
func Render(in Input) (*Files, error) {
	c, err := validate(in)
	if err != nil {
		return nil, err
	}
	conf, secrets := swanctlConf(in, c)
	f := &Files{NATRules: natRules(in, c), StrongSwanConf: dataPlaneConf(in.Spec.DataPlane)}
	if f.SwanctlConf, err = conf.Format(); err != nil {
		return nil, err
	}
	if f.Secrets, err = secrets.Format(); err != nil {
		return nil, err
	}
	f.XFRMInterfaces = xfrmConf(in, c)
	f.Hash = contract.ConfigHash(f.SwanctlConf, f.NATRules, f.StrongSwanConf, f.XFRMInterfaces)
	f.StartHash = StartHash(f.StrongSwanConf)
	f.Advisories = advisories(in)
	return f, nil
}
