//go:build integration

package integration

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"

	gwv1alpha1 "github.com/ipsecgw/provider-ipsec/apis/cluster/gateway/v1alpha1"
	"github.com/ipsecgw/provider-ipsec/internal/agent/leader"
	"github.com/ipsecgw/provider-ipsec/internal/contract"
	"github.com/ipsecgw/provider-ipsec/internal/render"
	"github.com/ipsecgw/provider-ipsec/internal/workload"
	"github.com/ipsecgw/provider-ipsec/test/topology"
)

// The pods' MACs on the tenant network: different, so that the router's
// ARP watch tells them apart. Both pods of a real gateway take the port's
// MAC with the address (the rendered Up script's first line): each agent
// here runs the rendered script with its own MAC in its place.
const (
	macA = "fa:16:3e:00:00:0a"
	macB = "fa:16:3e:00:00:0b"
)

// TestAddressExpiresWithTheAgent runs two real gateway agents
// (cmd/gateway-agent, with the Up and Down scripts rendered for replicas 2)
// elected on a Lease of the API server, each in a network namespace of its
// own whose net1 is on the router's tenant bridge, as the two pods of a
// gateway with replicas 2, while the router asks every 100 ms who has the
// gateway's address. The active agent stops without giving anything up:
// killed (SIGKILL: OOM) or frozen (SIGSTOP: a node that stalls). The
// kernel must remove its address at the end of the lifetime the agent
// refreshed, so that its net1 answers no ARP within the renew deadline and
// the kernel's rounding, and only then may the other agent take over: no
// request is ever answered by both. A frozen agent that runs again takes
// nothing back.
func TestAddressExpiresWithTheAgent(t *testing.T) {
	topology.Need(t, "ip", "nsenter")
	bin := buildAgent(t)
	up, down := replicas2Scripts(t)
	cases := map[string]struct {
		reason string
		sig    syscall.Signal
	}{
		"Killed": {
			reason: "An agent killed with SIGKILL gives nothing up: its address expires in the kernel before the other takes the Lease.",
			sig:    syscall.SIGKILL,
		},
		"Frozen": {
			reason: "A frozen agent (SIGSTOP) gives nothing up while frozen: its address expires all the same, and when it runs again it takes nothing back.",
			sig:    syscall.SIGSTOP,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			tp := topology.StartBare(t, topology.Options{})
			nsA, err := tp.AddPod("poda", contract.SecondaryInterface, macA)
			if err != nil {
				t.Fatal(err)
			}
			nsB, err := tp.AddPod("podb", contract.SecondaryInterface, macB)
			if err != nil {
				t.Fatal(err)
			}
			kns := fmt.Sprintf("lifetime-%d", nsSeq.Add(1))
			if err := kube.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: kns}}); err != nil {
				t.Fatal(err)
			}
			if err := kube.Create(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: kns, Name: "vpn"}}); err != nil {
				t.Fatal(err)
			}
			arp, err := topology.WatchARP(tp.Router, topology.TenantBridge, topology.PrivateAddress)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { arp.Stop() })

			a := startElectedAgent(t, tp, bin, nsA, kns, "vpn-a", withMAC(t, up, macA), down)
			took := waitFor(t, 15*time.Second, "vpn-a answering ARP for the address", func() bool { return answered(arp.Rounds(), time.Time{}, macA) })
			t.Logf("vpn-a active %s after start", took.Round(time.Millisecond))
			startElectedAgent(t, tp, bin, nsB, kns, "vpn-b", withMAC(t, up, macB), down)
			// Longer than the address's lifetime: only the refreshes keep it.
			standby := time.Now()
			time.Sleep(leader.DefaultRenewDeadline + 2*time.Second)
			if got := macsSince(arp.Rounds(), standby); fmt.Sprint(got) != fmt.Sprint([]string{macA}) {
				t.Fatalf("while vpn-a renews, ARP for %s answered by %v, want %s alone (its address refreshed beyond its %d s lifetime)", topology.PrivateAddress, got, macA, contract.AddressLifetime)
			}
			if out := addresses(t, tp, nsA); !strings.Contains(out, "valid_lft") || strings.Contains(out, "forever") {
				t.Errorf("vpn-a's addresses have no finite lifetime:\n%s", out)
			}

			stopped := time.Now()
			if err := a.Process.Signal(tc.sig); err != nil {
				t.Fatal(err)
			}
			var gone, taken time.Time
			waitFor(t, 30*time.Second, "vpn-b holding the address", func() bool {
				if gone.IsZero() && addresses(t, tp, nsA) == "" {
					gone = time.Now()
				}
				taken = time.Now()
				return strings.Contains(addresses(t, tp, nsB), topology.PrivateAddress.String()+"/")
			})
			waitFor(t, 10*time.Second, "vpn-b answering ARP", func() bool { return answered(arp.Rounds(), stopped, macB) })
			// A second of both answering, if vpn-a still holds it.
			time.Sleep(time.Second)
			if tc.sig == syscall.SIGSTOP {
				if err := a.Process.Signal(syscall.SIGCONT); err != nil {
					t.Fatal(err)
				}
				time.Sleep(3 * time.Second)
				if out := addresses(t, tp, nsA); out != "" {
					t.Errorf("%s\nvpn-a took an address back after it ran again:\n%s", tc.reason, out)
				}
			}
			rounds := arp.Rounds()
			requests, twice, _ := arp.Stop()
			lastA, firstB := lastAnswer(rounds, macA), firstAnswer(rounds, stopped, macB)
			silent := lastA.Add(topology.ARPInterval)
			t.Logf("%s: address gone %s after the signal, ARP silent after %s, vpn-b's address %s and its first ARP answer %s after; %d ARP requests, %d answered twice",
				name, gone.Sub(stopped).Round(time.Millisecond), silent.Sub(stopped).Round(time.Millisecond),
				taken.Sub(stopped).Round(time.Millisecond), firstB.Sub(stopped).Round(time.Millisecond), requests, len(twice))
			// The kernel removes the address at the end of its lifetime,
			// rounded up to a second: renew deadline plus a second, plus
			// slack for a busy machine.
			bound := leader.DefaultRenewDeadline + 2*time.Second
			if d := gone.Sub(stopped); d > bound {
				t.Errorf("%s\nvpn-a's address gone %s after the signal, want within %s", tc.reason, d, bound)
			}
			if d := silent.Sub(stopped); d > bound {
				t.Errorf("%s\nvpn-a answered ARP until %s after the signal, want silent within %s", tc.reason, d, bound)
			}
			if gone.IsZero() {
				t.Errorf("%s\nvpn-a still held the address when vpn-b took it:\n%s", tc.reason, addresses(t, tp, nsA))
			}
			if !lastA.Before(firstB) || !gone.Before(taken) {
				t.Errorf("%s\nvpn-a answered ARP last at %s and lost its address at %s, vpn-b answered first at %s and had its address at %s: want vpn-a gone first",
					tc.reason, lastA.Format(time.StampMilli), gone.Format(time.StampMilli), firstB.Format(time.StampMilli), taken.Format(time.StampMilli))
			}
			if len(twice) > 0 {
				t.Errorf("%s\nARP requests for %s answered by both pods: %v", tc.reason, topology.PrivateAddress, twice)
			}
			if got := macsSince(rounds, firstB); fmt.Sprint(got) != fmt.Sprint([]string{macB}) {
				t.Errorf("%s\nafter vpn-b took over, ARP answered by %v, want %s alone", tc.reason, got, macB)
			}
		})
	}
}

