// Package xfrmi describes the XFRM interfaces and routes of a gateway's
// route-mode tunnels (v1alpha1.TunnelModeRoute): what the renderer writes
// into the gateway's ConfigMap (key xfrm.json) and the gateway agent makes
// true in the pod's network namespace. It is pure: no netlink here.
//
// Each route-mode tunnel has one XFRM interface whose interface ID (the
// if_id_in and if_id_out of its CHILD_SAs in swanctl.conf) and name depend
// on the tunnel's name alone (IfID, InterfaceName), so that adding,
// removing or reordering other tunnels renames and renumbers nothing and a
// live reload leaves every other tunnel's interface, routes and SAs alone.
package xfrmi

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
)

// File is the key of the rendered Config, as JSON, in the gateway's
// ConfigMap, and its name in the agent's configuration directory.
const File = "xfrm.json"

// Config is the whole set of XFRM interfaces and routes of a gateway, in
// the order the renderer found them (tunnels in spec order; routes sorted
// by destination, then metric).
type Config struct {
	// Interfaces are the XFRM interfaces, one per route-mode tunnel.
	Interfaces []Interface `json:"interfaces"`
	// Routes are the routes over them, in the main routing table.
	Routes []Route `json:"routes"`
}

// An Interface is the XFRM interface of one route-mode tunnel.
type Interface struct {
	// Name of the interface: InterfaceName(IfID).
	Name string `json:"name"`
	// IfID is the XFRM interface ID: IfID(Tunnel).
	IfID uint32 `json:"ifId"`
	// Tunnel is the tunnel's name, for people reading the file.
	Tunnel string `json:"tunnel"`
}

// A Route sends Destination over one or more of the interfaces. With one
// interface it is a plain route "Destination dev <interface> metric
// Metric"; with several, the tunnels that route Destination with the same
// metric, it is one multipath route with a next hop per interface (ECMP):
// the kernel refuses a second IPv4 route with the same destination and
// metric, and would not balance over two.
type Route struct {
	// Destination is an IPv4 network in CIDR notation.
	Destination string `json:"destination"`
	// Metric is the route's priority: lower wins.
	Metric uint32 `json:"metric"`
	// Interfaces are the names of the interfaces, sorted.
	Interfaces []string `json:"interfaces"`
}

// IfID is the XFRM interface ID of the route-mode tunnel named tunnel: the
// first four bytes of the SHA-256 of the name, big-endian, with the top bit
// cleared (strongSwan's %unique and %unique-dir are 0xffffffff and
// 0xfffffffe), and 1 if that is 0 (0 means no interface).
// Validation refuses two tunnels of a gateway whose IDs collide.
func IfID(tunnel string) uint32 {
	h := sha256.Sum256([]byte(tunnel))
	id := binary.BigEndian.Uint32(h[:4]) &^ (1 << 31)
	if id == 0 {
		return 1
	}
	return id
}

// InterfaceName is the name of the XFRM interface with ID id: "xfrm" and
// the ID as eight hex digits, such as xfrm1a2b3c4d, 12 characters (Linux
// allows 15). A tunnel's own name can be 32 characters: too long.
func InterfaceName(id uint32) string {
	return fmt.Sprintf("xfrm%08x", id)
}
