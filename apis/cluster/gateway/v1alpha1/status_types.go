package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A GatewayObservation is the observed state of a Gateway.
type GatewayObservation struct {
	// ConfigHash is the SHA-256 of the rendered configuration (swanctl.conf,
	// NAT rules and, with data plane Libipsec, the strongswan.conf
	// fragment; not the secrets), hex: what the provider wrote into the
	// gateway's ConfigMap.
	// +optional
	ConfigHash string `json:"configHash,omitempty"`

	// LoadedConfigHash is the ConfigHash of the configuration the gateway
	// pod's agent last loaded into charon, as it reported it: equal to
	// ConfigHash once a change is loaded. The agent loads changes live
	// (the pod is replaced only for what charon reads at start), so this,
	// not the pod, tells which configuration runs. Absent while no pod is
	// ready or before its agent reported.
	// +optional
	LoadedConfigHash string `json:"loadedConfigHash,omitempty"`

	// Replicas the Deployment asks for: spec.forProvider.replicas, or 0
	// while the gateway is not active.
	// +optional
	Replicas int32 `json:"replicas,omitempty"`

	// ReadyReplicas of the Deployment. No pod ready, or the first one
	// ready, is written at once; while at least one is ready, a change of
	// the count alone (a standby replaced) is written with the next
	// change of state, or at the latest 30 s after the status was last
	// written, as the traffic counters are.
	// +optional
	ReadyReplicas int32 `json:"readyReplicas,omitempty"`

	// TunnelsUp summarises the tunnels as "established/total".
	// +optional
	TunnelsUp string `json:"tunnelsUp,omitempty"`

	// BytesIn and BytesOut total the ESP payload bytes of every CHILD_SA
	// of every tunnel (ChildSAStatus.BytesIn, BytesOut), as the agent last
	// reported them: a rekeyed CHILD_SA starts counting from zero; a
	// change of counters alone is written at most every 30 s. Zero, not
	// absent, before the first byte, so that kubectl shows 0.
	// +optional
	BytesIn int64 `json:"bytesIn"`
	// +optional
	BytesOut int64 `json:"bytesOut"`

	// Warnings are what the spec has that is accepted but advised against
	// (weak DH groups, CHILD_SA lifetimes under 5 minutes, IKEv1), one
	// sentence each naming the field and what to do; absent when none. The
	// provider also emits a ConfigAdvisory Warning event when one appears.
	// +optional
	Warnings []string `json:"warnings,omitempty"`

	// Leader is the active pod of an active/standby gateway (replicas
	// 2), as its agent last reported it; absent with replicas 1.
	// +optional
	Leader *LeaderStatus `json:"leader,omitempty"`

	// SilentStartImage is an agent image whose agent was seen to let the
	// gateway's address answer ARP only once it holds the gateway's Lease.
	// While spec.forProvider.images.agent is this image and the gateway
	// runs one replica, the network attachment brings the address up
	// answering no ARP (arp_ignore 8), so that a replacement pod answers
	// only after the pod it replaces went quiet. Pods running already are
	// not replaced for it.
	// +optional
	SilentStartImage string `json:"silentStartImage,omitempty"`

	// Tunnels as the gateway's agent last reported them.
	// +optional
	// +listType=map
	// +listMapKey=name
	Tunnels []TunnelStatus `json:"tunnels,omitempty"`
}

// A LeaderStatus is the active pod of an active/standby gateway: the one
// holding the gateway's Lease and, with it, its address and tunnels.
type LeaderStatus struct {
	// Pod is the active pod's name.
	Pod string `json:"pod"`

	// Node is the node the active pod runs on.
	// +optional
	Node string `json:"node,omitempty"`

	// Since is when the pod became active.
	// +optional
	Since *metav1.Time `json:"since,omitempty"`

	// Cause is how it became active: first (the Lease had never been
	// held), released (the pod before it handed over, as on a rollout or
	// a deleted pod) or expired (the pod before it, Previous, stopped
	// renewing the Lease: its pod or node was lost or cut off).
	// +optional
	Cause string `json:"cause,omitempty"`

	// Previous is the pod that was active before, when its Lease expired.
	// +optional
	Previous string `json:"previous,omitempty"`
}

// IKE SA states a TunnelStatus reports: strongSwan's own names, and DOWN
// for a tunnel that has no IKE SA.
const (
	IKEStateEstablished = "ESTABLISHED"
	IKEStateDown        = "DOWN"
)

// A TunnelStatus is one tunnel's state as charon reports it over VICI.
type TunnelStatus struct {
	// Name of the tunnel.
	Name string `json:"name"`

	// IKEState is the IKE SA's state as strongSwan names it (CONNECTING,
	// ESTABLISHED, REKEYING, DELETING, …), or DOWN when there is no IKE SA.
	// +optional
	IKEState string `json:"ikeState,omitempty"`

	// EstablishedAt is when the IKE SA was established.
	// +optional
	EstablishedAt *metav1.Time `json:"establishedAt,omitempty"`

	// ChildSAs of the IKE SA.
	// +optional
	ChildSAs []ChildSAStatus `json:"childSAs,omitempty"`

	// Up is true when the tunnel carries traffic: the IKE SA is ESTABLISHED
	// and every configured CHILD_SA is INSTALLED. An IKE SA without its
	// CHILD_SAs (for example after a PFS group mismatch at rekey, see
	// LastError) is not up.
	// +optional
	Up bool `json:"up,omitempty"`

	// LastError is the last failure charon reported for the tunnel, such as
	// AUTHENTICATION_FAILED or NO_PROPOSAL_CHOSEN.
	// +optional
	LastError string `json:"lastError,omitempty"`

	// Reinitiations counts the times the gateway agent initiated the tunnel,
	// or a missing CHILD_SA of it, because it had been down longer than the
	// agent's bound (flag --reinitiate-after-seconds, 30 by default) while
	// charon was not trying by itself; since the agent started. Charon's
	// own retries (keyingtries, close_action, dpd_action) are not counted.
	// +optional
	Reinitiations int32 `json:"reinitiations,omitempty"`

	// LastReinitiate is when the agent last did so.
	// +optional
	LastReinitiate *metav1.Time `json:"lastReinitiate,omitempty"`
}

// A ChildSAStatus is one CHILD_SA's state and counters.
type ChildSAStatus struct {
	// Name of the CHILD_SA (the swanctl child name).
	Name string `json:"name"`
	// State as strongSwan names it (INSTALLED, REKEYING, …).
	// +optional
	State string `json:"state,omitempty"`
	// LocalTS and RemoteTS are the negotiated traffic selectors, CIDRs.
	// +optional
	LocalTS []string `json:"localTS,omitempty"`
	// +optional
	RemoteTS []string `json:"remoteTS,omitempty"`
	// BytesIn and BytesOut count ESP payload bytes, PacketsIn and
	// PacketsOut packets, since the CHILD_SA was installed.
	// +optional
	BytesIn int64 `json:"bytesIn,omitempty"`
	// +optional
	BytesOut int64 `json:"bytesOut,omitempty"`
	// +optional
	PacketsIn int64 `json:"packetsIn,omitempty"`
	// +optional
	PacketsOut int64 `json:"packetsOut,omitempty"`
}
