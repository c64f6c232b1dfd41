//go:build integration

package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	gwv1alpha1 "github.com/ipsecgw/provider-ipsec/apis/cluster/gateway/v1alpha1"
	"github.com/ipsecgw/provider-ipsec/internal/agent/xfrmlink"
	"github.com/ipsecgw/provider-ipsec/internal/swanctl"
	"github.com/ipsecgw/provider-ipsec/internal/xfrmi"
	"github.com/ipsecgw/provider-ipsec/test/topology"
)

// routeSpec is gatewaySpec in mode routed with a cloud VPN connection's
// two route-mode tunnels (identical 0.0.0.0/0 selectors, active metric
// 100, backup 200), for cases to change one thing in.
func routeSpec() gwv1alpha1.GatewayParameters {
	spec := gatewaySpec("tenant-admission")
	spec.Mode, spec.Exposures = gwv1alpha1.ModeRouted, nil
	base := spec.Tunnels[0]
	spec.Tunnels = nil
	for i, peer := range []string{"198.51.100.7", "198.51.100.8"} {
		tn := base
		tn.Name = []string{"cloud-vpn-1", "cloud-vpn-2"}[i]
		tn.Peer.Address = peer
		tn.TrafficSelectors = []gwv1alpha1.TrafficSelector{{Local: "0.0.0.0/0", Remote: "0.0.0.0/0"}}
		tn.Mode = gwv1alpha1.TunnelModeRoute
		tn.Routes = []gwv1alpha1.CIDR{"172.31.0.0/16"}
		tn.RouteMetric = ptr.To(int32(100 * (i + 1)))
		spec.Tunnels = append(spec.Tunnels, tn)
	}
	return spec
}