// buildAgent builds cmd/gateway-agent into a directory of t's.
func buildAgent(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "gateway-agent")
	build := exec.Command("go", "build", "-o", bin, "./cmd/gateway-agent")
	build.Dir = repoRoot
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build ./cmd/gateway-agent: %v\n%s", err, out)
	}
	return bin
}

// replicas2Scripts returns the Up and Down scripts the provider renders
// for the agents of a Gateway with replicas 2 (data plane libipsec: Up
// adds a second address to net1).
func replicas2Scripts(t *testing.T) (up, down string) {
	t.Helper()
	spec := gatewaySpec("tenant")
	spec.Replicas = ptr.To[int32](2)
	spec.DataPlane = gwv1alpha1.DataPlaneLibipsec
	f, err := render.Render(render.Input{Spec: spec, PSKs: map[string][]byte{"branch-a": []byte(psk)}})
	if err != nil {
		t.Fatal(err)
	}
	objs, err := workload.Build(&gwv1alpha1.Gateway{ObjectMeta: metav1.ObjectMeta{Name: "vpn"}, Spec: gwv1alpha1.GatewaySpec{ForProvider: spec}}, f)
	if err != nil {
		t.Fatal(err)
	}
	args := objs.Deployment.Spec.Template.Spec.Containers[1].Args // strongswan, agent
	for _, arg := range args {
		if s, ok := strings.CutPrefix(arg, "--address-up="); ok {
			up = s
		}
		if s, ok := strings.CutPrefix(arg, "--address-down="); ok {
			down = s
		}
	}
	if up == "" || down == "" {
		t.Fatal("the rendered agent has no --address-up or --address-down")
	}
	return up, down
}

// startElectedAgent starts the agent bin as pod of an active/standby pair in the
// network namespace ns, elected on the Lease vpn of namespace kns of the
// API server (through a proxy in ns), with no charon; it is killed when t
// ends and its log shown if t failed.
// withMAC returns the rendered Up script up with mac in place of the
// port's MAC that it sets on net1.
func withMAC(t *testing.T, up, mac string) string {
	t.Helper()
	first, rest, ok := strings.Cut(up, "\n")
	if !ok || !strings.HasPrefix(first, "ip link set "+contract.SecondaryInterface+" address ") {
		t.Fatalf("the rendered Up script does not begin by setting %s's MAC:\n%s", contract.SecondaryInterface, up)
	}
	return "ip link set " + contract.SecondaryInterface + " address " + mac + "\n" + rest
}

