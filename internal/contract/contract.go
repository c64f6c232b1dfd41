// Package contract is what the provider and the gateway agent agree on: the
// keys and file names of the gateway's ConfigMap, Secret and status
// ConfigMap, where the pod mounts them, the nftables table the agent owns,
// the agent's ports, probe paths, flags and environment, and the hash both
// compute of a rendered configuration. The provider renders the gateway pod
// from it (internal/workload, internal/render, internal/controller/gateway);
// the agent (cmd/gateway-agent, internal/agent/...) finds its way in the
// pod by it, and imports none of the provider's renderer, object builder or
// controllers (golangci-lint's depguard, .golangci.yml). What the files and keys
// hold is typed elsewhere, beside the API or the format it belongs to:
// v1alpha1.TunnelStatus and LeaderStatus, xfrmi.Config, swanctl.conf
// (internal/swanctl).
//
// It is versioned with both sides, but the two do not change at once: a
// provider upgrade leaves running pods with the older agent image until
// they are replaced, and an older pod template names the older flags (see
// workload.LegacyTemplate). So a name or value here is never changed or
// reused for another meaning; a new one is added beside it.
package contract

import (
	"crypto/sha256"
	"encoding/hex"
)

// Keys of the gateway's ConfigMap (<gateway>-config) and Secret
// (<gateway>-secrets): the rendered files, which the pod mounts under the
// same names in ConfigDir and SecretsDir and the agent also reads through
// the API server.
const (
	// KeySwanctlConf is swanctl.conf: the connections, no secret.
	KeySwanctlConf = "swanctl.conf"
	// KeyNATRules is the nftables script that replaces table ip NATTable.
	KeyNATRules = "nat.nft"
	// KeyStrongSwanConf is the strongswan.conf fragment charon reads at
	// start, when the data plane needs one.
	KeyStrongSwanConf = "strongswan.conf"
	// KeyXFRMInterfaces is the JSON of an xfrmi.Config: the XFRM interfaces
	// and routes of the route-mode tunnels, when there is one.
	KeyXFRMInterfaces = "xfrm.json"
	// KeySecrets is the Secret's swanctl.conf fragment with the PSKs and
	// private keys.
	KeySecrets = "secrets.conf"
)

// Keys of the gateway's status ConfigMap (<gateway>-status), which the agent
// writes and the provider reads.
const (
	// KeyTunnels is the JSON array of v1alpha1.TunnelStatus, sorted by
	// name.
	KeyTunnels = "tunnels.json"
	// KeyLeader is the active agent's JSON v1alpha1.LeaderStatus of an
	// active/standby gateway.
	KeyLeader = "leader.json"
	// KeyConfigHash is the ConfigHash of the configuration the agent last
	// loaded into charon, which the provider shows as
	// status.atProvider.loadedConfigHash.
	KeyConfigHash = "config-hash"
	// KeySilentStart is the name of the pod whose agent wrote it: an agent
	// that lets the single pod's net1 answer ARP only once it holds the
	// gateway's Lease, resetting the arp_ignore the network attachment may
	// bring net1 up with. The provider reads that pod's agent image, and
	// only a gateway that runs an image seen so makes its pods' net1
	// silent from the CNI on (an older agent never resets arp_ignore).
	KeySilentStart = "silent-start"
)

// Paths in the gateway pod's agent container.
const (
	// ConfigDir is where the ConfigMap is mounted.
	ConfigDir = "/etc/ipsecgw/config"
	// SecretsDir is where the Secret is mounted.
	SecretsDir = "/etc/ipsecgw/secrets" //nolint:gosec // G101: a directory, not a credential
	// RunDir is charon's run directory, shared by the strongswan and agent
	// containers.
	RunDir = "/var/run/charon"
	// ViciSocket is charon's VICI socket, in RunDir.
	ViciSocket = RunDir + "/charon.vici"
)

// NATTable is the nftables table (family ip) the agent owns in the pod's
// network namespace; nothing else there is touched.
const NATTable = "ipsecgw"

// SecondaryInterface is the gateway pod's interface on the tenant network.
const SecondaryInterface = "net1"