// TestGatewayAdmissionRouteMode proves the route-mode rules at the real
// API server (dry-run creates): two route-mode tunnels with identical
// 0.0.0.0/0 selectors are admitted, active/backup and ECMP, the optional
// fields left out too; 0.0.0.0/0 in mode policy, routes or routeMetric
// without mode route, mode route without routes, with dataPlane Libipsec
// or with the gateway's mode nat (given or by default) are refused, each
// naming the field and the fix.
func TestGatewayAdmissionRouteMode(t *testing.T) {
	const (
		libipsec = "a tunnel's mode route needs dataPlane KernelXFRM"
		nat      = "a tunnel's mode route needs the gateway's mode routed"
		anyNet   = "0.0.0.0/0 traffic selectors are for mode route"
	)
	cases := map[string]struct {
		reason string
		mod    func(*gwv1alpha1.GatewayParameters)
		want   string
	}{
		"ActiveBackup": {
			reason: "Two route-mode tunnels to a cloud VPN's endpoints with identical 0.0.0.0/0 selectors and metrics 100 and 200 are admitted.",
			mod:    func(*gwv1alpha1.GatewayParameters) {},
		},
		"ECMPMetricLeftOut": {
			reason: "routeMetric left out on both (100, equal cost) is admitted.",
			mod: func(s *gwv1alpha1.GatewayParameters) {
				s.Tunnels[0].RouteMetric, s.Tunnels[1].RouteMetric = nil, nil
			},
		},
		"NarrowedSelectors": {
			reason: "Route mode with a local selector inside the 0.0.0.0/0 remote one is admitted (the /0 side exempts the overlap rule).",
			mod: func(s *gwv1alpha1.GatewayParameters) {
				s.Tunnels[0].TrafficSelectors[0].Local = "10.30.0.0/24"
			},
		},
		"PolicyAnyNet": {
			reason: "0.0.0.0/0 in mode policy stays refused, at the tunnel's trafficSelectors.",
			mod: func(s *gwv1alpha1.GatewayParameters) {
				s.Tunnels[0].Mode, s.Tunnels[0].Routes, s.Tunnels[0].RouteMetric = gwv1alpha1.TunnelModePolicy, nil, nil
			},
			want: "spec.forProvider.tunnels[0].trafficSelectors: Invalid value: " + anyNet,
		},
		"ModeLeftOutAnyNet": {
			reason: "A tunnel whose mode is left out is in mode policy: 0.0.0.0/0 refused.",
			mod: func(s *gwv1alpha1.GatewayParameters) {
				s.Tunnels[1].Mode, s.Tunnels[1].Routes, s.Tunnels[1].RouteMetric = "", nil, nil
			},
			want: "spec.forProvider.tunnels[1].trafficSelectors: Invalid value: " + anyNet,
		},
		"RouteWithoutRoutes": {
			reason: "Mode route without routes is refused at .routes.",
			mod:    func(s *gwv1alpha1.GatewayParameters) { s.Tunnels[0].Routes = nil },
			want:   "spec.forProvider.tunnels[0].routes: Invalid value: a tunnel in mode route needs routes",
		},
		"RoutesInPolicy": {
			reason: "routes on a policy-mode tunnel are refused at .routes.",
			mod: func(s *gwv1alpha1.GatewayParameters) {
				s.Tunnels[1].Mode, s.Tunnels[1].RouteMetric = "", nil
				s.Tunnels[1].TrafficSelectors[0] = gwv1alpha1.TrafficSelector{Local: "10.30.0.0/24", Remote: "192.168.10.0/24"}
			},
			want: "spec.forProvider.tunnels[1].routes: Invalid value: routes are for mode route",
		},
		"MetricInPolicy": {
			reason: "routeMetric on a policy-mode tunnel is refused at .routeMetric.",
			mod: func(s *gwv1alpha1.GatewayParameters) {
				s.Tunnels[1].Mode, s.Tunnels[1].Routes = gwv1alpha1.TunnelModePolicy, nil
				s.Tunnels[1].TrafficSelectors[0] = gwv1alpha1.TrafficSelector{Local: "10.30.0.0/24", Remote: "192.168.10.0/24"}
			},
			want: "spec.forProvider.tunnels[1].routeMetric: Invalid value: routeMetric is for mode route",
		},
		"MetricOutOfRange": {
			reason: "A metric above 65535 is refused.",
			mod:    func(s *gwv1alpha1.GatewayParameters) { s.Tunnels[0].RouteMetric = ptr.To(int32(70000)) },
			want:   "spec.forProvider.tunnels[0].routeMetric: Invalid value: 70000",
		},
		"UnknownMode": {
			reason: "A tunnel mode other than policy and route is refused.",
			mod:    func(s *gwv1alpha1.GatewayParameters) { s.Tunnels[0].Mode = "vti" },
			want:   `spec.forProvider.tunnels[0].mode: Unsupported value: "vti"`,
		},
		"Libipsec": {
			reason: "kernel-libipsec has no interface IDs: refused at .tunnels with the way out.",
			mod:    func(s *gwv1alpha1.GatewayParameters) { s.DataPlane = gwv1alpha1.DataPlaneLibipsec },
			want:   "spec.forProvider.tunnels: Invalid value: " + libipsec,
		},
		"ModeNAT": {
			reason: "The gateway's mode nat is refused with route-mode tunnels.",
			mod:    func(s *gwv1alpha1.GatewayParameters) { s.Mode = gwv1alpha1.ModeNAT },
			want:   "spec.forProvider.tunnels: Invalid value: " + nat,
		},
		"ModeLeftOut": {
			reason: "The gateway's mode left out is nat: refused too.",
			mod:    func(s *gwv1alpha1.GatewayParameters) { s.Mode = "" },
			want:   nat,
		},
		"PolicyUnchanged": {
			reason: "A policy-mode gateway as before (no new field) on Libipsec in mode nat is admitted: the new rules are safe with every field absent.",
			mod: func(s *gwv1alpha1.GatewayParameters) {
				*s = gatewaySpec("tenant-admission")
				s.DataPlane = gwv1alpha1.DataPlaneLibipsec
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			spec := routeSpec()
			tc.mod(&spec)
			gw := &gwv1alpha1.Gateway{ObjectMeta: metav1.ObjectMeta{Name: "admission-route-" + strings.ToLower(name)}, Spec: gwv1alpha1.GatewaySpec{ForProvider: spec}}
			admission(t, gw, tc.reason, tc.want)
		})
	}
}

