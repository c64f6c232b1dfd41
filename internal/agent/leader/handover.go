package leader

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"time"
)

// Timings of a single pod's election with Handover (Elector's
// LeaseDuration, RenewDeadline and RetryPeriod).
const (
	HandoverLeaseDuration = 20 * time.Second
	HandoverRenewDeadline = 15 * time.Second
	HandoverRetryPeriod   = 5 * time.Second
)

// Handover is the Holder of the single pod of a gateway with replicas 1,
// elected with Keep on the gateway's Lease, so that the pod that replaces
// it starts the tunnels only after it went quiet.
//
// Both pods have the address on their net1 from the CNI's static IPAM,
// with the same MAC: the ReplicaSet starts the replacement as soon as the
// pod is deleted, and the kubelet sends the old pod SIGTERM only a second
// or two later (measured: 1.07-2.01 s; docs/measurements.md). The agent
// lets net1 answer and charon initiate (Take) once it holds the Lease,
// which the old pod's agent releases on SIGTERM after it silenced its net1
// (Release). The network attachment brings net1 up with arp_ignore 8, so
// that it stays silent until then, once the agent reported that it resets
// it (ReportSilentStart) from a pod of the image the Gateway runs: an
// older agent (a Gateway's images are kept on provider upgrades) never
// does (docs/active-standby.md).
//
// Its Lease has longer timings than an active/standby pair's (Handover*):
// a single pod renews every 5 s rather than every second (one write of
// the API server a second for every gateway would be its largest load),
// and nothing waits on them but a replacement whose old pod stopped
// without releasing the Lease (a forced deletion): it answers at most
// HandoverLeaseDuration and a retry after the old pod's last renewal. A
// lost node's pod is replaced only when it is evicted, minutes later.
type Handover struct {
	// Interface is the tenant network's interface, net1.
	Interface string
}

// Take lets Interface answer ARP (Silence) and announces each of its IPv4
// addresses with a gratuitous ARP, so that the tenant network's switches
// send the address's traffic to this pod's node at once rather than at
// its next frame. It fails when the interface cannot be changed or found.
func (h Handover) Take(context.Context) error {
	if err := Silence(h.Interface, false); err != nil {
		return err
	}
	ifi, err := net.InterfaceByName(h.Interface)
	if err != nil {
		return fmt.Errorf("cannot find %s: %w", h.Interface, err)
	}
	addrs, err := ifi.Addrs()
	if err != nil {
		return fmt.Errorf("cannot list the addresses of %s: %w", h.Interface, err)
	}
	for _, a := range addrs {
		n, ok := a.(*net.IPNet)
		if !ok {
			continue
		}
		if ip, ok := netip.AddrFromSlice(n.IP); ok && ip.Unmap().Is4() {
			if err := announce(ifi, ip.Unmap()); err != nil {
				return fmt.Errorf("cannot announce %s on %s: %w", ip.Unmap(), h.Interface, err)
			}
		}
	}
	return nil
}

// Release silences Interface (Silence): it answers no ARP, and keeps its
// addresses and routes.
func (h Handover) Release(context.Context) error { return Silence(h.Interface, true) }

// Refresh does nothing: the address is the CNI's and permanent, and only
// an answer to ARP passes to the replacement.
func (Handover) Refresh(context.Context, time.Duration) error { return nil }

// Answer lets Interface answer ARP (Silence), without an announcement: a
// single pod without the handover (the agent run outside a gateway pod).
func (h Handover) Answer() error { return Silence(h.Interface, false) }

// String is the interface's name, as logs show it.
func (h Handover) String() string { return h.Interface }
