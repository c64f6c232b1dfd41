// Package apply loads the gateway's rendered strongSwan configuration into a
// running charon over VICI, as the gateway agent does when the mounted
// ConfigMap (swanctl.conf) or Secret (secrets.conf) changes.
//
// A new set is validated as a whole before anything reaches the live charon,
// then only what changed is sent: load-shared for every secret, load-conn for
// new or changed connections, unload-conn for connections that disappeared.
// Unchanged connections are not reloaded, so their established SAs are left
// alone; charon 5.9 keeps the SAs of a changed connection's remaining
// children too. SAs whose configuration went away are terminated, since
// charon does not close them by itself. The VICI commands follow strongSwan's VICI protocol description
// (https://github.com/strongswan/strongswan/blob/master/src/libcharon/plugins/vici/README.md).
package apply

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/strongswan/govici/vici"

	"github.com/ipsecgw/provider-ipsec/internal/swanctl"
)

// A Caller sends one VICI command request and returns charon's answer. A
// *vici.Session is a Caller.
type Caller interface {
	Call(ctx context.Context, cmd string, in *vici.Message) (*vici.Message, error)
}

// A Validator loads a whole converted set into a charon that is not the live
// one and reports the first thing that charon refuses. Its errors must name
// the connection or secret and carry charon's errmsg, never a secret value.
type Validator interface {
	Validate(ctx context.Context, s *Set) error
}

// A Set is a rendered configuration converted to VICI requests.
type Set struct {
	// Conns are the load-conn requests, in document order.
	Conns []swanctl.Conn
	// Shared are the load-shared requests, in document order.
	Shared []swanctl.Shared
	// Keys are the load-key requests, in document order.
	Keys []swanctl.Key
	// Certs are the load-cert requests of the certificates no connection
	// names (the intermediates of the gateway's certificates), by name,
	// sorted by name.
	Certs []Cert
}

// A Cert is one certificate of a set as a VICI load-cert request.
type Cert struct {
	// Name is the certificate's name in the certs section.
	Name string
	// Message is the load-cert request: {type X509, flag NONE, data}.
	Message *vici.Message
}

// Convert parses the rendered swanctl.conf (conf, the ConfigMap key
// swanctl.conf) and secrets file (secrets, the Secret key secrets.conf) and
// converts them to VICI requests. Errors name the file and line, connection
// or secret, never a secret value.
func Convert(conf, secrets []byte) (*Set, error) {
	doc, err := swanctl.Parse(conf)
	if err != nil {
		return nil, fmt.Errorf("swanctl.conf: %w", err)
	}
	if doc.Lookup("secrets") != nil {
		return nil, errors.New("swanctl.conf: secrets belong in secrets.conf")
	}
	conns, err := swanctl.LoadConns(doc)
	if err != nil {
		return nil, fmt.Errorf("swanctl.conf: %w", err)
	}
	sdoc, err := swanctl.Parse(secrets)
	if err != nil {
		return nil, fmt.Errorf("secrets.conf: %w", err)
	}
	shared, err := swanctl.LoadShared(sdoc)
	if err != nil {
		return nil, fmt.Errorf("secrets.conf: %w", err)
	}
	keys, err := swanctl.LoadKeys(sdoc)
	if err != nil {
		return nil, fmt.Errorf("secrets.conf: %w", err)
	}
	files, err := swanctl.Certs(sdoc)
	if err != nil {
		return nil, fmt.Errorf("secrets.conf: %w", err)
	}
	used, err := swanctl.InlineCerts(conns, files)
	if err != nil {
		return nil, fmt.Errorf("swanctl.conf: %w", err)
	}
	s := &Set{Conns: conns, Shared: shared, Keys: keys}
	for _, name := range sortedKeys(files) {
		if used[name] {
			continue
		}
		m := vici.NewMessage()
		for _, kv := range [][2]string{{"type", "X509"}, {"flag", "NONE"}, {"data", string(files[name])}} {
			if err := m.Set(kv[0], kv[1]); err != nil {
				return nil, fmt.Errorf("secrets.conf: certificate %s: %w", name, err)
			}
		}
		s.Certs = append(s.Certs, Cert{Name: name, Message: m})
	}
	return s, nil
}