// TestCharonLoadsRouteModeGoldens loads every route-mode golden gateway's
// rendered configuration into a real charon over VICI (load-conn,
// load-shared: each must load, and charon must list every connection),
// checks that every route-mode child's if_id_in and if_id_out are the
// interface ID of its tunnel's XFRM interface in the golden's xfrm.json,
// and, as the control that makes the load meaningful, that charon refuses
// the same connection with an if_id_in it cannot parse (charon 5.9's
// list-conns does not show interface IDs, so the refusal shows that it
// reads them). The data plane of these tunnels (XFRM interfaces, ESP)
// cannot run here: this kernel has neither (`ip link add ... type xfrm`
// answers "Unknown device type").
func TestCharonLoadsRouteModeGoldens(t *testing.T) {
	dirs, err := filepath.Glob(filepath.Join(goldenDir, "route-*"))
	if err != nil || len(dirs) < 3 {
		t.Fatalf("route-mode goldens: %v %v, want at least route-active-backup, route-ecmp and route-mixed", dirs, err)
	}
	ctx := context.Background()
	for _, dir := range dirs {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			c := topology.StartValidator(t)
			conf := readFile(t, filepath.Join(dir, "swanctl.conf"))
			loadAll(t, c, conf, readFile(t, filepath.Join(dir, "secrets.conf")))
			var links xfrmi.Config
			if err := json.Unmarshal(readFile(t, filepath.Join(dir, xfrmi.File)), &links); err != nil {
				t.Fatal(err)
			}
			doc, err := swanctl.Parse(conf)
			if err != nil {
				t.Fatal(err)
			}
			var names, routed []string
			for _, conn := range doc.Lookup("connections").Sections {
				names = append(names, conn.Name)
				want := ""
				for _, i := range links.Interfaces {
					if i.Tunnel == conn.Name {
						want = strconv.FormatUint(uint64(i.IfID), 10)
					}
				}
				for _, child := range conn.Lookup("children").Sections {
					for _, k := range []string{"if_id_in", "if_id_out"} {
						if got := value(child, k); got != want {
							t.Errorf("%s/%s: %s = %q, want %q (xfrm.json's interface of the tunnel)", conn.Name, child.Name, k, got, want)
						}
					}
				}
				if want != "" {
					routed = append(routed, conn.Name)
				}
			}
			if diff := cmp.Diff(names, getConns(t, c.Session), cmpopts.SortSlices(func(a, b string) bool { return a < b })); diff != "" {
				t.Errorf("connections charon holds: -want, +got:\n%s", diff)
			}
			if len(routed) != len(links.Interfaces) {
				t.Errorf("%d connections carry interface IDs, xfrm.json has %d interfaces", len(routed), len(links.Interfaces))
			}
			// The control: charon reads if_id_in and refuses a bad one.
			bad := edit(t, conf, func(d *swanctl.Section) {
				conn := d.Lookup("connections." + routed[0])
				setting(conn.Lookup("children").Sections[0], "if_id_in", "not-an-id")
			})
			bdoc, _ := swanctl.Parse(bad)
			conns, err := swanctl.LoadConns(bdoc)
			if err != nil {
				t.Fatal(err)
			}
			for _, conn := range conns {
				if conn.Name != routed[0] {
					continue
				}
				if _, err := c.Call(ctx, "load-conn", conn.Message); err == nil {
					t.Errorf("charon loaded %s with if_id_in not-an-id: it does not check interface IDs, so loading proves nothing", conn.Name)
				} else {
					t.Logf("control: charon refuses if_id_in not-an-id: %v", err)
				}
			}
			t.Logf("%d connections loaded, %d of them route-mode", len(names), len(routed))
		})
	}
}

