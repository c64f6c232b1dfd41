//go:build integration

package integration

import (
	"context"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	gwv1alpha1 "github.com/ipsecgw/provider-ipsec/apis/cluster/gateway/v1alpha1"
	"github.com/ipsecgw/provider-ipsec/internal/migrate"
	"github.com/ipsecgw/provider-ipsec/internal/render"
	"github.com/ipsecgw/provider-ipsec/test/topology"
)

// peerView is what a peer sees of a connection, as charon lists it.
type peerView struct {
	Version, Rekey, Reauth, DPD, LocalID, RemoteID string
	Children                                       []childView
}

type childView struct {
	Mode, Rekey, DPDAction, CloseAction string
	Local, Remote                       []string
}

func viewOf(c topology.Conn) peerView {
	v := peerView{c.Version, c.RekeyTime, c.ReauthTime, c.DPDDelay, c.Local.ID, c.Remote.ID, nil}
	for _, ch := range c.Children {
		v.Children = append(v.Children, childView{ch.Mode, ch.RekeyTime, ch.DPDAction, ch.CloseAction, ch.LocalTS, ch.RemoteTS})
	}
	slices.SortFunc(v.Children, func(a, b childView) int {
		return strings.Compare(strings.Join(a.Local, " ")+strings.Join(a.Remote, " "), strings.Join(b.Local, " ")+strings.Join(b.Remote, " "))
	})
	return v
}

// TestImportRenderedMatchesVM is import --verify's comparison over the
// test table: the VM's ipsec.conf loaded by strongSwan's own starter into
// one charon, the IPsecGateway the import made rendered by internal/render
// (as the provider renders it) and loaded into another, both read back
// with list-conns. Every difference a peer would see (IKE version, rekey
// and reauthentication times, DPD, identities, per CHILD_SA the selectors,
// rekey time, mode, DPD and close actions) must be one the import's report
// names as approximated or refused for that tunnel.
func TestImportRenderedMatchesVM(t *testing.T) {
	topology.Need(t, "unshare")
	if _, err := os.Stat(topology.StarterBinary); err != nil {
		t.Skipf("strongSwan's starter is not installed (strongswan-starter): %v", err)
	}
	// The report's setting that excuses a difference in each field.
	excuse := map[string]string{"Version": "keyexchange", "LocalID": "leftid", "CloseActions": "closeaction",
		"CHILD_SAs": "leftsubnet/rightsubnet"}
	for _, name := range []string{"stroke-fleet", "ikev1-subnets"} {
		t.Run(name, func(t *testing.T) {
			dir, res, opts := importCase(t, name)
			vm := vmConns(t, dir, res)
			spec := gwv1alpha1.GatewayParameters{Namespace: "vpn-imported", GatewayConfig: gwv1alpha1.GatewayConfig{
				Endpoint: gwv1alpha1.Endpoint{PrivateAddress: "10.20.0.10", PrefixLength: 24, Gateway: "10.20.0.1",
					MACAddress: "fa:16:3e:00:00:01", LocalID: gwv1alpha1.IPv4(opts.FloatingIP)},
				Mode: gwv1alpha1.ModeRouted, Tunnels: res.Tunnels,
			}}
			for _, tn := range res.Tunnels {
				for _, ts := range tn.TrafficSelectors {
					if !slices.Contains(spec.TenantSubnets, ts.Local) {
						spec.TenantSubnets = append(spec.TenantSubnets, ts.Local)
					}
				}
			}
			files, err := render.Render(render.Input{Spec: spec, PSKs: res.PSKs})
			if err != nil {
				t.Fatalf("render the imported IPsecGateway: %v", err)
			}
			gwCharon := topology.StartValidator(t)
			if err := gwCharon.LoadConfig(context.Background(), files.SwanctlConf, files.Secrets); err != nil {
				t.Fatalf("load the rendered configuration: %v", err)
			}
			gw, err := gwCharon.ListConns(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			for _, tn := range res.Tunnels {
				want, got := viewOf(vm[res.Sources[tn.Name]]), viewOf(gw[tn.Name])
				excused := map[string]bool{}
				for _, f := range res.Report.Findings {
					if f.Tunnel == res.Sources[tn.Name] && f.Outcome != migrate.Converted {
						excused[f.Setting] = true
					}
				}
				for _, field := range []string{"Version", "Rekey", "Reauth", "DPD", "LocalID", "RemoteID", "CHILD_SAs", "CloseActions"} {
					w, g := fieldOf(want, field), fieldOf(got, field)
					if diff := cmp.Diff(w, g); diff != "" && excused[excuse[field]] {
						t.Logf("tunnel %s: %s differs, as the report says (%s):\n%s", tn.Name, field, excuse[field], diff)
					} else if diff != "" {
						t.Errorf("tunnel %s: the gateway's %s differs from the VM's, and the report does not say so (-vm +gateway):\n%s", tn.Name, field, diff)
					}
				}
			}
		})
	}
}

// fieldOf returns one field of v by name: CHILD_SAs are the children
// without their close actions, CloseActions those alone.
func fieldOf(v peerView, field string) any {
	var children []childView
	var closing []string
	for _, ch := range v.Children {
		closing = append(closing, ch.CloseAction)
		ch.CloseAction = ""
		children = append(children, ch)
	}
	return map[string]any{"Version": v.Version, "Rekey": v.Rekey, "Reauth": v.Reauth, "DPD": v.DPD,
		"LocalID": v.LocalID, "RemoteID": v.RemoteID, "CHILD_SAs": children, "CloseActions": closing}[field]
}