// A Result says what an Apply or Reapply sent to charon. Names are sorted.
type Result struct {
	// Loaded are the connections sent with load-conn (new or changed).
	Loaded []string `json:"loaded,omitempty"`
	// Unloaded are the connections removed with unload-conn.
	Unloaded []string `json:"unloaded,omitempty"`
	// Unchanged are the connections left as they were.
	Unchanged []string `json:"unchanged,omitempty"`
	// Secrets are the secret IDs sent with load-shared.
	Secrets []string `json:"secrets,omitempty"`
	// Keys are the private keys (their section names) sent with load-key:
	// new or changed.
	Keys []string `json:"keys,omitempty"`
	// KeysUnloaded are the private keys removed with unload-key.
	KeysUnloaded []string `json:"keysUnloaded,omitempty"`
	// Certs are the certificates (their names) sent with load-cert.
	Certs []string `json:"certs,omitempty"`
	// SecretsUnloaded are the secret IDs removed with unload-shared.
	SecretsUnloaded []string `json:"secretsUnloaded,omitempty"`
	// Terminated are the SAs charon was asked to close, and had, because
	// their configuration went away: "<conn>" for the IKE SA of an unloaded
	// connection, "<conn>/<child>" for the CHILD_SAs of a child removed from
	// a changed connection or whose traffic selectors changed. charon keeps
	// such SAs up otherwise.
	Terminated []string `json:"terminated,omitempty"`
}

// An Applier applies rendered sets to one live charon. It remembers what it
// applied, for the next diff and for Reapply. It is safe for concurrent use;
// calls are serialised.
type Applier struct {
	c Caller
	v Validator

	mu sync.Mutex
	// conns maps each connection charon holds (as far as the Applier knows)
	// to its load-conn request and that request's fingerprint.
	conns map[string]applied
	// shared maps each secret ID loaded to its load-shared request.
	shared map[string]*vici.Message
	// keys maps each private key loaded (its section name) to its
	// load-key request, the SHA-256 of the request and charon's key ID.
	keys map[string]loadedKey
	// certs maps each certificate loaded with load-cert to its request.
	certs map[string]*vici.Message
	// order keeps document order for Reapply.
	connOrder, sharedOrder []string
	// passive loads every set as a standby's (Passive).
	passive bool
}

type applied struct {
	msg *vici.Message
	fp  string
}

type loadedKey struct {
	msg *vici.Message
	// sum is the SHA-256 of the request, which holds the key: compared,
	// never shown.
	sum [32]byte
	// id is charon's key identifier (load-key's answer), for unload-key.
	id string
}

// An Option configures an Applier.
type Option func(*Applier)

// WithValidator makes every Apply validate the new set with v before the
// live charon is touched.
func WithValidator(v Validator) Option {
	return func(a *Applier) { a.v = v }
}

// New returns an Applier that sends its requests through c, usually a
// *vici.Session to the live charon. Give it a session of its own: govici
// v0.8.0 can leave the last event of a CallStreaming (such as list-sas)
// queued on its session, and the next Call on that session then fails with
// "unexpected response type: 7". After charon restarts, point c at the new
// charon and call Reapply.
func New(c Caller, opts ...Option) *Applier {
	a := &Applier{c: c, conns: map[string]applied{}, shared: map[string]*vici.Message{}, keys: map[string]loadedKey{}, certs: map[string]*vici.Message{}}
	for _, o := range opts {
		o(a)
	}
	return a
}

// An InvalidError is a set that failed validation; nothing was sent to the
// live charon.
type InvalidError struct {
	// Err names the file, connection or secret and says why.
	Err error
}

func (e *InvalidError) Error() string { return "invalid configuration: " + e.Err.Error() }

// Unwrap returns the reason.
func (e *InvalidError) Unwrap() error { return e.Err }

