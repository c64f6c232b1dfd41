package status

import (
	"context"
	"errors"
	"iter"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/strongswan/govici/vici"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ipsecgw/provider-ipsec/apis/cluster/gateway/v1alpha1"
	"github.com/ipsecgw/provider-ipsec/internal/agent/vicitest"
)

// msg builds a vici message from alternating keys and values.
var msg = vicitest.Msg

// fakeCaller answers streamed calls with canned events per command.
type fakeCaller struct {
	events map[string][]*vici.Message
	err    error
	calls  []string
}

func (f *fakeCaller) CallStreaming(_ context.Context, cmd, _ string, _ *vici.Message) iter.Seq2[*vici.Message, error] {
	f.calls = append(f.calls, cmd)
	return func(yield func(*vici.Message, error) bool) {
		if f.err != nil {
			yield(nil, f.err)
			return
		}
		for _, m := range f.events[cmd] {
			if !yield(m, nil) {
				return
			}
		}
	}
}

var now = time.Date(2026, 11, 29, 22, 0, 0, 0, time.UTC)

func at(secondsAgo int) *metav1.Time {
	t := metav1.NewTime(now.Add(-time.Duration(secondsAgo) * time.Second))
	return &t
}

// child is a list-sa CHILD_SA body as charon 5.9.8 sends it.
func child(name, id, state, bytesIn, bytesOut string) *vici.Message {
	return msg("name", name, "uniqueid", id, "reqid", "1", "state", state, "mode", "TUNNEL",
		"protocol", "ESP", "encap", "yes", "spi-in", "c1a2b3c4", "spi-out", "c5d6e7f8",
		"encr-alg", "AES_GCM_16", "encr-keysize", "256",
		"bytes-in", bytesIn, "packets-in", "3", "bytes-out", bytesOut, "packets-out", "4",
		"rekey-time", "3000", "life-time", "3300", "install-time", "60",
		"local-ts", []string{"192.0.2.0/26"}, "remote-ts", []string{"192.0.2.64/26"})
}

// ike is a list-sa IKE SA body; established "" leaves the key out.
func ike(id, state, established string, children ...*vici.Message) *vici.Message {
	kv := []any{"uniqueid", id, "version", "2", "state", state, "local-host", "198.51.100.66",
		"local-port", "4500", "local-id", "203.0.113.100", "remote-host", "203.0.113.2",
		"remote-port", "4500", "remote-id", "203.0.113.2", "nat-local", "yes"}
	if established != "" {
		kv = append(kv, "established", established, "rekey-time", "14000")
	}
	if len(children) > 0 {
		cs := vici.NewMessage()
		for _, c := range children {
			_ = cs.Set(c.Get("name").(string)+"-"+c.Get("uniqueid").(string), c)
		}
		kv = append(kv, "child-sas", cs)
	}
	return msg(kv...)
}

