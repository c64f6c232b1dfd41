package vicitest

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/strongswan/govici/vici"

	"github.com/ipsecgw/provider-ipsec/internal/agent/status"
)

// TestServer proves the stand-in against govici, the client the agent
// uses, and the agent's status.Streamer: a request of every element kind arrives as sent, a response comes
// back as given, a streamed command's events reach a client that
// registered for them, a failed command is govici's error, and a dropped
// connection ends the client's session.
func TestServer(t *testing.T) {
	req := Msg("name", "a", "list", []string{"x", "", "y"}, "sec", Msg("inner", Msg("k", "v"), "empty", Msg()))
	s := Serve(t, func(cmd string, in *vici.Message) Reply {
		switch cmd {
		case "echo":
			return Reply{Out: in}
		case "list-sas":
			return Reply{Event: "list-sa", Events: []*vici.Message{Msg("a", Msg("state", "ESTABLISHED")), Msg("b", Msg("state", "CONNECTING"))}}
		case "fail":
			return Reply{Out: Msg("success", "no", "errmsg", "no matching SAs")}
		}
		return Reply{}
	})
	sess, err := vici.NewSession(vici.WithSocketPath(s.Socket()))
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close() //nolint:errcheck // the test's session
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	out, err := sess.Call(ctx, "echo", req)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(req.String(), out.String()); diff != "" {
		t.Errorf("a request echoed: -sent, +got back:\n%s", diff)
	}
	var got []string
	// Through the agent's status.Streamer: govici's own CallStreaming
	// loses events.
	for m, err := range (&status.Streamer{Session: sess}).CallStreaming(ctx, "list-sas", "list-sa", nil) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, m.String())
	}
	if diff := cmp.Diff([]string{Msg("a", Msg("state", "ESTABLISHED")).String(), Msg("b", Msg("state", "CONNECTING")).String()}, got); diff != "" {
		t.Errorf("list-sas' events: -want, +got:\n%s", diff)
	}
	if _, err := sess.Call(ctx, "fail", nil); err == nil {
		t.Error("a command answered success no: no error")
	}
	var names []string
	for _, c := range s.Commands() {
		names = append(names, c.Name)
	}
	if diff := cmp.Diff([]string{"echo", "list-sas", "fail"}, names); diff != "" {
		t.Errorf("commands recorded: -want, +got:\n%s", diff)
	}
	s.Drop()
	if _, err := sess.Call(ctx, "version", nil); err == nil {
		t.Error("a call after Drop succeeded")
	}
}
