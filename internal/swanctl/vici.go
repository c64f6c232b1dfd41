package swanctl

import (
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"

	"github.com/strongswan/govici/vici"
)

// listKeys are the connection and child settings whose comma-separated
// values swanctl sends as VICI lists (swanctl's load_conns.c).
var listKeys = []string{
	"local_addrs", "remote_addrs", "proposals", "esp_proposals", "ah_proposals",
	"local_ts", "remote_ts", "vips", "pools", "groups", "cert_policy", "certs", "cacerts", "pubkeys",
}

// A Conn is one connection of a document as a VICI load-conn request.
type Conn struct {
	// Name of the connection.
	Name string
	// Message is the load-conn request: {<name>: {settings and sections}}.
	Message *vici.Message
}

// LoadConns converts the connections section of doc into load-conn
// requests, one per connection in document order, laid out as
// `swanctl --load-conns` sends them
// (https://github.com/strongswan/strongswan/blob/master/src/libcharon/plugins/vici/README.md).
// It returns an error naming the setting that cannot be converted.
func LoadConns(doc *Section) ([]Conn, error) {
	conns := doc.Lookup("connections")
	if conns == nil {
		return nil, nil
	}
	out := make([]Conn, 0, len(conns.Sections))
	for _, c := range conns.Sections {
		body, err := message(c)
		if err != nil {
			return nil, fmt.Errorf("connection %s: %w", c.Name, err)
		}
		m := vici.NewMessage()
		if err := m.Set(c.Name, body); err != nil {
			return nil, fmt.Errorf("connection %s: %w", c.Name, err)
		}
		out = append(out, Conn{Name: c.Name, Message: m})
	}
	return out, nil
}

func message(s *Section) (*vici.Message, error) {
	m := vici.NewMessage()
	for _, kv := range s.Settings {
		var v any = kv.Value
		if slices.Contains(listKeys, kv.Key) {
			v = splitList(kv.Value)
		}
		if err := m.Set(kv.Key, v); err != nil {
			return nil, fmt.Errorf("%s: %w", kv.Key, err)
		}
	}
	for _, sub := range s.Sections {
		sm, err := message(sub)
		if err != nil {
			return nil, fmt.Errorf("%s.%w", sub.Name, err)
		}
		if err := m.Set(sub.Name, sm); err != nil {
			return nil, fmt.Errorf("%s: %w", sub.Name, err)
		}
	}
	return m, nil
}

