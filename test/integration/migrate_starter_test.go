//go:build integration

package integration

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	gwv1alpha1 "github.com/ipsecgw/provider-ipsec/apis/cluster/gateway/v1alpha1"
	"github.com/ipsecgw/provider-ipsec/internal/migrate"
	"github.com/ipsecgw/provider-ipsec/test/topology"
)

// TestImportMatchesStarter has strongSwan's own starter load each
// strongSwan ipsec.conf case of internal/migrate's testdata into a charon
// (stroke, as the VM's ipsec service does) and compares what charon loaded
// (list-conns) with what the import made of each conn: the IKE version, the
// IKE SA's rekey and reauthentication times, DPD, the peer's identity, and
// per CHILD_SA the traffic selectors, rekey time, mode and DPD action. The
// import must carry what the VM's charon did, not what the file seems to
// say (rightsubnet={a,b} carries b alone).
func TestImportMatchesStarter(t *testing.T) {
	topology.Need(t, "unshare")
	if _, err := os.Stat(topology.StarterBinary); err != nil {
		t.Skipf("strongSwan's starter is not installed (strongswan-starter): %v", err)
	}
	for _, name := range []string{"stroke-fleet", "ikev1-subnets"} {
		t.Run(name, func(t *testing.T) {
			dir, res, _ := importCase(t, name)
			conns := vmConns(t, dir, res)
			for _, tn := range res.Tunnels {
				compareConn(t, tn, conns[res.Sources[tn.Name]])
			}
		})
	}
}

// importCase imports the ipsec.conf and ipsec.secrets of the test case
// name of internal/migrate's testdata as the VM at 10.20.0.5 behind the
// floating IP 203.0.113.10, and returns the case's directory, the import
// and its options.
func importCase(t *testing.T, name string) (string, *migrate.Result, migrate.Options) {
	t.Helper()
	dir := filepath.Join(repoRoot, "internal", "migrate", "testdata", name)
	opts := migrate.Options{Name: "imported", Namespace: "default", FloatingIP: "203.0.113.10", VMAddress: "10.20.0.5"}
	res, err := migrate.ImportIPsecConf(os.DirFS(dir), "ipsec.conf", "ipsec.secrets", opts)
	if err != nil {
		t.Fatal(err)
	}
	return dir, res, opts
}

// vmConns has strongSwan's starter load dir's ipsec.conf and ipsec.secrets
// into a charon, as the VM's ipsec service does, and returns what charon
// loaded once every conn res imported is there.
func vmConns(t *testing.T, dir string, res *migrate.Result) map[string]topology.Conn {
	t.Helper()
	c := &topology.Charon{Dir: t.TempDir(), Conf: topology.StrokeConf(filepath.Join(dir, "ipsec.secrets")), IPsecConf: filepath.Join(dir, "ipsec.conf")}
	t.Cleanup(func() { c.Stop(syscall.SIGTERM) })
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	var conns map[string]topology.Conn
	eventually(t, 10*time.Second, "starter has added every imported conn", func() error {
		var err error
		if conns, err = c.ListConns(context.Background()); err != nil {
			return err
		}
		for _, tn := range res.Tunnels {
			if _, ok := conns[res.Sources[tn.Name]]; !ok {
				return fmt.Errorf("conn %s not loaded yet (%d loaded)", res.Sources[tn.Name], len(conns))
			}
		}
		return nil
	})
	return conns
}

// compareConn fails t where the imported tunnel differs from the conn the
// VM's charon loaded.
func compareConn(t *testing.T, tn gwv1alpha1.Tunnel, vm topology.Conn) {
	t.Helper()
	secs := func(d *gwv1alpha1.Duration) string {
		if d == nil {
			return "unset"
		}
		v, err := d.Duration()
		if err != nil {
			return "malformed " + string(*d)
		}
		return strconv.Itoa(int(v / time.Second))
	}
	version := map[int32]string{1: "IKEv1", 2: "IKEv2"}[tn.IKEVersion]
	if vm.Version == "IKEv1/2" && tn.IKEVersion == 2 {
		version = vm.Version // keyexchange=ike: reported as approximated
	}
	peerID := tn.Peer.ID
	if peerID == "" {
		peerID = tn.Peer.Address
	}
	type ike struct{ Version, Rekey, Reauth, DPD, PeerID string }
	if diff := cmp.Diff(ike{vm.Version, vm.RekeyTime, vm.ReauthTime, vm.DPDDelay, vm.Remote.ID},
		ike{version, secs(tn.IKELifetime.RekeyTime), secs(tn.IKELifetime.ReauthTime), secs(tn.DPD.Delay), peerID}); diff != "" {
		t.Errorf("tunnel %s: the IKE SA differs from the VM's conn %s (-vm +import):\n%s", tn.Name, vm.Name, diff)
	}
	type child struct {
		Mode, Rekey, DPDAction string
		Local, Remote          []string
	}
	// charon lists dpd_action clear as none (ACTION_NONE: the CHILD_SA is
	// closed, nothing more).
	dpdAction := map[string]string{"restart": "start", "clear": "none", "trap": "trap"}[tn.DPD.Action]
	var got, want []child
	for _, ch := range vm.Children {
		if secs(tn.DPD.Delay) == "0" {
			ch.DPDAction = "" // no DPD: the action never runs
		}
		got = append(got, child{ch.Mode, ch.RekeyTime, ch.DPDAction, ch.LocalTS, ch.RemoteTS})
	}
	if secs(tn.DPD.Delay) == "0" {
		dpdAction = ""
	}
	var local, remote []string
	for _, ts := range tn.TrafficSelectors {
		if !slices.Contains(local, string(ts.Local)) {
			local = append(local, string(ts.Local))
		}
		if !slices.Contains(remote, string(ts.Remote)) {
			remote = append(remote, string(ts.Remote))
		}
	}
	if tn.IKEVersion == 2 || len(tn.TrafficSelectors) == 1 {
		want = []child{{"TUNNEL", secs(tn.ChildLifetime.RekeyTime), dpdAction, local, remote}}
	} else {
		// IKEv1 with several pairs: charon proposed the first pair only
		// (reported as approximated); the gateway's first CHILD_SA is it.
		ts := tn.TrafficSelectors[0]
		want = []child{{"TUNNEL", secs(tn.ChildLifetime.RekeyTime), dpdAction, local, []string{string(ts.Remote)}}}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("tunnel %s: the CHILD_SAs differ from the VM's conn %s (-import +vm):\n%s", tn.Name, vm.Name, diff)
	}
}
