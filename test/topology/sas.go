package topology

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/strongswan/govici/vici"

	"github.com/ipsecgw/provider-ipsec/internal/agent/status"
)

// An IKESA is one IKE SA as charon's list-sas reports it (the list-sa event
// of https://github.com/strongswan/strongswan/blob/5.9.8/src/libcharon/plugins/vici/README.md).
// Every value is a string, empty when charon leaves it out ("nat-local" is
// "yes" or absent).
type IKESA struct {
	// Name of the connection, the key of the list-sa event.
	Name        string             `vici:"-"`
	UniqueID    string             `vici:"uniqueid"`
	Version     string             `vici:"version"`
	State       string             `vici:"state"`
	LocalHost   string             `vici:"local-host"`
	LocalPort   string             `vici:"local-port"`
	LocalID     string             `vici:"local-id"`
	RemoteHost  string             `vici:"remote-host"`
	RemotePort  string             `vici:"remote-port"`
	RemoteID    string             `vici:"remote-id"`
	Initiator   string             `vici:"initiator"`
	NATLocal    string             `vici:"nat-local"`
	NATRemote   string             `vici:"nat-remote"`
	EncrAlg     string             `vici:"encr-alg"`
	EncrKeysize string             `vici:"encr-keysize"`
	IntegAlg    string             `vici:"integ-alg"`
	PRFAlg      string             `vici:"prf-alg"`
	DHGroup     string             `vici:"dh-group"`
	Established string             `vici:"established"`
	ChildSAs    map[string]ChildSA `vici:"child-sas"`
}

// A ChildSA is one CHILD_SA of an IKESA, keyed there by <child>-<uniqueid>.
type ChildSA struct {
	Name        string   `vici:"name"`
	UniqueID    string   `vici:"uniqueid"`
	State       string   `vici:"state"`
	Mode        string   `vici:"mode"`
	Protocol    string   `vici:"protocol"`
	Encap       string   `vici:"encap"`
	SPIIn       string   `vici:"spi-in"`
	SPIOut      string   `vici:"spi-out"`
	EncrAlg     string   `vici:"encr-alg"`
	DHGroup     string   `vici:"dh-group"`
	BytesIn     string   `vici:"bytes-in"`
	PacketsIn   string   `vici:"packets-in"`
	BytesOut    string   `vici:"bytes-out"`
	PacketsOut  string   `vici:"packets-out"`
	InstallTime string   `vici:"install-time"`
	LocalTS     []string `vici:"local-ts"`
	RemoteTS    []string `vici:"remote-ts"`
}

// Child returns the first CHILD_SA of sa named name, and whether there is
// one.
func (sa IKESA) Child(name string) (ChildSA, bool) {
	for _, c := range sa.ChildSAs {
		if c.Name == name {
			return c, true
		}
	}
	return ChildSA{}, false
}

// Installed returns the INSTALLED CHILD_SA of sa named name, the newest
// (highest unique id) if a rekey left several, and whether there is one.
func (sa IKESA) Installed(name string) (ChildSA, bool) {
	var out ChildSA
	newest := -1
	for _, c := range sa.ChildSAs {
		id, err := strconv.Atoi(c.UniqueID)
		if c.Name == name && c.State == "INSTALLED" && err == nil && id > newest {
			out, newest = c, id
		}
	}
	return out, newest >= 0
}

// ListSAs returns every IKE SA of the charon, in charon's order. It asks
// with noblock, so an SA busy in an exchange does not hold the answer up.
func (c *Charon) ListSAs(ctx context.Context) ([]IKESA, error) {
	in := vici.NewMessage()
	if err := in.Set("noblock", "yes"); err != nil {
		return nil, err
	}
	var out []IKESA
	// status.Streamer: govici's own CallStreaming can lose the last events.
	for m, err := range (&status.Streamer{Session: c.Session}).CallStreaming(ctx, "list-sas", "list-sa", in) {
		if err != nil {
			return nil, fmt.Errorf("list-sas in %s: %w", c.NS, err)
		}
		for _, name := range m.Keys() {
			body, ok := m.Get(name).(*vici.Message)
			if !ok {
				continue
			}
			var sa IKESA
			if err := vici.UnmarshalMessage(body, &sa); err != nil {
				return nil, fmt.Errorf("list-sas in %s: IKE SA %s: %w", c.NS, name, err)
			}
			sa.Name = name
			out = append(out, sa)
		}
	}
	return out, nil
}

// PollInterval is how often AwaitSA asks charon.
const PollInterval = 50 * time.Millisecond

// AwaitSA polls list-sas until an IKE SA of connection conn satisfies ok,
// and returns it; after timeout the error names the last SAs seen.
func (c *Charon) AwaitSA(conn string, timeout time.Duration, ok func(IKESA) bool) (IKESA, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var last []IKESA
	var lastErr error
	for {
		sas, err := c.ListSAs(ctx)
		if err == nil {
			last = sas
			for _, sa := range sas {
				if sa.Name == conn && ok(sa) {
					return sa, nil
				}
			}
		} else {
			lastErr = err
		}
		select {
		case <-ctx.Done():
			msg := fmt.Sprintf("no IKE SA of %s in %s as wanted within %v; last seen: %+v", conn, c.NS, timeout, last)
			if lastErr != nil {
				return IKESA{}, fmt.Errorf("%s (last error: %w)", msg, lastErr)
			}
			return IKESA{}, errors.New(msg)
		case <-time.After(PollInterval):
		}
	}
}

// WaitSA is AwaitSA failing t on error.
func (c *Charon) WaitSA(t testing.TB, conn string, timeout time.Duration, ok func(IKESA) bool) IKESA {
	t.Helper()
	sa, err := c.AwaitSA(conn, timeout, ok)
	if err != nil {
		t.Fatal(err)
	}
	return sa
}

// Up says whether sa is ESTABLISHED with every named CHILD_SA INSTALLED.
func Up(children ...string) func(IKESA) bool {
	return func(sa IKESA) bool {
		if sa.State != "ESTABLISHED" {
			return false
		}
		for _, n := range children {
			if _, ok := sa.Installed(n); !ok {
				return false
			}
		}
		return true
	}
}