// Apply validates the rendered swanctl.conf and secrets.conf as a whole and,
// when valid, brings the live charon to them: load-shared for every secret,
// load-conn for new or changed connections (then terminate for the SAs of
// children a changed connection lost or whose traffic selectors changed),
// unload-conn and terminate for
// connections that disappeared, then unload-shared for secrets that
// disappeared. An invalid
// set returns an *InvalidError and changes nothing. Errors charon reports on
// the live side are joined and returned after every other step was tried;
// what succeeded is remembered, so the next Apply retries only the rest.
func (a *Applier) Apply(ctx context.Context, conf, secrets []byte) (Result, error) {
	s, err := Convert(conf, secrets)
	if err != nil {
		return Result{}, &InvalidError{Err: err}
	}
	if err := duplicates(s); err != nil {
		return Result{}, &InvalidError{Err: err}
	}
	if a.v != nil {
		if err := a.v.Validate(ctx, s); err != nil {
			return Result{}, &InvalidError{Err: err}
		}
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.passive {
		passive(s)
	}
	return a.apply(ctx, s)
}

// SetPassive makes every later Apply load its set as the standby of an
// active/standby pair does (passive true) or as given (false). A passive
// set is the validated set with every child's start_action none,
// close_action none and dpd_action clear: charon holds the configuration
// and initiates nothing, and the watchdog finds no child to keep up
// (Started). The next Apply of the same files loads every connection
// again, since its requests changed: with start_action start, charon
// initiates the children when their connection is loaded.
func (a *Applier) SetPassive(p bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.passive = p
}

// passive rewrites the children of every connection of s as SetPassive
// says.
func passive(s *Set) {
	for _, c := range s.Conns {
		ch := children(c.Name, c.Message)
		if ch == nil {
			continue
		}
		for _, name := range ch.Keys() {
			child, ok := ch.Get(name).(*vici.Message)
			if !ok {
				continue
			}
			for k, v := range map[string]string{"start_action": "none", "close_action": "none", "dpd_action": "clear"} {
				_ = child.Set(k, v) // a string value always marshals
			}
		}
	}
}

// TerminateAll asks charon to close the IKE SAs (and with them the
// CHILD_SAs) of every connection the Applier has loaded, without waiting:
// what a standby does once it is no longer active. Connections without SAs
// are not an error; the errors of the others are joined.
func (a *Applier) TerminateAll(ctx context.Context) error {
	var errs []error
	for _, name := range a.Applied() {
		if _, err := a.terminate(ctx, "ike", name, ""); err != nil {
			errs = append(errs, fmt.Errorf("terminate %s: %w", name, err))
		}
	}
	return errors.Join(errs...)
}

func duplicates(s *Set) error {
	seen := map[string]bool{}
	for _, c := range s.Conns {
		if seen[c.Name] {
			return fmt.Errorf("swanctl.conf: connection %s appears twice", c.Name)
		}
		seen[c.Name] = true
	}
	seen = map[string]bool{}
	for _, sh := range s.Shared {
		if seen[sh.ID] {
			return fmt.Errorf("secrets.conf: secret %s appears twice", sh.ID)
		}
		seen[sh.ID] = true
	}
	return nil
}

func (a *Applier) apply(ctx context.Context, s *Set) (Result, error) { //nolint:gocyclo // the apply steps in order (validate, load, unload, initiate), each with its error
	var res Result
	var errs []error

	wantShared := map[string]bool{}
	for _, sh := range s.Shared {
		wantShared[sh.ID] = true
		if err := a.call(ctx, "load-shared", sh.Message); err != nil {
			errs = append(errs, fmt.Errorf("load-shared %s: %w", sh.ID, err))
			continue
		}
		a.shared[sh.ID] = sh.Message
		res.Secrets = append(res.Secrets, sh.ID)
	}
	errs = append(errs, a.loadKeys(ctx, s, &res)...)
	for _, c := range s.Certs {
		if old, ok := a.certs[c.Name]; ok && Fingerprint(old) == Fingerprint(c.Message) {
			continue
		}
		if err := a.call(ctx, "load-cert", c.Message); err != nil {
			errs = append(errs, fmt.Errorf("load-cert %s: %w", c.Name, err))
			continue
		}
		a.certs[c.Name] = c.Message
		res.Certs = append(res.Certs, c.Name)
	}

	wantConn := map[string]bool{}
	for _, c := range s.Conns {
		wantConn[c.Name] = true
		fp := Fingerprint(c.Message)
		if old, ok := a.conns[c.Name]; ok && old.fp == fp {
			res.Unchanged = append(res.Unchanged, c.Name)
			continue
		}
		if err := a.call(ctx, "load-conn", c.Message); err != nil {
			errs = append(errs, fmt.Errorf("load-conn %s: %w", c.Name, err))
			continue
		}
		old, existed := a.conns[c.Name]
		a.conns[c.Name] = applied{msg: c.Message, fp: fp}
		res.Loaded = append(res.Loaded, c.Name)
		if !existed {
			continue
		}
		for _, child := range staleChildren(c.Name, old.msg, c.Message) {
			if found, err := a.terminate(ctx, "child", child, c.Name); err != nil {
				errs = append(errs, fmt.Errorf("terminate %s/%s: %w", c.Name, child, err))
			} else if found {
				res.Terminated = append(res.Terminated, c.Name+"/"+child)
			}
		}
	}

	for _, name := range sortedKeys(a.conns) {
		if wantConn[name] {
			continue
		}
		m := vici.NewMessage()
		if err := m.Set("name", name); err != nil {
			errs = append(errs, err)
			continue
		}
		if err := a.call(ctx, "unload-conn", m); err != nil {
			errs = append(errs, fmt.Errorf("unload-conn %s: %w", name, err))
			continue
		}
		delete(a.conns, name)
		res.Unloaded = append(res.Unloaded, name)
		if found, err := a.terminate(ctx, "ike", name, ""); err != nil {
			errs = append(errs, fmt.Errorf("terminate %s: %w", name, err))
		} else if found {
			res.Terminated = append(res.Terminated, name)
		}
	}
	for _, id := range sortedKeys(a.shared) {
		if wantShared[id] {
			continue
		}
		m := vici.NewMessage()
		if err := m.Set("id", id); err != nil {
			errs = append(errs, err)
			continue
		}
		if err := a.call(ctx, "unload-shared", m); err != nil {
			errs = append(errs, fmt.Errorf("unload-shared %s: %w", id, err))
			continue
		}
		delete(a.shared, id)
		res.SecretsUnloaded = append(res.SecretsUnloaded, id)
	}

	a.connOrder = a.connOrder[:0]
	for _, c := range s.Conns {
		if _, ok := a.conns[c.Name]; ok {
			a.connOrder = append(a.connOrder, c.Name)
		}
	}
	a.sharedOrder = a.sharedOrder[:0]
	for _, sh := range s.Shared {
		if _, ok := a.shared[sh.ID]; ok {
			a.sharedOrder = append(a.sharedOrder, sh.ID)
		}
	}
	res.sort()
	return res, errors.Join(errs...)
}

// Reapply loads everything the Applier has applied into charon again, for a
// charon that restarted and holds nothing: every secret, then every
// connection, in the order of the last applied set.
func (a *Applier) Reapply(ctx context.Context) (Result, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	var res Result
	var errs []error
	for _, id := range a.sharedOrder {
		if err := a.call(ctx, "load-shared", a.shared[id]); err != nil {
			errs = append(errs, fmt.Errorf("load-shared %s: %w", id, err))
			continue
		}
		res.Secrets = append(res.Secrets, id)
	}
	for _, id := range sortedKeys(a.keys) {
		if _, err := a.loadKey(ctx, a.keys[id].msg); err != nil {
			errs = append(errs, fmt.Errorf("load-key %s: %w", id, err))
			continue
		}
		res.Keys = append(res.Keys, id)
	}
	for _, name := range sortedKeys(a.certs) {
		if err := a.call(ctx, "load-cert", a.certs[name]); err != nil {
			errs = append(errs, fmt.Errorf("load-cert %s: %w", name, err))
			continue
		}
		res.Certs = append(res.Certs, name)
	}
	for _, name := range a.connOrder {
		if err := a.call(ctx, "load-conn", a.conns[name].msg); err != nil {
			errs = append(errs, fmt.Errorf("load-conn %s: %w", name, err))
			continue
		}
		res.Loaded = append(res.Loaded, name)
	}
	res.sort()
	return res, errors.Join(errs...)
}

// Applied returns the names of the connections the Applier has loaded,
// sorted.
func (a *Applier) Applied() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return sortedKeys(a.conns)
}