// value is the value of setting key of s, "" when s has none.
func value(s *swanctl.Section, key string) string {
	for _, st := range s.Settings {
		if st.Key == key {
			return st.Value
		}
	}
	return ""
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestXFRMLinkInNamespace runs the agent's XFRM interface setup
// (xfrmlink.Applier, real rtnetlink) in a network namespace of its own
// with net1 a veth, on route-active-backup's xfrm.json. On a kernel with
// XFRM interfaces it must create both interfaces with their IDs on net1,
// up, route 172.16.5.0/24 and 172.31.0.0/16 over them with metrics 100 and
// 200, change nothing when applied again, and remove everything for an
// empty file. On this machine's kernel, which has none (`ip link add ...
// type xfrm`: Unknown device type), it must fail naming each interface and
// the kernel's refusal, leave net1 and its route alone and create nothing;
// the test then says the data plane could not be tried.
func TestXFRMLinkInNamespace(t *testing.T) {
	needRoot(t)
	ns := agentsNetns(t, "ipsecgw-xfrmlink-test")
	mustRun(t, "ip", "-n", ns, "link", "add", "net1", "type", "veth", "peer", "name", "peer1")
	mustRun(t, "ip", "-n", ns, "link", "set", "net1", "up")
	mustRun(t, "ip", "-n", ns, "address", "add", "10.20.0.10/24", "dev", "net1")
	file := readFile(t, filepath.Join(goldenDir, "route-active-backup", xfrmi.File))
	var conf xfrmi.Config
	if err := json.Unmarshal(file, &conf); err != nil {
		t.Fatal(err)
	}
	state := func() string {
		return mustRun(t, "ip", "-n", ns, "-d", "link", "show", "type", "xfrm") + mustRun(t, "ip", "-n", ns, "route", "show", "table", "main")
	}
	var res xfrmlink.Result
	var err error
	apply := func(b []byte) {
		t.Helper()
		if derr := topology.Do(ns, func() error {
			a, nerr := xfrmlink.New("net1")
			if nerr != nil {
				return nerr
			}
			res, err = a.Apply(b)
			return nil
		}); derr != nil {
			t.Fatal(derr)
		}
	}
	apply(file)
	if err != nil {
		for _, i := range conf.Interfaces {
			if want := fmt.Sprintf("cannot create XFRM interface %s (if_id %d): ", i.Name, i.IfID); !strings.Contains(err.Error(), want) {
				t.Errorf("Apply on a kernel without XFRM interfaces: %v\nwant an error holding %q", err, want)
			}
		}
		got := state()
		if strings.Contains(got, "xfrm") || !strings.Contains(got, "10.20.0.0/24 dev net1") {
			t.Errorf("after the failed Apply the namespace holds:\n%s\nwant no XFRM interface and net1's route as it was", got)
		}
		t.Logf("this kernel has no XFRM interfaces: the route-based data plane cannot be tried here; the agent reports: %v", err)
		return
	}
	if diff := cmp.Diff([]string{conf.Interfaces[0].Name, conf.Interfaces[1].Name}, res.Created); diff != "" {
		t.Errorf("created interfaces: -want, +got:\n%s", diff)
	}
	got := state()
	for _, i := range conf.Interfaces {
		if want := fmt.Sprintf("if_id %#x", i.IfID); !strings.Contains(got, i.Name) || !strings.Contains(got, want) {
			t.Errorf("the namespace holds:\n%s\nwant %s with %s", got, i.Name, want)
		}
	}
	for _, r := range conf.Routes {
		if want := fmt.Sprintf("%s dev %s proto static scope link metric %d", r.Destination, r.Interfaces[0], r.Metric); !strings.Contains(got, want) {
			t.Errorf("the namespace's routes:\n%s\nwant %q", got, want)
		}
	}
	apply(file)
	if err != nil || res.Changed() {
		t.Errorf("Apply again: %+v, %v; want nothing changed", res, err)
	}
	apply(nil)
	if err != nil || strings.Contains(state(), "xfrm") {
		t.Errorf("Apply of no file: %v; the namespace still holds:\n%s", err, state())
	}
}
