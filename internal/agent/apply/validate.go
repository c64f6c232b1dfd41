package apply

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/strongswan/govici/vici"
)

// CharonBinary is where Debian's strongswan-charon installs charon.
const CharonBinary = "/usr/lib/ipsec/charon"

// ValidationPlugins are the plugins of a validation charon: everything needed
// to parse and load IKE and ESP configurations. charon will not start
// without an IPsec backend and a socket: kernel-netlink is the backend (not
// kernel-libipsec, which would create a TUN device), socket-default the
// socket. openssl provides the Diffie-Hellman groups, curve25519 included.
const ValidationPlugins = "random nonce openssl pem pkcs1 x509 pubkey revocation constraints kdf hmac " +
	"sha1 sha2 md5 aes gcm gmp xcbc kernel-netlink socket-default vici"

// A CharonValidator validates a set by loading it into a scratch charon of
// its own over VICI, then stops that charon. Such a charon reports the same
// errors as the live one and is ready in tens of milliseconds.
//
// It runs beside the live charon, in the same network namespace, without
// touching it and with no capability beyond the agent's NET_ADMIN
// (strongSwan 5.9.8, verified by the integration test):
//
//   - every child is loaded with start_action none (see inert): a charon
//     that initiated would send IKE_SA_INIT to the real peer, whose
//     INITIAL_CONTACT handling then closes the live tunnel, and trap or
//     shunt policies would land in the live namespace's kernel;
//   - its strongswan.conf (STRONGSWAN_CONF) gives it ValidationPlugins, a
//     VICI socket of its own and no IKE socket at all (socket-default with
//     IPv4 and IPv6 off: ports 500 and 4500 stay the live charon's, and
//     nothing could be sent);
//   - routing_table 0, so that kernel-netlink neither adds nor, when it
//     stops, deletes the policy routing rule of table 220 that the live
//     charon's routes depend on; it installs no routes or virtual IPs.
//
// charon writes its pid to /var/run/charon.pid, a path fixed at build time,
// and does not start while the process named there runs: a mount namespace
// whose /var/run holds the live charon's pid file cannot validate (in the
// gateway pod, the agent container's /var/run is its own). Validations in
// one process take turns; a validation charon of another process in the
// same mount namespace is waited for until Timeout.
type CharonValidator struct {
	// Command runs charon: the program and its arguments, such as nsenter
	// --net=/run/netns/gw -- /usr/lib/ipsec/charon to run it in another
	// network namespace; CharonBinary alone when empty.
	Command []string
	// TempDir is where the scratch charon's directory is made; the system's
	// temporary directory when empty.
	TempDir string
	// Timeout bounds how long charon may take to answer on VICI; 10s when
	// zero.
	Timeout time.Duration
}

// validating makes the validations of this process take turns: their
// charons would share one pid file.
var validating sync.Mutex

// Validate loads every secret and connection of s into a scratch charon and
// returns the first refusal, naming the connection or secret and carrying
// charon's errmsg.
func (v CharonValidator) Validate(ctx context.Context, s *Set) error {
	validating.Lock()
	defer validating.Unlock()
	sess, stop, err := v.start(ctx)
	if err != nil {
		return err
	}
	defer stop()
	for _, sh := range s.Shared {
		if _, err := sess.Call(ctx, "load-shared", sh.Message); err != nil {
			return fmt.Errorf("secret %s: charon refuses it: %w", sh.ID, err)
		}
	}
	for _, k := range s.Keys {
		if _, err := sess.Call(ctx, "load-key", k.Message); err != nil {
			return fmt.Errorf("secret %s: charon refuses the private key: %w", k.ID, err)
		}
	}
	for _, c := range s.Certs {
		if _, err := sess.Call(ctx, "load-cert", c.Message); err != nil {
			return fmt.Errorf("certificate %s: charon refuses it: %w", c.Name, err)
		}
	}
	for _, c := range s.Conns {
		if _, err := sess.Call(ctx, "load-conn", inert(c.Message, nil)); err != nil {
			return fmt.Errorf("connection %s: charon refuses it: %w", c.Name, err)
		}
	}
	return nil
}

// errRunning says that charon would not start because the charon named in
// its pid file runs.
var errRunning = errors.New("another charon's pid file is in place")

// errNoAnswer says that charon did not answer on VICI before the deadline.
var errNoAnswer = errors.New("charon did not answer in time")

