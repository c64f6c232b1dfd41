package apply

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/strongswan/govici/vici"
)

// psk is a secret every test set carries; it must never show in an error.
const psk = "sup3r-s3cret-psk"

// fakeCharon records the requests it gets as "command name" and fails the
// ones listed in fail with an errmsg, as charon answers success=no.
type fakeCharon struct {
	calls []string
	fail  map[string]string
}

func (f *fakeCharon) Call(_ context.Context, cmd string, in *vici.Message) (*vici.Message, error) {
	var name string
	switch cmd {
	case "load-conn":
		name = in.Keys()[0]
	case "unload-conn":
		name, _ = in.Get("name").(string)
	case "load-shared", "unload-shared":
		name, _ = in.Get("id").(string)
	case "terminate":
		name, _ = in.Get("ike").(string)
		if child, ok := in.Get("child").(string); ok {
			name += "/" + child
		}
		if in.Get("timeout") != "-1" {
			name += " (waits)"
		}
	}
	call := cmd + " " + name
	f.calls = append(f.calls, call)
	out := vici.NewMessage()
	if msg, ok := f.fail[call]; ok {
		_ = out.Set("success", "no")
		_ = out.Set("errmsg", msg)
		return out, nil
	}
	_ = out.Set("success", "yes")
	return out, nil
}

// fakeValidator refuses, with err, every set holding a connection whose
// request mentions modp2047 (a group charon does not know).
type fakeValidator struct{ err error }

func (v fakeValidator) Validate(_ context.Context, s *Set) error {
	for _, c := range s.Conns {
		if strings.Contains(Fingerprint(c.Message), "modp2047") {
			return v.err
		}
	}
	return nil
}

// conf renders a swanctl.conf with one connection per name; a name of the
// form "name:proposal" sets the connection's IKE proposal.
func conf(names ...string) []byte {
	var b strings.Builder
	b.WriteString("connections {\n")
	for _, n := range names {
		name, prop, ok := strings.Cut(n, ":")
		if !ok {
			prop = "aes256-sha256-modp2048"
		}
		fmt.Fprintf(&b, "  %s {\n    proposals = %s\n    local {\n      auth = psk\n    }\n    children {\n      %s-1 {\n        local_ts = 10.0.0.0/24\n      }\n    }\n  }\n", name, prop, name)
	}
	b.WriteString("}\n")
	return []byte(b.String())
}

// withChildren renders a swanctl.conf with one connection a and the
// named children; a child "name:subnet" has that local_ts.
func withChildren(children ...string) []byte {
	var b strings.Builder
	b.WriteString("connections {\n  a {\n    children {\n")
	for _, c := range children {
		name, ts, ok := strings.Cut(c, ":")
		if !ok {
			ts = "10.0.0.0/24"
		}
		fmt.Fprintf(&b, "      %s {\n        local_ts = %s\n        esp_proposals = aes128-sha256\n      }\n", name, ts)
	}
	b.WriteString("    }\n  }\n}\n")
	return []byte(b.String())
}

// secrets renders a secrets.conf with one PSK per ID.
func secrets(ids ...string) []byte {
	var b strings.Builder
	b.WriteString("secrets {\n")
	for _, id := range ids {
		fmt.Fprintf(&b, "  %s {\n    id-remote = %s.example.com\n    secret = %s\n  }\n", id, id, psk)
	}
	b.WriteString("}\n")
	return []byte(b.String())
}

type set struct{ conf, secrets []byte }

