package apply

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/strongswan/govici/vici"
)

// actions records, for each load-conn it is sent, each child's
// start_action, close_action and dpd_action, as "conn/child start close
// dpd", besides what fakeCharon records.
type actions struct {
	fakeCharon
	loaded []string
}

func (f *actions) Call(ctx context.Context, cmd string, in *vici.Message) (*vici.Message, error) {
	if cmd == "load-conn" {
		name := in.Keys()[0]
		for _, c := range children(name, in).Keys() {
			ch := children(name, in).Get(c).(*vici.Message)
			f.loaded = append(f.loaded, name+"/"+c+" "+str(ch.Get("start_action"))+" "+str(ch.Get("close_action"))+" "+str(ch.Get("dpd_action")))
		}
	}
	return f.fakeCharon.Call(ctx, cmd, in)
}

func str(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	return "-"
}

// alwaysOn is a connection whose child charon starts and restarts itself.
var alwaysOn = []byte(`connections {
  a {
    children {
      a-1 {
        local_ts = 10.0.0.0/24
        start_action = start
        close_action = start
        dpd_action = restart
      }
    }
  }
}
`)

// TestPassive proves the standby's set: loaded with nothing that starts a
// child, and loaded again, as rendered, when the pod becomes active.
func TestPassive(t *testing.T) {
	type step struct {
		passive bool
		// terminate calls TerminateAll after the Apply.
		terminate bool
	}
	cases := map[string]struct {
		reason      string
		steps       []step
		wantLoaded  []string
		wantCalls   []string
		wantStarted []string
	}{
		"Active": {
			reason:      "A pod that is not a standby loads the set as rendered: charon starts a-1, which the watchdog keeps up.",
			steps:       []step{{}},
			wantLoaded:  []string{"a/a-1 start start restart"},
			wantCalls:   []string{"load-conn a"},
			wantStarted: []string{"a-1"},
		},
		"Standby": {
			reason:      "A standby loads the same connections with nothing that initiates: charon sends nothing to the peer and the watchdog keeps nothing up.",
			steps:       []step{{passive: true}},
			wantLoaded:  []string{"a/a-1 none none clear"},
			wantCalls:   []string{"load-conn a"},
			wantStarted: []string{},
		},
		"StandbyBecomesActive": {
			reason:      "When the standby becomes active, the same files load every connection again as rendered, so that charon initiates them.",
			steps:       []step{{passive: true}, {}},
			wantLoaded:  []string{"a/a-1 none none clear", "a/a-1 start start restart"},
			wantCalls:   []string{"load-conn a", "load-conn a"},
			wantStarted: []string{"a-1"},
		},
		"ActiveBecomesStandby": {
			reason:      "An active pod that loses the Lease loads the passive set and closes every IKE SA, so that nothing restarts them.",
			steps:       []step{{}, {passive: true, terminate: true}},
			wantLoaded:  []string{"a/a-1 start start restart", "a/a-1 none none clear"},
			wantCalls:   []string{"load-conn a", "load-conn a", "terminate a"},
			wantStarted: []string{},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c := &actions{}
			a := New(c)
			for _, s := range tc.steps {
				a.SetPassive(s.passive)
				if _, err := a.Apply(context.Background(), alwaysOn, secrets()); err != nil {
					t.Fatal(err)
				}
				if s.terminate {
					if err := a.TerminateAll(context.Background()); err != nil {
						t.Fatal(err)
					}
				}
			}
			var calls []string
			for _, call := range c.calls {
				if call != "load-shared " {
					calls = append(calls, call)
				}
			}
			if diff := cmp.Diff(tc.wantLoaded, c.loaded); diff != "" {
				t.Errorf("%s\nchildren loaded: -want, +got:\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(tc.wantCalls, calls); diff != "" {
				t.Errorf("%s\ncalls: -want, +got:\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(tc.wantStarted, a.Started("a")); diff != "" {
				t.Errorf("%s\nStarted: -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}
