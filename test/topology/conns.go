package topology

import (
	"context"
	"fmt"

	"github.com/strongswan/govici/vici"

	"github.com/ipsecgw/provider-ipsec/internal/agent/status"
)

// A Conn is one connection as charon lists it (list-conns): what it loaded,
// from swanctl.conf or from starter's stroke messages, whatever the file
// said. Times are in seconds, as charon writes them.
type Conn struct {
	// Name of the connection, the key of the list-conn event.
	Name        string               `vici:"-"`
	LocalAddrs  []string             `vici:"local_addrs"`
	RemoteAddrs []string             `vici:"remote_addrs"`
	Version     string               `vici:"version"`
	ReauthTime  string               `vici:"reauth_time"`
	RekeyTime   string               `vici:"rekey_time"`
	Unique      string               `vici:"unique"`
	DPDDelay    string               `vici:"dpd_delay"`
	DPDTimeout  string               `vici:"dpd_timeout"`
	Local       ConnAuth             `vici:"local-1"`
	Remote      ConnAuth             `vici:"remote-1"`
	Children    map[string]ConnChild `vici:"children"`
}

// ConnAuth is a connection's first authentication round.
type ConnAuth struct {
	Class string `vici:"class"`
	ID    string `vici:"id"`
}

// ConnChild is a CHILD_SA of a Conn.
type ConnChild struct {
	Mode        string   `vici:"mode"`
	RekeyTime   string   `vici:"rekey_time"`
	DPDAction   string   `vici:"dpd_action"`
	CloseAction string   `vici:"close_action"`
	LocalTS     []string `vici:"local-ts"`
	RemoteTS    []string `vici:"remote-ts"`
}

// ListConns returns every connection charon has loaded, by name.
func (c *Charon) ListConns(ctx context.Context) (map[string]Conn, error) {
	out := map[string]Conn{}
	for m, err := range (&status.Streamer{Session: c.Session}).CallStreaming(ctx, "list-conns", "list-conn", nil) {
		if err != nil {
			return nil, fmt.Errorf("list-conns in %s: %w", c.where(), err)
		}
		for _, name := range m.Keys() {
			body, ok := m.Get(name).(*vici.Message)
			if !ok {
				continue
			}
			var conn Conn
			if err := vici.UnmarshalMessage(body, &conn); err != nil {
				return nil, fmt.Errorf("list-conns in %s: connection %s: %w", c.where(), name, err)
			}
			conn.Name = name
			out[name] = conn
		}
	}
	return out, nil
}