// Children returns the names of the children of connection conn as last
// loaded into charon, sorted; nil when conn is not loaded.
func (a *Applier) Children(conn string) []string {
	return a.children(conn, func(*vici.Message) bool { return true })
}

// Started returns the names of the children of connection conn as last
// loaded into charon whose start_action is start, sorted: the children
// charon initiates by itself and that are to be kept up (always on); nil
// when conn is not loaded.
func (a *Applier) Started(conn string) []string {
	return a.children(conn, func(c *vici.Message) bool { return c.Get("start_action") == "start" })
}

// children returns the sorted names of conn's children for which keep is
// true; nil when conn is not loaded.
func (a *Applier) children(conn string, keep func(child *vici.Message) bool) []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	c, ok := a.conns[conn]
	if !ok {
		return nil
	}
	names := []string{}
	if ch := children(conn, c.msg); ch != nil {
		for _, n := range ch.Keys() {
			if m, ok := ch.Get(n).(*vici.Message); ok && keep(m) {
				names = append(names, n)
			}
		}
	}
	slices.Sort(names)
	return names
}

// terminate asks charon to close the SAs of the IKE configuration name
// (kind "ike") or of the child configuration name of connection ike (kind
// "child"), without waiting (timeout -1): charon 5.9 leaves the SAs of an
// unloaded connection, or of a child removed by load-conn, established.
// found is false when there was no SA to close, which is not an error.
func (a *Applier) terminate(ctx context.Context, kind, name, ike string) (found bool, err error) {
	m := vici.NewMessage()
	kv := [][2]string{{kind, name}, {"timeout", "-1"}}
	if ike != "" {
		kv = append(kv, [2]string{"ike", ike})
	}
	for _, p := range kv {
		if err := m.Set(p[0], p[1]); err != nil {
			return false, err
		}
	}
	if err := a.call(ctx, "terminate", m); err != nil {
		if strings.Contains(err.Error(), "no matching SAs") {
			return false, nil
		}
		return false, err
	}
	return true, nil
}

