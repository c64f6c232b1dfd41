// Package charon runs a real strongSwan charon (Debian's) for tests, in a
// network namespace of its own that has only loopback, and connects to it
// over VICI.
package charon

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/strongswan/govici/vici"
)

// Binary is where Debian's strongswan-charon installs charon.
const Binary = "/usr/lib/ipsec/charon"

// validationPlugins load no kernel interface: such a charon parses and
// loads configurations exactly as a real one but never installs an SA.
const validationPlugins = "random nonce openssl pem pkcs1 x509 pubkey revocation constraints kdf hmac " +
	"sha1 sha2 md5 aes gcm gmp xcbc kernel-netlink socket-default vici"

// A Charon is a running charon and a VICI session to it.
type Charon struct {
	*vici.Session
	// Dir holds its strongswan.conf, VICI socket and log (charon.log).
	Dir string
}

// Start runs a configuration-validation charon for t and stops it, and
// removes its files, when t ends. It skips t with the reason when not run
// as root or when charon is not installed (apt-get install
// strongswan-charon).
func Start(t testing.TB) *Charon {
	t.Helper()
	return StartWith(t, func(dir, socket string) string {
		return fmt.Sprintf(`charon {
  load_modular = no
  load = %s
  install_routes = no
  plugins {
    vici {
      socket = unix://%s
    }
  }
  filelog {
    log {
      path = %s
      default = 1
    }
  }
}
`, validationPlugins, socket, filepath.Join(dir, "charon.log"))
	})
}

// StartWith runs a charon as Start does, with the strongswan.conf that conf
// returns for the charon's directory (Dir) and the path of the VICI socket
// it must serve.
func StartWith(t testing.TB, conf func(dir, socket string) string) *Charon {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("a real charon needs root (network and mount namespaces): run the tests as root")
	}
	if _, err := os.Stat(Binary); err != nil {
		t.Skipf("%s is missing: apt-get install strongswan-charon strongswan-swanctl", Binary)
	}
	dir := t.TempDir()
	sock := filepath.Join(dir, "charon.vici")
	if err := os.WriteFile(filepath.Join(dir, "strongswan.conf"), []byte(conf(dir, sock)), 0o600); err != nil {
		t.Fatal(err)
	}
	// charon writes its pid file to a fixed path under /run: give it a
	// private /run in a private mount namespace.
	cmd := exec.Command("unshare", "--net", "--mount", "--fork", "sh", "-c", "mount -t tmpfs tmpfs /run && exec "+Binary)
	cmd.Env = append(os.Environ(), "STRONGSWAN_CONF="+filepath.Join(dir, "strongswan.conf"))
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := os.Create(filepath.Join(dir, "charon.out"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatalf("cannot start charon: %v", err)
	}
	c := &Charon{Dir: dir}
	t.Cleanup(func() {
		if c.Session != nil {
			_ = c.Session.Close() //nolint:staticcheck // QF1008: the session, not the charon, is closed
		}
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-done
		}
		_ = out.Close()
	})
	deadline := time.Now().Add(10 * time.Second)
	for {
		if s, err := vici.NewSession(vici.WithSocketPath(sock)); err == nil {
			if _, err := s.Call(context.Background(), "version", nil); err == nil {
				c.Session = s
				return c
			}
			_ = s.Close()
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(filepath.Join(dir, "charon.out"))
			t.Fatalf("charon did not answer on %s within 10s:\n%s", sock, log)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
