package metrics

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ipsecgw/provider-ipsec/apis/cluster/gateway/v1alpha1"
)

var now = time.Date(2026, 11, 29, 22, 0, 0, 0, time.UTC)

func TestCollector(t *testing.T) {
	est := metav1.NewTime(now.Add(-90 * time.Second))
	cases := map[string]struct {
		reason  string
		tunnels []v1alpha1.TunnelStatus
		reloads []bool
		want    string
	}{
		"Empty": {
			reason: "No tunnels: only the reload counters, both results at 0.",
			want: `
# HELP ipsec_config_reloads_total Configuration loads into charon, by result.
# TYPE ipsec_config_reloads_total counter
ipsec_config_reloads_total{result="failure"} 0
ipsec_config_reloads_total{result="success"} 0
`,
		},
		"UpAndDown": {
			reason: "An up tunnel is 1 with its age and counters per child and direction; a down one is 0 without age, with the agent's re-initiations; an established one that is not up (a CHILD_SA missing) is 0 with its age.",
			tunnels: []v1alpha1.TunnelStatus{
				{Name: "branch-a", IKEState: "ESTABLISHED", EstablishedAt: &est, ChildSAs: []v1alpha1.ChildSAStatus{
					{Name: "net-0", State: "INSTALLED", BytesIn: 840, BytesOut: 1680, PacketsIn: 10, PacketsOut: 20},
					{Name: "net-1", State: "INSTALLED"},
				}, Up: true},
				{Name: "branch-b", IKEState: "DOWN", LastError: "AUTHENTICATION_FAILED", Reinitiations: 3},
				{Name: "branch-c", IKEState: "CONNECTING"},
				{Name: "branch-d", IKEState: "ESTABLISHED", EstablishedAt: &est, LastError: "NO_PROPOSAL_CHOSEN"},
			},
			reloads: []bool{true, true, false},
			want: `
# HELP ipsec_child_sa_bytes_total ESP payload bytes of the CHILD_SA since it was installed.
# TYPE ipsec_child_sa_bytes_total counter
ipsec_child_sa_bytes_total{child="net-0",direction="in",tunnel="branch-a"} 840
ipsec_child_sa_bytes_total{child="net-0",direction="out",tunnel="branch-a"} 1680
ipsec_child_sa_bytes_total{child="net-1",direction="in",tunnel="branch-a"} 0
ipsec_child_sa_bytes_total{child="net-1",direction="out",tunnel="branch-a"} 0
# HELP ipsec_child_sa_packets_total ESP packets of the CHILD_SA since it was installed.
# TYPE ipsec_child_sa_packets_total counter
ipsec_child_sa_packets_total{child="net-0",direction="in",tunnel="branch-a"} 10
ipsec_child_sa_packets_total{child="net-0",direction="out",tunnel="branch-a"} 20
ipsec_child_sa_packets_total{child="net-1",direction="in",tunnel="branch-a"} 0
ipsec_child_sa_packets_total{child="net-1",direction="out",tunnel="branch-a"} 0
# HELP ipsec_config_reloads_total Configuration loads into charon, by result.
# TYPE ipsec_config_reloads_total counter
ipsec_config_reloads_total{result="failure"} 1
ipsec_config_reloads_total{result="success"} 2
# HELP ipsec_ike_sa_established_seconds Seconds since the tunnel's IKE SA was established.
# TYPE ipsec_ike_sa_established_seconds gauge
ipsec_ike_sa_established_seconds{tunnel="branch-a"} 90
ipsec_ike_sa_established_seconds{tunnel="branch-d"} 90
# HELP ipsec_tunnel_reinitiations_total Times the gateway agent initiated the tunnel again after it stayed down with charon not trying or its peer stopped answering.
# TYPE ipsec_tunnel_reinitiations_total counter
ipsec_tunnel_reinitiations_total{tunnel="branch-a"} 0
ipsec_tunnel_reinitiations_total{tunnel="branch-b"} 3
ipsec_tunnel_reinitiations_total{tunnel="branch-c"} 0
ipsec_tunnel_reinitiations_total{tunnel="branch-d"} 0
# HELP ipsec_tunnel_up Whether the tunnel is up (1: IKE SA established, every CHILD_SA installed) or not (0).
# TYPE ipsec_tunnel_up gauge
ipsec_tunnel_up{tunnel="branch-a"} 1
ipsec_tunnel_up{tunnel="branch-b"} 0
ipsec_tunnel_up{tunnel="branch-c"} 0
ipsec_tunnel_up{tunnel="branch-d"} 0
`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c := New()
			c.Now = func() time.Time { return now }
			c.Update(tc.tunnels)
			for _, ok := range tc.reloads {
				c.Reloaded(ok)
			}
			if err := testutil.CollectAndCompare(c, strings.NewReader(tc.want), tunnelMetrics...); err != nil {
				t.Errorf("\n%s\n%v", tc.reason, err)
			}
			problems, err := testutil.CollectAndLint(c)
			if err != nil || len(problems) > 0 {
				t.Errorf("lint: %v %v", err, problems)
			}
		})
	}
}