// staleChildren returns the children of conn's old load-conn request whose
// CHILD_SAs the new request leaves stale: children that are gone, and
// children whose traffic selectors (local_ts, remote_ts) changed, since
// their established CHILD_SAs keep carrying the old subnets. Other changes
// (proposals, lifetimes) apply from the next rekey and keep the SA.
func staleChildren(conn string, old, now *vici.Message) []string {
	oldCh, nowCh := children(conn, old), children(conn, now)
	if oldCh == nil {
		return nil
	}
	var out []string
	for _, name := range oldCh.Keys() {
		o, _ := oldCh.Get(name).(*vici.Message)
		var n *vici.Message
		if nowCh != nil {
			n, _ = nowCh.Get(name).(*vici.Message)
		}
		if n == nil || o == nil || !sameValue(o, n, "local_ts") || !sameValue(o, n, "remote_ts") {
			out = append(out, name)
		}
	}
	return out
}

// children returns the children section of the load-conn request m of conn.
func children(conn string, m *vici.Message) *vici.Message {
	body, ok := m.Get(conn).(*vici.Message)
	if !ok {
		return nil
	}
	ch, _ := body.Get("children").(*vici.Message)
	return ch
}

// sameValue says whether key has the same value in a and b.
func sameValue(a, b *vici.Message, key string) bool {
	return fmt.Sprint(a.Get(key)) == fmt.Sprint(b.Get(key))
}