func TestApply(t *testing.T) {
	initial := set{conf("a", "b"), secrets("ike-a", "ike-b")}
	cases := map[string]struct {
		reason string
		// before is applied first (successfully) when set.
		before *set
		next   set
		// validator, when set, is the error of a validator refusing
		// modp2047.
		validator error
		fail      map[string]string
		want      Result
		// wantCalls are the requests for next only.
		wantCalls   []string
		wantApplied []string
		// wantErr are substrings the error must hold; none means no error.
		wantErr []string
	}{
		"FirstApplyLoadsAll": {
			reason:      "An Applier that applied nothing loads every secret and connection.",
			next:        initial,
			want:        Result{Loaded: []string{"a", "b"}, Secrets: []string{"ike-a", "ike-b"}},
			wantCalls:   []string{"load-shared ike-a", "load-shared ike-b", "load-conn a", "load-conn b"},
			wantApplied: []string{"a", "b"},
		},
		"UnchangedSetLoadsNoConnection": {
			reason:      "Applying the same set again reloads the secrets only, so established SAs stay.",
			before:      &initial,
			next:        initial,
			want:        Result{Unchanged: []string{"a", "b"}, Secrets: []string{"ike-a", "ike-b"}},
			wantCalls:   []string{"load-shared ike-a", "load-shared ike-b"},
			wantApplied: []string{"a", "b"},
		},
		"ChangedConnectionReloadsOnlyIt": {
			reason:      "Only the connection whose request changed is loaded again; an IKE proposal change closes no SA (it applies at the next rekey).",
			before:      &initial,
			next:        set{conf("a", "b:aes128-sha256-modp2048"), secrets("ike-a", "ike-b")},
			want:        Result{Loaded: []string{"b"}, Unchanged: []string{"a"}, Secrets: []string{"ike-a", "ike-b"}},
			wantCalls:   []string{"load-shared ike-a", "load-shared ike-b", "load-conn b"},
			wantApplied: []string{"a", "b"},
		},
		"RemovedConnectionUnloaded": {
			reason:      "A connection and a secret that disappeared are unloaded after the rest is loaded.",
			before:      &initial,
			next:        set{conf("a", "c"), secrets("ike-a", "ike-c")},
			want:        Result{Loaded: []string{"c"}, Unloaded: []string{"b"}, Unchanged: []string{"a"}, Secrets: []string{"ike-a", "ike-c"}, SecretsUnloaded: []string{"ike-b"}, Terminated: []string{"b"}},
			wantCalls:   []string{"load-shared ike-a", "load-shared ike-c", "load-conn c", "unload-conn b", "terminate b", "unload-shared ike-b"},
			wantApplied: []string{"a", "c"},
		},
		"RemovedConnectionWithoutSAs": {
			reason:      "An unloaded connection that had no SA is not an error.",
			before:      &initial,
			next:        set{conf("a"), secrets("ike-a", "ike-b")},
			fail:        map[string]string{"terminate b": "no matching SAs to terminate found"},
			want:        Result{Unloaded: []string{"b"}, Unchanged: []string{"a"}, Secrets: []string{"ike-a", "ike-b"}},
			wantCalls:   []string{"load-shared ike-a", "load-shared ike-b", "unload-conn b", "terminate b"},
			wantApplied: []string{"a"},
		},
		"TerminateFailureReported": {
			reason:      "A terminate charon refuses for another reason is reported; the connection stays unloaded.",
			before:      &initial,
			next:        set{conf("a"), secrets("ike-a", "ike-b")},
			fail:        map[string]string{"terminate b": "something else"},
			want:        Result{Unloaded: []string{"b"}, Unchanged: []string{"a"}, Secrets: []string{"ike-a", "ike-b"}},
			wantCalls:   []string{"load-shared ike-a", "load-shared ike-b", "unload-conn b", "terminate b"},
			wantApplied: []string{"a"},
			wantErr:     []string{"terminate b", "something else"},
		},
		"RemovedChildTerminated": {
			reason:      "A child removed from a changed connection has its CHILD_SAs closed; the remaining and new children are left to load-conn.",
			before:      &set{withChildren("a-1", "a-2"), secrets("ike-a")},
			next:        set{withChildren("a-2", "a-3"), secrets("ike-a")},
			want:        Result{Loaded: []string{"a"}, Secrets: []string{"ike-a"}, Terminated: []string{"a/a-1"}},
			wantCalls:   []string{"load-shared ike-a", "load-conn a", "terminate a/a-1"},
			wantApplied: []string{"a"},
		},
		"ChangedSelectorsTerminated": {
			reason:      "A child whose traffic selectors changed has its CHILD_SAs closed: they carry subnets no longer configured.",
			before:      &set{withChildren("a-1", "a-2"), secrets("ike-a")},
			next:        set{withChildren("a-1:10.9.0.0/24", "a-2"), secrets("ike-a")},
			want:        Result{Loaded: []string{"a"}, Secrets: []string{"ike-a"}, Terminated: []string{"a/a-1"}},
			wantCalls:   []string{"load-shared ike-a", "load-conn a", "terminate a/a-1"},
			wantApplied: []string{"a"},
		},
		"ParseErrorChangesNothing": {
			reason:      "A swanctl.conf that does not parse sends nothing.",
			before:      &initial,
			next:        set{[]byte("connections {\n  c {\n"), secrets("ike-a")},
			wantApplied: []string{"a", "b"},
			wantErr:     []string{"invalid configuration", "swanctl.conf", "not closed"},
		},
		"SecretsParseErrorChangesNothing": {
			reason:      "A secrets.conf that does not parse sends nothing and its error does not quote the secret.",
			before:      &initial,
			next:        set{conf("a"), []byte("secrets {\n  ike-a {\n    secret = \"" + psk + "\n  }\n}\n")},
			wantApplied: []string{"a", "b"},
			wantErr:     []string{"invalid configuration", "secrets.conf", "line 3"},
		},
		"UndecodableSecretChangesNothing": {
			reason:      "A secret that is not valid hex is refused by name, without its value.",
			before:      &initial,
			next:        set{conf("a"), []byte("secrets {\n  ike-a {\n    secret = 0x" + psk + "\n  }\n}\n")},
			wantApplied: []string{"a", "b"},
			wantErr:     []string{"invalid configuration", "secret ike-a", "not valid hex"},
		},
		"ValidatorErrorChangesNothing": {
			reason:      "A set the validation charon refuses sends nothing to the live charon.",
			before:      &initial,
			next:        set{conf("a", "b:aes256-sha256-modp2047"), secrets("ike-a", "ike-b")},
			validator:   errors.New("connection b: charon refuses it: vici: command failed: invalid proposal"),
			wantApplied: []string{"a", "b"},
			wantErr:     []string{"invalid configuration", "connection b", "invalid proposal"},
		},
		"DuplicateConnectionChangesNothing": {
			reason:      "A set naming a connection twice is refused before charon sees it.",
			before:      &initial,
			next:        set{conf("a", "a"), secrets("ike-a")},
			wantApplied: []string{"a", "b"},
			wantErr:     []string{"connection a appears twice"},
		},
		"LiveRefusalIsRetriedNextTime": {
			reason:      "A connection the live charon refuses keeps its old version, is reported, and the rest is applied.",
			before:      &initial,
			next:        set{conf("a:aes128-sha256-modp2048", "b:aes128-sha256-modp2048"), secrets("ike-a", "ike-b")},
			fail:        map[string]string{"load-conn a": "out of memory"},
			want:        Result{Loaded: []string{"b"}, Secrets: []string{"ike-a", "ike-b"}},
			wantCalls:   []string{"load-shared ike-a", "load-shared ike-b", "load-conn a", "load-conn b"},
			wantApplied: []string{"a", "b"},
			wantErr:     []string{"load-conn a", "out of memory"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			f := &fakeCharon{}
			var opts []Option
			if tc.validator != nil {
				opts = append(opts, WithValidator(fakeValidator{tc.validator}))
			}
			a := New(f, opts...)
			if tc.before != nil {
				if _, err := a.Apply(context.Background(), tc.before.conf, tc.before.secrets); err != nil {
					t.Fatalf("first Apply: %v", err)
				}
				f.calls = nil
			}
			f.fail = tc.fail
			got, err := a.Apply(context.Background(), tc.next.conf, tc.next.secrets)
			if diff := cmp.Diff(tc.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("%s\nApply(...): -want result, +got:\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(tc.wantCalls, f.calls, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("%s\nApply(...): -want calls, +got:\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(tc.wantApplied, a.Applied(), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("%s\nApplied(): -want, +got:\n%s", tc.reason, diff)
			}
			switch {
			case len(tc.wantErr) == 0 && err != nil:
				t.Errorf("%s\nApply(...): unexpected error %v", tc.reason, err)
			case len(tc.wantErr) > 0 && err == nil:
				t.Errorf("%s\nApply(...): no error, want one holding %q", tc.reason, tc.wantErr)
			case err != nil:
				for _, s := range tc.wantErr {
					if !strings.Contains(err.Error(), s) {
						t.Errorf("%s\nApply(...): error %q does not hold %q", tc.reason, err, s)
					}
				}
				if strings.Contains(err.Error(), psk) {
					t.Errorf("%s\nApply(...): error %q holds the secret", tc.reason, err)
				}
			}
		})
	}
}

func TestReapply(t *testing.T) {
	f := &fakeCharon{}
	a := New(f)
	if _, err := a.Apply(context.Background(), conf("b", "a"), secrets("ike-b", "ike-a")); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Apply(context.Background(), conf("b", "c"), secrets("ike-b", "ike-c")); err != nil {
		t.Fatal(err)
	}
	f.calls = nil
	got, err := a.Reapply(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := Result{Loaded: []string{"b", "c"}, Secrets: []string{"ike-b", "ike-c"}}
	if diff := cmp.Diff(want, got, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("Reapply(): -want result, +got:\n%s", diff)
	}
	wantCalls := []string{"load-shared ike-b", "load-shared ike-c", "load-conn b", "load-conn c"}
	if diff := cmp.Diff(wantCalls, f.calls); diff != "" {
		t.Errorf("Reapply(): a fresh charon must get the last applied set in document order: -want, +got:\n%s", diff)
	}
}

func TestFingerprint(t *testing.T) {
	cases := map[string]struct {
		a, b []byte
		same bool
	}{
		"Same":          {a: conf("a"), b: conf("a"), same: true},
		"OtherProposal": {a: conf("a"), b: conf("a:aes128-sha256-modp2048")},
		"ListNotValue": {
			a: []byte("connections {\n  a {\n    proposals = x,y\n  }\n}\n"),
			b: []byte("connections {\n  a {\n    proposals = x\n    foo = y\n  }\n}\n"),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			sa, err := Convert(tc.a, nil)
			if err != nil {
				t.Fatal(err)
			}
			sb, err := Convert(tc.b, nil)
			if err != nil {
				t.Fatal(err)
			}
			if got := Fingerprint(sa.Conns[0].Message) == Fingerprint(sb.Conns[0].Message); got != tc.same {
				t.Errorf("Fingerprint(a) == Fingerprint(b): got %v, want %v", got, tc.same)
			}
		})
	}
}

func TestChildren(t *testing.T) {
	doc := []byte(`connections {
  a {
    children {
      a-2 {
        start_action = start
      }
      a-1 {
        start_action = start
      }
      a-trap {
        start_action = trap
      }
      a-none {
      }
    }
  }
  b {
  }
}
`)
	a := New(&fakeCharon{})
	if _, err := a.Apply(context.Background(), doc, secrets("ike-a")); err != nil {
		t.Fatal(err)
	}
	cases := map[string]struct {
		reason string
		fn     func(string) []string
		conn   string
		want   []string
	}{
		"ChildrenAll": {
			reason: "Children lists every child of a loaded connection, sorted.",
			fn:     a.Children, conn: "a", want: []string{"a-1", "a-2", "a-none", "a-trap"},
		},
		"StartedOnlyStart": {
			reason: "Started lists only the children charon starts itself (start_action start), sorted.",
			fn:     a.Started, conn: "a", want: []string{"a-1", "a-2"},
		},
		"NoChildren": {
			reason: "A loaded connection without children has none, not nil.",
			fn:     a.Started, conn: "b", want: []string{},
		},
		"NotLoaded": {
			reason: "A connection that is not loaded has nil.",
			fn:     a.Started, conn: "c", want: nil,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, tc.fn(tc.conn)); diff != "" {
				t.Errorf("%s\n-want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}