func TestCollect(t *testing.T) {
	errBoom := errors.New("boom")
	type want struct {
		tunnels []v1alpha1.TunnelStatus
		err     bool
	}
	cases := map[string]struct {
		reason   string
		conns    []string
		children map[string][]string
		events   []*vici.Message
		err      error
		want     want
	}{
		"NoSAs": {
			reason: "Every configured connection without an IKE SA is DOWN, sorted by name.",
			conns:  []string{"b", "a"},
			want: want{tunnels: []v1alpha1.TunnelStatus{
				{Name: "a", IKEState: StateDown},
				{Name: "b", IKEState: StateDown},
			}},
		},
		"Established": {
			reason: "An established IKE SA gives its state, establishment time and children with counters.",
			conns:  []string{"peer1"},
			events: []*vici.Message{msg("peer1", ike("3", "ESTABLISHED", "125",
				child("net-1", "7", "INSTALLED", "8400", "9100"),
				child("net-0", "6", "INSTALLED", "0", "18446744073709551615")))},
			want: want{tunnels: []v1alpha1.TunnelStatus{{
				Name: "peer1", IKEState: "ESTABLISHED", EstablishedAt: at(125),
				ChildSAs: []v1alpha1.ChildSAStatus{
					{Name: "net-0", State: "INSTALLED", LocalTS: []string{"192.0.2.0/26"}, RemoteTS: []string{"192.0.2.64/26"},
						BytesIn: 0, BytesOut: 1<<63 - 1, PacketsIn: 3, PacketsOut: 4},
					{Name: "net-1", State: "INSTALLED", LocalTS: []string{"192.0.2.0/26"}, RemoteTS: []string{"192.0.2.64/26"},
						BytesIn: 8400, BytesOut: 9100, PacketsIn: 3, PacketsOut: 4},
				},
				Up: true,
			}}},
		},
		"ConfiguredChildMissing": {
			reason:   "An established IKE SA lacking a configured child's CHILD_SA (as after a PFS mismatch at rekey) is not up.",
			conns:    []string{"peer1"},
			children: map[string][]string{"peer1": {"net-0", "net-1"}},
			events:   []*vici.Message{msg("peer1", ike("3", "ESTABLISHED", "125", child("net-0", "6", "INSTALLED", "1", "2")))},
			want: want{tunnels: []v1alpha1.TunnelStatus{{
				Name: "peer1", IKEState: "ESTABLISHED", EstablishedAt: at(125),
				ChildSAs: []v1alpha1.ChildSAStatus{{Name: "net-0", State: "INSTALLED", LocalTS: []string{"192.0.2.0/26"},
					RemoteTS: []string{"192.0.2.64/26"}, BytesIn: 1, BytesOut: 2, PacketsIn: 3, PacketsOut: 4}},
			}}},
		},
		"ConfiguredChildrenInstalled": {
			reason:   "An established IKE SA with every configured child INSTALLED is up.",
			conns:    []string{"peer1"},
			children: map[string][]string{"peer1": {"net-0"}},
			events:   []*vici.Message{msg("peer1", ike("3", "ESTABLISHED", "125", child("net-0", "6", "INSTALLED", "1", "2")))},
			want: want{tunnels: []v1alpha1.TunnelStatus{{
				Name: "peer1", IKEState: "ESTABLISHED", EstablishedAt: at(125),
				ChildSAs: []v1alpha1.ChildSAStatus{{Name: "net-0", State: "INSTALLED", LocalTS: []string{"192.0.2.0/26"},
					RemoteTS: []string{"192.0.2.64/26"}, BytesIn: 1, BytesOut: 2, PacketsIn: 3, PacketsOut: 4}},
				Up: true,
			}}},
		},
		"Connecting": {
			reason: "An IKE SA being set up has its state and no establishment time.",
			conns:  []string{"peer1"},
			events: []*vici.Message{msg("peer1", ike("1", "CONNECTING", ""))},
			want:   want{tunnels: []v1alpha1.TunnelStatus{{Name: "peer1", IKEState: "CONNECTING"}}},
		},
		"Reauthentication": {
			reason: "Of several IKE SAs of a connection the established one established last wins; without CHILD_SAs it is not up.",
			conns:  []string{"peer1"},
			events: []*vici.Message{
				msg("peer1", ike("1", "ESTABLISHED", "900")),
				msg("peer1", ike("3", "CONNECTING", "")),
				msg("peer1", ike("2", "ESTABLISHED", "5")),
				msg("peer1", ike("4", "DELETING", "1000")),
			},
			want: want{tunnels: []v1alpha1.TunnelStatus{{Name: "peer1", IKEState: "ESTABLISHED", EstablishedAt: at(5)}}},
		},
		"ChildRekey": {
			reason: "Of several CHILD_SAs of a child the installed one with the highest unique id wins.",
			conns:  []string{"peer1"},
			events: []*vici.Message{msg("peer1", ike("1", "ESTABLISHED", "60",
				child("net", "1", "REKEYED", "100", "100"),
				child("net", "3", "INSTALLED", "5", "6"),
				child("net", "2", "INSTALLED", "50", "60")))},
			want: want{tunnels: []v1alpha1.TunnelStatus{{Name: "peer1", IKEState: "ESTABLISHED", EstablishedAt: at(60),
				ChildSAs: []v1alpha1.ChildSAStatus{{Name: "net", State: "INSTALLED", LocalTS: []string{"192.0.2.0/26"},
					RemoteTS: []string{"192.0.2.64/26"}, BytesIn: 5, BytesOut: 6, PacketsIn: 3, PacketsOut: 4}}, Up: true}}},
		},
		"UnconfiguredIgnored": {
			reason: "IKE SAs of connections that are not configured are not reported.",
			conns:  []string{"peer1"},
			events: []*vici.Message{msg("old", ike("1", "ESTABLISHED", "60"))},
			want:   want{tunnels: []v1alpha1.TunnelStatus{{Name: "peer1", IKEState: StateDown}}},
		},
		"CallFails": {
			reason: "A failed list-sas is an error.",
			conns:  []string{"peer1"},
			err:    errBoom,
			want:   want{err: true},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			f := &fakeCaller{events: map[string][]*vici.Message{"list-sas": tc.events}, err: tc.err}
			opts := []Option{WithClock(func() time.Time { return now })}
			if tc.children != nil {
				opts = append(opts, WithChildren(func(conn string) []string { return tc.children[conn] }))
			}
			got, err := Collect(context.Background(), f, tc.conns, opts...)
			if (err != nil) != tc.want.err {
				t.Fatalf("\n%s\nCollect(...): error %v, want error %v", tc.reason, err, tc.want.err)
			}
			if diff := cmp.Diff(tc.want.tunnels, got); diff != "" {
				t.Errorf("\n%s\nCollect(...): -want, +got:\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff([]string{"list-sas"}, f.calls); diff != "" {
				t.Errorf("\n%s\nCollect(...): calls -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestErrorFromLog(t *testing.T) {
	cases := map[string]struct {
		msg  string
		want string
	}{
		// Messages as charon 5.9.8 logged them in a test with two charons.
		"InitiatorAuth":      {msg: "received AUTHENTICATION_FAILED notify error", want: ErrAuthenticationFailed},
		"InitiatorIKEProp":   {msg: "received NO_PROPOSAL_CHOSEN notify error", want: ErrNoProposalChosen},
		"InitiatorChildProp": {msg: "received NO_PROPOSAL_CHOSEN notify, no CHILD_SA built", want: ErrNoProposalChosen},
		"InitiatorTS":        {msg: "received TS_UNACCEPTABLE notify, no CHILD_SA built", want: ErrTSUnacceptable},
		"InitiatorIKEv1Prop": {msg: "received NO_PROPOSAL_CHOSEN error notify", want: ErrNoProposalChosen},
		"ResponderAuth":      {msg: "generating IKE_AUTH response 1 [ N(AUTH_FAILED) ]", want: ErrAuthenticationFailed},
		"ResponderIKEProp":   {msg: "generating IKE_SA_INIT response 0 [ N(NO_PROP) ]", want: ErrNoProposalChosen},
		"ResponderChildProp": {msg: "generating IKE_AUTH response 1 [ IDr AUTH N(MOBIKE_SUP) N(NO_ADD_ADDR) N(NO_PROP) ]", want: ErrNoProposalChosen},
		"ResponderOK":        {msg: "generating IKE_AUTH response 1 [ IDr AUTH SA TSi TSr N(MOBIKE_SUP) ]"},
		"ParsedNotFailure":   {msg: "parsed IKE_AUTH response 1 [ N(AUTH_FAILED) ]"},
		"Retransmits":        {msg: "giving up after 2 retransmits", want: ErrRetransmitTimeout},
		"UntrustedPeerCert":  {msg: "no trusted ECDSA public key found for 'C=FR, O=Soci\xc3\xa9t\xc3\xa9 Peer 1, CN=vpn.peer1.example'", want: ErrPeerCertificateUntrusted},
		"NoPrivateKey":       {msg: "no private key found for 'C=DE, CN=gw.example.com'", want: ErrNoPrivateKey},
		"Other":              {msg: "IKE_SA s2s[2] established between 198.51.100.1[198.51.100.1]...198.51.100.2[198.51.100.2]"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, ErrorFromLog(tc.msg)); diff != "" {
				t.Errorf("ErrorFromLog(%q): -want, +got:\n%s", tc.msg, diff)
			}
		})
	}
}