// TestCollectorForgets checks that a tunnel removed from the configuration
// disappears from the metrics, and that the Collector registers.
func TestCollectorForgets(t *testing.T) {
	c := New()
	reg := prometheus.NewPedanticRegistry()
	if err := reg.Register(c); err != nil {
		t.Fatal(err)
	}
	c.Update([]v1alpha1.TunnelStatus{{Name: "a", IKEState: "DOWN"}, {Name: "b", IKEState: "DOWN"}})
	if got := testutil.CollectAndCount(c, "ipsec_tunnel_up"); got != 2 {
		t.Errorf("ipsec_tunnel_up series: %d, want 2", got)
	}
	c.Update([]v1alpha1.TunnelStatus{{Name: "b", IKEState: "DOWN"}})
	if got := testutil.CollectAndCount(c, "ipsec_tunnel_up"); got != 1 {
		t.Errorf("ipsec_tunnel_up series after removing a: %d, want 1", got)
	}
	if _, err := reg.Gather(); err != nil {
		t.Errorf("Gather: %v", err)
	}
}

// tunnelMetrics are the metrics TestCollector compares; TestLeader
// compares the others.
var tunnelMetrics = []string{"ipsec_tunnel_up", "ipsec_ike_sa_established_seconds", "ipsec_child_sa_bytes_total",
	"ipsec_child_sa_packets_total", "ipsec_tunnel_reinitiations_total", "ipsec_config_reloads_total"}

func TestLeader(t *testing.T) {
	cases := map[string]struct {
		reason    string
		leader    []bool
		failovers []string
		want      string
	}{
		"Standby": {
			reason: "A pod that never became active: leader 0 and both failover causes at 0, so that rates work before the first failover.",
			want: `
# HELP ipsec_gateway_failovers_total Times this gateway pod became active after another pod held the gateway's Lease, by cause.
# TYPE ipsec_gateway_failovers_total counter
ipsec_gateway_failovers_total{cause="expired"} 0
ipsec_gateway_failovers_total{cause="released"} 0
# HELP ipsec_gateway_leader Whether this gateway pod is the active one (1), holding the gateway's address and tunnels, or a standby (0).
# TYPE ipsec_gateway_leader gauge
ipsec_gateway_leader 0
`,
		},
		"TookOverTwice": {
			reason:    "A pod active again after two takeovers counts each by its cause and shows 1.",
			leader:    []bool{true, false, true},
			failovers: []string{CauseExpired, CauseReleased},
			want: `
# HELP ipsec_gateway_failovers_total Times this gateway pod became active after another pod held the gateway's Lease, by cause.
# TYPE ipsec_gateway_failovers_total counter
ipsec_gateway_failovers_total{cause="expired"} 1
ipsec_gateway_failovers_total{cause="released"} 1
# HELP ipsec_gateway_leader Whether this gateway pod is the active one (1), holding the gateway's address and tunnels, or a standby (0).
# TYPE ipsec_gateway_leader gauge
ipsec_gateway_leader 1
`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c := New()
			for _, l := range tc.leader {
				c.Leader(l)
			}
			for _, f := range tc.failovers {
				c.FailedOver(f)
			}
			if err := testutil.CollectAndCompare(c, strings.NewReader(tc.want), "ipsec_gateway_leader", "ipsec_gateway_failovers_total"); err != nil {
				t.Errorf("\n%s\n%v", tc.reason, err)
			}
		})
	}
}