// call sends one request and turns an answer with success=no into an error
// carrying charon's errmsg.
func (a *Applier) call(ctx context.Context, cmd string, in *vici.Message) error {
	out, err := a.c.Call(ctx, cmd, in)
	if err != nil {
		return err
	}
	if out != nil {
		return out.Err()
	}
	return nil
}

// loadKeys sends load-key for every private key of s that is new or
// changed and unload-key for the keys charon holds that s no longer has
// (once a changed key's successor is loaded: IKE SAs being authenticated
// meanwhile find one). Established IKE SAs need no private key until they
// are reauthenticated. It returns the errors.
func (a *Applier) loadKeys(ctx context.Context, s *Set, res *Result) []error {
	var errs []error
	want := map[string]bool{}
	used := map[string]bool{}
	var stale []string
	for _, k := range s.Keys {
		want[k.ID] = true
		sum := sha256.Sum256([]byte(Fingerprint(k.Message)))
		old, ok := a.keys[k.ID]
		if ok && old.sum == sum {
			used[old.id] = true
			continue
		}
		id, err := a.loadKey(ctx, k.Message)
		if err != nil {
			errs = append(errs, fmt.Errorf("load-key %s: %w", k.ID, err))
			continue
		}
		used[id] = true
		if ok {
			stale = append(stale, old.id)
		}
		a.keys[k.ID] = loadedKey{msg: k.Message, sum: sum, id: id}
		res.Keys = append(res.Keys, k.ID)
	}
	for _, id := range sortedKeys(a.keys) {
		if !want[id] {
			stale = append(stale, a.keys[id].id)
			delete(a.keys, id)
			res.KeysUnloaded = append(res.KeysUnloaded, id)
		}
	}
	for _, id := range stale {
		if id == "" || used[id] {
			continue
		}
		m := vici.NewMessage()
		if err := m.Set("id", id); err != nil {
			errs = append(errs, err)
			continue
		}
		if err := a.call(ctx, "unload-key", m); err != nil {
			errs = append(errs, fmt.Errorf("unload-key %s: %w", id, err))
		}
	}
	return errs
}

// loadKey sends one load-key request and returns charon's identifier of
// the key.
func (a *Applier) loadKey(ctx context.Context, m *vici.Message) (string, error) {
	out, err := a.c.Call(ctx, "load-key", m)
	if err != nil {
		return "", err
	}
	if out == nil {
		return "", nil
	}
	if err := out.Err(); err != nil {
		return "", err
	}
	id, _ := out.Get("id").(string)
	return id, nil
}

func (r *Result) sort() {
	for _, s := range []*[]string{&r.Loaded, &r.Unloaded, &r.Unchanged, &r.Secrets, &r.Keys, &r.KeysUnloaded, &r.Certs, &r.SecretsUnloaded, &r.Terminated} {
		sort.Strings(*s)
	}
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// Fingerprint returns a canonical text form of a VICI message: keys in
// message order, values tagged by kind (value, list, section), so that two
// load-conn requests have the same fingerprint exactly when charon would
// receive the same request. Do not use it on load-shared requests: it
// contains every value.
func Fingerprint(m *vici.Message) string {
	var b strings.Builder
	fingerprint(&b, m)
	return b.String()
}

func fingerprint(b *strings.Builder, m *vici.Message) {
	b.WriteByte('{')
	for _, k := range m.Keys() {
		fmt.Fprintf(b, "%q", k)
		switch v := m.Get(k).(type) {
		case string:
			fmt.Fprintf(b, "=%q;", v)
		case []string:
			fmt.Fprintf(b, "=[%q];", v)
		case *vici.Message:
			fingerprint(b, v)
		default:
			fmt.Fprintf(b, "=?%T;", v)
		}
	}
	b.WriteByte('}')
}