// StatusSuffix ends the name of a gateway's status ConfigMap, whose name
// before it is the gateway's, as is its Lease's: the agent of a single
// pod, which the provider gives no --lease, finds the Lease of its
// handover (Handover in the agent's leader package) by its
// --status-configmap.
const StatusSuffix = "-status"

// AddressLifetime is the valid and preferred lifetime, in seconds, of the
// addresses the active agent of an active/standby gateway gives
// SecondaryInterface: the agent's renew deadline of the Lease. The
// provider renders it into the commands of FlagAddressUp; the agent renews
// it after every renewal of the Lease, so that the kernel removes the
// address of an agent that was killed or frozen before the Lease can pass
// to the other pod.
const AddressLifetime = 4

// The agent's container ports, which its defaults listen on.
const (
	// MetricsPort serves Prometheus metrics at /metrics.
	MetricsPort int32 = 9100
	// HealthPort serves HealthzPath and ReadyzPath.
	HealthPort int32 = 9101
)

// The agent's probe paths on HealthPort.
const (
	// HealthzPath answers 200 while the process runs (liveness).
	HealthzPath = "/healthz"
	// ReadyzPath answers 200 once the configuration is loaded into a
	// charon that answers (readiness).
	ReadyzPath = "/readyz"
)

// Environment the pod template gives the agent through the downward API.
const (
	// EnvPodNamespace is the pod's namespace, that of its ConfigMaps,
	// Secret and Lease.
	EnvPodNamespace = "POD_NAMESPACE"
	// EnvPodName is the pod's name, its identity in the Lease (active/standby).
	EnvPodName = "POD_NAME"
	// EnvNodeName is the pod's node, reported while active (active/standby).
	EnvNodeName = "NODE_NAME"
)

// Flags of the agent that the provider sets (Arg), without the leading
// dashes.
const (
	// FlagConfigDir is the directory of the mounted ConfigMap (ConfigDir).
	FlagConfigDir = "config-dir"
	// FlagSecretsDir is the directory of the mounted Secret (SecretsDir).
	FlagSecretsDir = "secrets-dir"
	// FlagViciSocket is charon's VICI socket (ViciSocket).
	FlagViciSocket = "vici-socket"
	// FlagStatusConfigMap names the status ConfigMap.
	FlagStatusConfigMap = "status-configmap"
	// FlagConfigConfigMap and FlagSecret name the ConfigMap and Secret the
	// agent watches through the API server; providers before the live
	// reload did not set them.
	FlagConfigConfigMap = "config-configmap"
	FlagSecret          = "secret"
	// FlagLease names the Lease that elects the active pod of an
	// active/standby gateway.
	FlagLease = "lease"
	// FlagInterface is the interface on the tenant network
	// (SecondaryInterface), with FlagLease.
	FlagInterface = "interface"
	// FlagAddress is the gateway's fixed IP, with FlagLease.
	FlagAddress = "address"
	// FlagAddressUp and FlagAddressDown are the shell commands that give
	// FlagInterface the address and its routes and take them away, with
	// FlagLease.
	FlagAddressUp   = "address-up"
	FlagAddressDown = "address-down"
)

// Arg returns the agent's command-line argument that sets flag, one of the
// Flag constants, to value: "--<flag>=<value>".
func Arg(flag, value string) string { return "--" + flag + "=" + value }

// ConfigHash returns the hex SHA-256 of the rendered files swanctlConf,
// natRules, strongSwanConf and xfrmInterfaces (the last two empty when there
// is none): the provider's status.atProvider.configHash of what it
// rendered, and what the agent reports as KeyConfigHash of the files it
// loaded. The Secret's file is left out, so the hash reveals nothing about a
// PSK. A rendering without the last two hashes as it did before they
// existed, so a provider upgrade changes no Gateway's hash.
func ConfigHash(swanctlConf, natRules, strongSwanConf, xfrmInterfaces []byte) string {
	h := sha256.New()
	h.Write(swanctlConf)
	h.Write([]byte{0})
	h.Write(natRules)
	if len(strongSwanConf) > 0 {
		h.Write([]byte{0})
		h.Write(strongSwanConf)
	}
	if len(xfrmInterfaces) > 0 {
		h.Write([]byte{1})
		h.Write(xfrmInterfaces)
	}
	return hex.EncodeToString(h.Sum(nil))
}