func splitList(v string) []string {
	var out []string
	for item := range strings.SplitSeq(v, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}

// A Shared is one secret of a document as a VICI load-shared request.
type Shared struct {
	// ID is the secret's section name, such as ike-branch-a.
	ID string
	// Message is the load-shared request: {id, type, data, owners}.
	Message *vici.Message
}

// LoadShared converts the ike-* entries of doc's secrets section into
// load-shared requests, decoding 0x (hex) and 0s (base64) secrets as swanctl
// does. The private-* entries are LoadKeys'; other secret types are
// refused: the gateway uses PSKs and private keys only. Errors name the
// entry, never the secret.
func LoadShared(doc *Section) ([]Shared, error) {
	secrets := doc.Lookup("secrets")
	if secrets == nil {
		return nil, nil
	}
	out := make([]Shared, 0, len(secrets.Sections))
	for _, s := range secrets.Sections {
		if strings.HasPrefix(s.Name, "private") {
			continue
		}
		if !strings.HasPrefix(s.Name, "ike") {
			return nil, fmt.Errorf("secret %s: only ike secrets (pre-shared keys) and private keys are supported", s.Name)
		}
		var owners []string
		var data []byte
		for _, kv := range s.Settings {
			switch {
			case strings.HasPrefix(kv.Key, "id"):
				owners = append(owners, kv.Value)
			case kv.Key == "secret":
				var err error
				if data, err = DecodeSecret(kv.Value); err != nil {
					return nil, fmt.Errorf("secret %s: %w", s.Name, err)
				}
			default:
				return nil, fmt.Errorf("secret %s: unknown key %q", s.Name, kv.Key)
			}
		}
		if len(data) == 0 {
			return nil, fmt.Errorf("secret %s: no secret", s.Name)
		}
		m := vici.NewMessage()
		for _, kv := range []struct {
			k string
			v any
		}{{"id", s.Name}, {"type", "IKE"}, {"data", string(data)}, {"owners", owners}} {
			if err := m.Set(kv.k, kv.v); err != nil {
				return nil, fmt.Errorf("secret %s: %w", s.Name, err)
			}
		}
		out = append(out, Shared{ID: s.Name, Message: m})
	}
	return out, nil
}

// DecodeSecret decodes a swanctl secret value: 0x-prefixed hex, 0s-prefixed
// base64, or the value itself.
func DecodeSecret(v string) ([]byte, error) {
	switch {
	case strings.HasPrefix(v, "0x"):
		b, err := hex.DecodeString(v[2:])
		if err != nil {
			return nil, fmt.Errorf("secret is not valid hex")
		}
		return b, nil
	case strings.HasPrefix(v, "0s"):
		b, err := base64.StdEncoding.DecodeString(v[2:])
		if err != nil {
			return nil, fmt.Errorf("secret is not valid base64")
		}
		return b, nil
	}
	return []byte(v), nil
}

// A Key is one private key of a document as a VICI load-key request.
type Key struct {
	// ID is the key's section name, such as private-branch-a.
	ID string
	// Message is the load-key request: {type, data}.
	Message *vici.Message
}

// LoadKeys converts the private-* entries of doc's secrets section, each
// with a type (rsa or ecdsa) and the key's data (0x hex or 0s base64 DER,
// as a swanctl.conf secret is written; the gateway's form of swanctl's
// private<suffix> files), into load-key requests. Errors name the entry,
// never the key.
func LoadKeys(doc *Section) ([]Key, error) {
	secrets := doc.Lookup("secrets")
	if secrets == nil {
		return nil, nil
	}
	var out []Key
	for _, s := range secrets.Sections {
		if !strings.HasPrefix(s.Name, "private") {
			continue
		}
		typ, _ := s.Get("type")
		if typ != "rsa" && typ != "ecdsa" {
			return nil, fmt.Errorf("secret %s: type %q is not rsa or ecdsa", s.Name, typ)
		}
		v, _ := s.Get("data")
		data, err := DecodeSecret(v)
		if err != nil || len(data) == 0 {
			return nil, fmt.Errorf("secret %s: no key data", s.Name)
		}
		m := vici.NewMessage()
		if err := m.Set("type", typ); err != nil {
			return nil, fmt.Errorf("secret %s: %w", s.Name, err)
		}
		if err := m.Set("data", string(data)); err != nil {
			return nil, fmt.Errorf("secret %s: %w", s.Name, err)
		}
		out = append(out, Key{ID: s.Name, Message: m})
	}
	return out, nil
}

// Certs returns the certificates of doc's certs section by name, decoded
// (0x hex or 0s base64): the files of swanctl's x509 and x509ca
// directories that a connection's certs and cacerts name. Errors name the
// entry.
func Certs(doc *Section) (map[string][]byte, error) {
	sec := doc.Lookup("certs")
	if sec == nil {
		return nil, nil
	}
	out := make(map[string][]byte, len(sec.Settings))
	for _, kv := range sec.Settings {
		data, err := DecodeSecret(kv.Value)
		if err != nil || len(data) == 0 {
			return nil, fmt.Errorf("certificate %s: no data", kv.Key)
		}
		out[kv.Key] = data
	}
	return out, nil
}

// certKeys are the auth round settings that name certificate files.
var certKeys = []string{"certs", "cacerts"}

// InlineCerts replaces, in every local* and remote* section of the
// load-conn requests, the certificate names of certs and cacerts with the
// certificates themselves (from files, by name), as swanctl sends the
// files it reads, and returns the names used. Errors name the connection
// and the missing certificate.
func InlineCerts(conns []Conn, files map[string][]byte) (map[string]bool, error) {
	used := map[string]bool{}
	for _, c := range conns {
		body, ok := c.Message.Get(c.Name).(*vici.Message)
		if !ok {
			continue
		}
		for _, section := range body.Keys() {
			round, ok := body.Get(section).(*vici.Message)
			if !ok || !strings.HasPrefix(section, "local") && !strings.HasPrefix(section, "remote") {
				continue
			}
			for _, k := range certKeys {
				names, ok := round.Get(k).([]string)
				if !ok {
					continue
				}
				blobs := make([]string, 0, len(names))
				for _, n := range names {
					data, found := files[n]
					if !found {
						return nil, fmt.Errorf("connection %s: %s.%s names certificate %s, which is not in the certs section", c.Name, section, k, n)
					}
					used[n] = true
					blobs = append(blobs, string(data))
				}
				if err := round.Set(k, blobs); err != nil {
					return nil, fmt.Errorf("connection %s: %s.%s: %w", c.Name, section, k, err)
				}
			}
		}
	}
	return used, nil
}
