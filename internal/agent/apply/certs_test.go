package apply

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/strongswan/govici/vici"
)

// keyCharon records load-key, unload-key, load-cert and load-conn
// requests; load-key answers with the key's ID "k" + the key's hex.
type keyCharon struct {
	calls []string
	conns map[string]*vici.Message
}

func (f *keyCharon) Call(_ context.Context, cmd string, in *vici.Message) (*vici.Message, error) {
	out := vici.NewMessage()
	_ = out.Set("success", "yes")
	switch cmd {
	case "load-key":
		id := "k" + hex.EncodeToString([]byte(in.Get("data").(string)))
		_ = out.Set("id", id)
		f.calls = append(f.calls, fmt.Sprintf("load-key %s %s", in.Get("type"), id))
	case "unload-key":
		f.calls = append(f.calls, fmt.Sprintf("unload-key %s", in.Get("id")))
	case "load-cert":
		f.calls = append(f.calls, fmt.Sprintf("load-cert %s %x", in.Get("flag"), in.Get("data")))
	case "load-conn":
		name := in.Keys()[0]
		f.conns[name] = in
		f.calls = append(f.calls, "load-conn "+name)
	default:
		f.calls = append(f.calls, cmd)
	}
	return out, nil
}

const certConf = `connections {
  a {
    local {
      auth = pubkey
      id = "asn1dn:#3000"
    }
    remote {
      auth = pubkey
      cacerts = cacert-a-0
    }
  }
}
`

// certSecrets renders a secrets.conf with the key and certificate of
// connection a (hex), or none when key is empty.
func certSecrets(key, cert string) []byte {
	s := "secrets {\n}\n"
	if key != "" {
		s = fmt.Sprintf("secrets {\n  private-a {\n    type = ecdsa\n    data = 0x%s\n  }\n}\n", key)
	}
	return []byte(s + fmt.Sprintf("certs {\n  cert-a = 0x%s\n  cacert-a-0 = 0xcc\n}\n", cert))
}

// TestApplyCertificates applies certificate sets in turn: the peer's CA is
// sent inside the connection (remote.cacerts), the gateway's certificate
// with load-cert and its key with load-key; a rotation (new key and
// certificate) loads both and unloads the old key but leaves the
// connection alone (so its IKE SAs stay); a set without the key unloads
// it; a connection naming a certificate the set lacks is refused whole.
func TestApplyCertificates(t *testing.T) {
	ctx := context.Background()
	f := &keyCharon{conns: map[string]*vici.Message{}}
	a := New(f)
	steps := []struct {
		reason    string
		secrets   []byte
		wantCalls []string
		want      Result
	}{{
		reason:    "The first set: key, certificate, then the connection.",
		secrets:   certSecrets("01", "aa"),
		wantCalls: []string{"load-key ecdsa k01", "load-cert NONE aa", "load-conn a"},
		want:      Result{Loaded: []string{"a"}, Keys: []string{"private-a"}, Certs: []string{"cert-a"}},
	}, {
		reason:    "A rotation: the new key and certificate are loaded, the old key unloaded, the connection left as it is.",
		secrets:   certSecrets("02", "ab"),
		wantCalls: []string{"load-key ecdsa k02", "unload-key k01", "load-cert NONE ab"},
		want:      Result{Unchanged: []string{"a"}, Keys: []string{"private-a"}, Certs: []string{"cert-a"}},
	}, {
		reason:  "The same set again sends nothing.",
		secrets: certSecrets("02", "ab"),
		want:    Result{Unchanged: []string{"a"}},
	}, {
		reason:    "A set without the key unloads it.",
		secrets:   certSecrets("", "ab"),
		wantCalls: []string{"unload-key k02"},
		want:      Result{Unchanged: []string{"a"}, KeysUnloaded: []string{"private-a"}},
	}}
	for i, s := range steps {
		f.calls = nil
		res, err := a.Apply(ctx, []byte(certConf), s.secrets)
		if err != nil {
			t.Fatalf("step %d: %s\nApply: %v", i, s.reason, err)
		}
		if diff := cmp.Diff(s.wantCalls, f.calls); diff != "" {
			t.Errorf("step %d: %s\ncalls: -want, +got:\n%s", i, s.reason, diff)
		}
		if diff := cmp.Diff(s.want, res); diff != "" {
			t.Errorf("step %d: %s\nresult: -want, +got:\n%s", i, s.reason, diff)
		}
	}
	remote, _ := f.conns["a"].Get("a").(*vici.Message).Get("remote").(*vici.Message)
	if got, _ := remote.Get("cacerts").([]string); len(got) != 1 || got[0] != "\xcc" {
		t.Errorf("load-conn a: remote.cacerts %q, want the CA certificate itself", got)
	}

	_, err := a.Apply(ctx, []byte(strings.Replace(certConf, "cacert-a-0", "cacert-a-1", 1)), certSecrets("02", "ab"))
	var invalid *InvalidError
	if !errors.As(err, &invalid) || !strings.Contains(err.Error(), "names certificate cacert-a-1") {
		t.Errorf("Apply with a missing CA certificate: %v, want an InvalidError naming cacert-a-1", err)
	}
}