func startElectedAgent(t *testing.T, tp *topology.Topology, bin, ns, kns, pod, up, down string) *exec.Cmd {
	t.Helper()
	dir := t.TempDir()
	kubeconfig := apiIn(t, ns, dir)
	return startAgentBinary(t, tp, bin, ns, pod, dir, []string{"KUBECONFIG=" + kubeconfig},
		"--lease=vpn", "--namespace="+kns, "--pod-name="+pod, "--interface="+contract.SecondaryInterface,
		"--address="+topology.PrivateAddress.String(), "--address-up="+up, "--address-down="+down)
}

// startAgentBinary starts the agent bin as pod in the network namespace ns with
// args, env and a configuration and log in dir, with no charon and no
// configuration to load; it is killed when t ends and its log shown if t
// failed.
func startAgentBinary(t *testing.T, tp *topology.Topology, bin, ns, pod, dir string, env []string, args ...string) *exec.Cmd {
	t.Helper()
	logf, err := os.OpenFile(filepath.Join(dir, "agent.log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	cmd := tp.Command(context.Background(), ns, append([]string{bin}, append(args,
		"--config-dir="+dir, "--secrets-dir="+dir, "--vici-socket="+filepath.Join(dir, "none.vici"), "--validate=false",
		"--metrics-bind-address=127.0.0.1:0", "--health-probe-bind-address=127.0.0.1:0")...)...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		_ = logf.Close()
		if t.Failed() {
			b, _ := os.ReadFile(logf.Name())
			t.Logf("%s's log:\n%s", pod, b)
		}
	})
	return cmd
}

// apiIn serves the API server to the network namespace ns on its loopback
// (a TCP proxy whose listener is in ns) and writes a kubeconfig for it
// into dir, whose path it returns.
func apiIn(t *testing.T, ns, dir string) string {
	t.Helper()
	api, err := url.Parse(cfg.Host)
	if err != nil {
		t.Fatal(err)
	}
	var ln net.Listener
	if err := topology.Do(ns, func() error {
		var err error
		ln, err = net.Listen("tcp", "127.0.0.1:0")
		return err
	}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close() //nolint:errcheck // a proxied connection
				s, err := net.Dial("tcp", api.Host)
				if err != nil {
					return
				}
				defer s.Close() //nolint:errcheck // a proxied connection
				go func() { _, _ = io.Copy(s, c) }()
				_, _ = io.Copy(c, s)
			}()
		}
	}()
	kc := clientcmdapi.NewConfig()
	kc.Clusters["envtest"] = &clientcmdapi.Cluster{Server: "https://" + ln.Addr().String(), CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos["envtest"] = &clientcmdapi.AuthInfo{ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData, Token: cfg.BearerToken}
	kc.Contexts["envtest"] = &clientcmdapi.Context{Cluster: "envtest", AuthInfo: "envtest"}
	kc.CurrentContext = "envtest"
	path := filepath.Join(dir, "kubeconfig")
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// addresses returns the IPv4 addresses of net1 in ns, one per line, empty
// for none.
func addresses(t *testing.T, tp *topology.Topology, ns string) string {
	t.Helper()
	out, err := tp.Exec(ns, "ip", "-4", "-o", "address", "show", "dev", contract.SecondaryInterface)
	if err != nil {
		t.Fatalf("ip address show in %s: %v\n%s", ns, err, out)
	}
	return strings.TrimSpace(out)
}

// waitFor polls ok every 50 ms until it holds, for up to within, and
// returns how long that took.
func waitFor(t *testing.T, within time.Duration, what string, ok func() bool) time.Duration {
	t.Helper()
	start := time.Now()
	for !ok() {
		if time.Since(start) > within {
			t.Fatalf("no %s after %s", what, within)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return time.Since(start)
}

// answered says whether mac answered a request sent after since.
func answered(rs []topology.ARPRound, since time.Time, mac string) bool {
	return !firstAnswer(rs, since, mac).IsZero()
}

// firstAnswer returns when the first request after since that mac
// answered was sent; zero for none.
func firstAnswer(rs []topology.ARPRound, since time.Time, mac string) time.Time {
	for _, r := range rs {
		if r.At.After(since) && slices.Contains(r.MACs, mac) {
			return r.At
		}
	}
	return time.Time{}
}

// lastAnswer returns when the last request that mac answered was sent.
func lastAnswer(rs []topology.ARPRound, mac string) time.Time {
	for i := len(rs) - 1; i >= 0; i-- {
		if slices.Contains(rs[i].MACs, mac) {
			return rs[i].At
		}
	}
	return time.Time{}
}

// macsSince returns the MACs that answered requests sent from since on,
// each once, in order.
func macsSince(rs []topology.ARPRound, since time.Time) []string {
	var macs []string
	for _, r := range rs {
		if r.At.Before(since) {
			continue
		}
		for _, m := range r.MACs {
			if !slices.Contains(macs, m) {
				macs = append(macs, m)
			}
		}
	}
	return macs
}
