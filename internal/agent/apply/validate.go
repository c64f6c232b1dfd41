package apply

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"github.com/strongswan/govici/vici"
)

// CharonBinary is where Debian's strongswan-charon installs charon.
const CharonBinary = "/usr/lib/ipsec/charon"

// ValidationPlugins are the plugins of a validation charon: everything needed
// to parse and load IKE and ESP configurations, and no kernel interface other
// than kernel-netlink (no kernel-libipsec), so it never installs an SA.
// socket-default is needed for charon to start; openssl provides the
// Diffie-Hellman groups, curve25519 included.
const ValidationPlugins = "random nonce openssl pem pkcs1 x509 pubkey revocation constraints kdf hmac " +
	"sha1 sha2 md5 aes gcm gmp xcbc kernel-netlink socket-default vici"

// A CharonValidator validates a set by loading it into a scratch charon of
// its own: charon runs with ValidationPlugins in new network and mount
// namespaces (unshare; it writes its pid file to a fixed path under /run, so
// it gets a private /run), the set is loaded over VICI, and charon is
// stopped. Such a charon reports the same errors as the live one and is
// ready in about 35 ms. It needs CAP_SYS_ADMIN (unshare).
type CharonValidator struct {
	// Binary is charon's path; CharonBinary when empty.
	Binary string
	// TempDir is where the scratch charon's directory is made; the system's
	// temporary directory when empty.
	TempDir string
	// Timeout bounds how long charon may take to answer on VICI; 10s when
	// zero.
	Timeout time.Duration
}

// Validate loads every secret and connection of s into a scratch charon and
// returns the first refusal, naming the connection or secret and carrying
// charon's errmsg.
func (v CharonValidator) Validate(ctx context.Context, s *Set) error {
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
	for _, c := range s.Conns {
		if _, err := sess.Call(ctx, "load-conn", c.Message); err != nil {
			return fmt.Errorf("connection %s: charon refuses it: %w", c.Name, err)
		}
	}
	return nil
}

// start runs a scratch charon and connects to it; stop closes the session,
// stops charon and removes its directory.
func (v CharonValidator) start(ctx context.Context) (*vici.Session, func(), error) {
	bin := v.Binary
	if bin == "" {
		bin = CharonBinary
	}
	timeout := v.Timeout
	if timeout == 0 {
		timeout = 10 * time.Second
	}
	dir, err := os.MkdirTemp(v.TempDir, "validate-charon-")
	if err != nil {
		return nil, nil, fmt.Errorf("validation charon: %w", err)
	}
	sock := filepath.Join(dir, "charon.vici")
	conf := fmt.Sprintf(`charon {
  load_modular = no
  load = %s
  install_routes = no
  install_virtual_ip = no
  plugins {
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
	out, err := os.Create(filepath.Join(dir, "charon.out"))
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, nil, fmt.Errorf("validation charon: %w", err)
	}
	// exec charon directly after mounting a private /run: its pid file
	// path is fixed.
	cmd := exec.Command("unshare", "--net", "--mount", "--fork", "sh", "-c", `mount -t tmpfs tmpfs /run && exec "$0"`, bin)
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
	deadline := time.Now().Add(timeout)
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
				failed = fmt.Errorf("charon did not answer within %s", timeout)
			}
		}
		if failed != nil {
			log, _ := os.ReadFile(filepath.Join(dir, "charon.out"))
			stop()
			return nil, nil, fmt.Errorf("validation charon: %w: %s", failed, tail(log, 512))
		}
	}
}

// tail returns at most the last n bytes of b.
func tail(b []byte, n int) string {
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}