// start runs a scratch charon and connects to it, starting it again while
// another validation charon holds the pid file, until the timeout; stop
// closes the session, stops charon and removes its directory.
func (v CharonValidator) start(ctx context.Context) (*vici.Session, func(), error) {
	timeout := v.Timeout
	if timeout == 0 {
		timeout = 10 * time.Second
	}
	deadline := time.Now().Add(timeout)
	var running error
	for {
		sess, stop, err := v.startOnce(ctx, deadline)
		if errors.Is(err, errRunning) {
			running = err
		} else if errors.Is(err, errNoAnswer) && running != nil {
			// The last start ran into the deadline before it said
			// anything; the one before found the pid file held.
			return nil, nil, running
		}
		if !errors.Is(err, errRunning) || time.Now().After(deadline) {
			return sess, stop, err
		}
		select {
		case <-ctx.Done():
			return nil, nil, fmt.Errorf("validation charon: %w", ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// startOnce runs charon once and waits until deadline for it to answer.
func (v CharonValidator) startOnce(ctx context.Context, deadline time.Time) (*vici.Session, func(), error) { //nolint:gocyclo // start, wait for the socket, connect: each step with its error and cleanup
	command := v.Command
	if len(command) == 0 {
		command = []string{CharonBinary}
	}
	dir, err := os.MkdirTemp(v.TempDir, "validate-charon-")
	if err != nil {
		return nil, nil, fmt.Errorf("validation charon: %w", err)
	}
	sock := filepath.Join(dir, "charon.vici")
	conf := fmt.Sprintf(`charon {
  load_modular = no
  load = %s
  routing_table = 0
  install_routes = no
  install_virtual_ip = no
  plugins {
    socket-default {
      use_ipv4 = no
      use_ipv6 = no
    }
    vici {
      socket = unix://%s
    }
  }
}
`, ValidationPlugins, sock)
	if err := os.WriteFile(filepath.Join(dir, "strongswan.conf"), []byte(conf), 0o600); err != nil {
		_ = os.RemoveAll(dir)
		return nil, nil, fmt.Errorf("validation charon: %w", err)
	}
	out, err := os.Create(filepath.Join(dir, "charon.out")) //nolint:gosec // G304: a file of the temporary directory made above
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, nil, fmt.Errorf("validation charon: %w", err)
	}
	cmd := exec.Command(command[0], command[1:]...) //nolint:gosec,noctx // G204: the agent's own validation charon, from its flags; it outlives ctx until stop() ends it
	cmd.Env = append(os.Environ(), "STRONGSWAN_CONF="+filepath.Join(dir, "strongswan.conf"))
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		_ = out.Close()
		_ = os.RemoveAll(dir)
		return nil, nil, fmt.Errorf("validation charon: %w", err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	var sess *vici.Session
	stop := func() {
		if sess != nil {
			_ = sess.Close()
		}
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(5 * time.Second):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-exited
		}
		_ = out.Close()
		_ = os.RemoveAll(dir)
	}
	for {
		if s, err := vici.NewSession(vici.WithSocketPath(sock)); err == nil {
			if _, err := s.Call(ctx, "version", nil); err == nil {
				sess = s
				return sess, stop, nil
			}
			_ = s.Close()
		}
		var failed error
		select {
		case <-exited:
			failed = errors.New("charon exited")
		case <-ctx.Done():
			failed = ctx.Err()
		case <-time.After(5 * time.Millisecond):
			if time.Now().After(deadline) {
				failed = errNoAnswer
			}
		}
		if failed != nil {
			log, _ := os.ReadFile(filepath.Join(dir, "charon.out")) //nolint:gosec // G304: a file of the temporary directory made above
			stop()
			if bytes.Contains(log, []byte("charon already running")) {
				failed = errRunning
			}
			return nil, nil, fmt.Errorf("validation charon: %w: %s", failed, tail(log, 512))
		}
	}
}

// inert returns a copy of m, a load-conn request or a section of it at
// path (the keys leading to it), in which every child's start_action is
// none, so that loading it starts nothing. charon's own default is none.
func inert(m *vici.Message, path []string) *vici.Message {
	child := len(path) == 3 && path[1] == "children"
	out := vici.NewMessage()
	for _, k := range m.Keys() {
		v := m.Get(k)
		if sub, ok := v.(*vici.Message); ok {
			v = inert(sub, append(slices.Clip(path), k))
		} else if child && k == "start_action" {
			v = "none"
		}
		// Set fails only for value types a parsed message cannot hold.
		_ = out.Set(k, v)
	}
	return out
}

// tail returns at most the last n bytes of b.
func tail(b []byte, n int) string {
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}
