package topology

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/strongswan/govici/vici"

	"github.com/ipsecgw/provider-ipsec/internal/swanctl"
)

// Plugins every networked charon loads, in this order: kernel-libipsec
// must register its IPsec backend before kernel-netlink, or CHILD_SAs fail
// with "Function not implemented" on a kernel without ESP. openssl
// provides the Diffie-Hellman groups, curve25519 included.
const Plugins = "random nonce openssl pem pkcs1 x509 pubkey revocation constraints kdf hmac " +
	"sha1 sha2 md5 aes gcm gmp xcbc kernel-libipsec kernel-netlink socket-default vici"

// KernelPlugins are Plugins without kernel-libipsec: kernel-netlink
// installs the SAs and policies into the kernel's XFRM, for a kernel with
// ESP (the kernel tier's guest, test/kernel).
var KernelPlugins = strings.Replace(Plugins, " kernel-libipsec", "", 1)

// validationPlugins load no IPsec backend of their own (kernel-netlink in
// a namespace with only loopback): such a charon parses and loads
// configurations exactly as a real one but never installs an SA.
const validationPlugins = "random nonce openssl pem pkcs1 x509 pubkey revocation constraints kdf hmac " +
	"sha1 sha2 md5 aes gcm gmp xcbc kernel-netlink socket-default vici"

// Retransmission settings of every networked charon: an unanswered IKE
// request is given up after about 3 s instead of strongSwan's default
// 165 s, so dead peers and failed exchanges show within seconds
// (https://docs.strongswan.org/docs/5.9/config/retransmission.html).
const (
	RetransmitTimeout = "1.0"
	RetransmitBase    = "1.0"
	RetransmitTries   = "2"
)

// retransmission is the retransmission settings above, in strongswan.conf's
// charon section.
const retransmission = "retransmit_timeout = " + RetransmitTimeout + "\n  retransmit_base = " + RetransmitBase +
	"\n  retransmit_tries = " + RetransmitTries

// Timeouts of a charon's start (until it answers on VICI) and of its stop
// (until it has exited after the signal, then SIGKILL).
const (
	startTimeout = 10 * time.Second
	stopTimeout  = 10 * time.Second
)

// A Charon is one charon, run by Start in a network namespace, and a VICI
// session to it.
type Charon struct {
	// Session is a VICI session to the running charon, replaced by Start.
	*vici.Session
	// NS is the network namespace the charon runs in; empty for one of
	// its own with only loopback (a validation charon).
	NS string
	// Dir holds its strongswan.conf, VICI socket (charon.vici), log
	// (charon.log), standard output (charon.out) and pid (charon.pid).
	Dir string
	// Conf returns the strongswan.conf for the charon's directory and VICI
	// socket; NetworkConf when nil.
	Conf func(dir, socket string) string
	// IPsecConf, when set, is a legacy ipsec.conf that Start has
	// strongSwan's starter load, as a VM's ipsec service does: starter
	// starts charon and adds the conns over stroke (Conf then loads the
	// stroke plugin: StrokeConf).
	IPsecConf string

	cmd    *exec.Cmd
	out    *os.File
	waited chan struct{} // closed when cmd has exited
}

// NetworkConf is the strongswan.conf of a networked charon: Plugins, the
// retransmission settings, the VICI socket and the log in dir.
func NetworkConf(dir, socket string) string {
	return strongswanConf(Plugins, retransmission, dir, socket)
}

// KernelConf is NetworkConf with KernelPlugins: ESP in the kernel.
func KernelConf(dir, socket string) string {
	return strongswanConf(KernelPlugins, retransmission, dir, socket)
}

// DefaultRetransmissionConf is NetworkConf with strongSwan's default
// retransmission settings instead of the topology's short ones, as the
// gateway pod's charon has them: a request is retransmitted after 4, 11.2,
// 24.2, 47.6 and 89.7 s and given up after 165 s. For the tests of what
// that long wait hides (an IKE SA the peer dropped, still ESTABLISHED here).
func DefaultRetransmissionConf(dir, socket string) string {
	return strongswanConf(Plugins, "", dir, socket)
}

// StrokeConf is ValidationConf with the stroke plugin, which reads its
// pre-shared keys and private keys from secrets (an ipsec.secrets), for a
// charon that starter starts (Charon.IPsecConf).
func StrokeConf(secrets string) func(dir, socket string) string {
	return func(dir, socket string) string {
		return strongswanConf(validationPlugins+" stroke", "install_routes = no\n  plugins {\n    stroke {\n      secrets_file = "+secrets+"\n    }\n  }", dir, socket) +
			"starter {\n  load_warning = no\n}\n"
	}
}

// ValidationConf is the strongswan.conf of a validation charon.
func ValidationConf(dir, socket string) string {
	return strongswanConf(validationPlugins, "install_routes = no", dir, socket)
}

func strongswanConf(plugins, settings, dir, socket string) string {
	return fmt.Sprintf(`charon {
  load_modular = no
  load = %s
  %s
  plugins {
    vici {
      socket = unix://%s
    }
  }
  filelog {
    log {
      path = %s
      time_format = %%F %%T
      time_add_ms = yes
      ike_name = yes
      flush_line = yes
      default = 1
      ike = 2
    }
  }
  syslog {
    daemon {
      default = -1
    }
  }
}
swanctl {
  load = random pem pkcs1 x509 pubkey openssl
  socket = unix://%[3]s
}
`, plugins, settings, socket, filepath.Join(dir, "charon.log"))
}

// Socket is the path of the charon's VICI socket.
func (c *Charon) Socket() string { return filepath.Join(c.Dir, "charon.vici") }

// Pid is the charon's process id, 0 when stopped.
func (c *Charon) Pid() int {
	if c.cmd == nil {
		return 0
	}
	return c.cmd.Process.Pid
}

// Start writes the charon's strongswan.conf, runs it and waits until it
// answers on VICI. Charons are the only thing that starts charon here.
func (c *Charon) Start() error {
	if err := os.MkdirAll(c.Dir, 0o700); err != nil {
		return err
	}
	conf := c.Conf
	if conf == nil {
		conf = NetworkConf
	}
	if err := os.WriteFile(filepath.Join(c.Dir, "strongswan.conf"), []byte(conf(c.Dir, c.Socket())), 0o600); err != nil {
		return err
	}
	_ = os.Remove(c.Socket())
	out, err := os.OpenFile(filepath.Join(c.Dir, "charon.out"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	// charon writes its pid file to the fixed path /run/charon.pid: give
	// it a private /run in a private mount namespace. nsenter, unshare and
	// sh each exec the next, so the process started is charon itself. No
	// parent-death signal: Go delivers it when the forking OS thread ends,
	// not the process; Start reaps charons of killed test binaries instead.
	args := []string{"unshare", "--mount", "--propagation", "private", "--",
		"sh", "-c", `mount -t tmpfs -o mode=0755 tmpfs /run && exec "$@"`, "sh", CharonBinary}
	if c.IPsecConf != "" {
		// starter forks charon and strokes the conns to it; Stop signals
		// the process group, both.
		args = append(args[:len(args)-1], StarterBinary, "--nofork", "--conf", c.IPsecConf)
	}
	if c.NS == "" {
		args = append([]string{"unshare", "--net", "--"}, args...)
	} else {
		args = append([]string{"nsenter", "--net=" + nsPath(c.NS), "--"}, args...)
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Env = append(os.Environ(), "STRONGSWAN_CONF="+filepath.Join(c.Dir, "strongswan.conf"))
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		_ = out.Close()
		return fmt.Errorf("cannot start charon in %s: %w", c.where(), err)
	}
	c.cmd, c.out = cmd, out
	if err := os.WriteFile(filepath.Join(c.Dir, "charon.pid"), []byte(strconv.Itoa(cmd.Process.Pid)), 0o600); err != nil {
		return err
	}
	exited := make(chan struct{})
	c.waited = exited
	go func() { _ = cmd.Wait(); close(exited) }()
	deadline := time.Now().Add(startTimeout)
	for {
		if s, err := vici.NewSession(vici.WithSocketPath(c.Socket())); err == nil {
			if _, err := s.Call(context.Background(), "version", nil); err == nil {
				c.Session = s
				return nil
			}
			_ = s.Close()
		}
		select {
		case <-exited:
			c.cmd = nil
			_ = out.Close()
			return fmt.Errorf("charon in %s exited at start:\n%s", c.where(), c.tail(40))
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("charon in %s did not answer on %s within %v:\n%s", c.where(), c.Socket(), startTimeout, c.tail(40))
		}
	}
}

func (c *Charon) where() string { return cmp.Or(c.NS, c.Dir) }

// Stop sends the charon sig and waits for it to exit (SIGKILL after
// stopTimeout); nothing when it is not running. SIGTERM is an orderly
// stop, as `systemctl stop strongswan`: charon sends its IKE DELETEs
// first. SIGKILL is a crash.
func (c *Charon) Stop(sig syscall.Signal) {
	if c.Session != nil {
		_ = c.Session.Close() //nolint:staticcheck // QF1008: the session, not the charon, is closed
		c.Session = nil
	}
	if c.cmd == nil {
		return
	}
	_ = syscall.Kill(-c.cmd.Process.Pid, sig)
	select {
	case <-c.waited:
	case <-time.After(stopTimeout):
		_ = syscall.Kill(-c.cmd.Process.Pid, syscall.SIGKILL)
		<-c.waited
	}
	c.cmd = nil
	_ = c.out.Close()
}

// Restart kills the charon (SIGKILL, as a crash) and starts it again with
// the same files; it forgets every loaded connection and SA. Sessions from
// Dial are closed by charon's exit.
func (c *Charon) Restart(t testing.TB) {
	t.Helper()
	c.Stop(syscall.SIGKILL)
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
}

// Kill kills the charon (SIGKILL, as a crash) and leaves it stopped; Restart
// starts it again. The topology's cleanup copes with either.
func (c *Charon) Kill() { c.Stop(syscall.SIGKILL) }

// StartValidator runs a configuration-validation charon for t, in a
// network namespace of its own with only loopback, and stops it when t
// ends. It skips t with the reason when not run as root or when charon is
// not installed.
func StartValidator(t testing.TB) *Charon { return StartCharon(t, ValidationConf) }

// StartCharon runs a charon as StartValidator does, with the
// strongswan.conf conf returns (see Charon.Conf).
func StartCharon(t testing.TB, conf func(dir, socket string) string) *Charon {
	t.Helper()
	Need(t, "unshare")
	c := &Charon{Dir: t.TempDir(), Conf: conf}
	t.Cleanup(func() { c.Stop(syscall.SIGTERM) })
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	return c
}

// Dial opens a new VICI session to the charon, closed when t ends. Use one
// per goroutine or event subscriber.
func (c *Charon) Dial(t testing.TB) *vici.Session {
	t.Helper()
	s, err := vici.NewSession(vici.WithSocketPath(c.Socket()))
	if err != nil {
		t.Fatalf("cannot connect to charon in %s: %v", c.NS, err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// Events subscribes a new session to the named events (such as ike-updown
// and child-updown) and returns the channel they arrive on. The channel
// buffers 256 events; govici drops events when it is full.
func (c *Charon) Events(t testing.TB, names ...string) <-chan vici.Event {
	t.Helper()
	s := c.Dial(t)
	if err := s.Subscribe(names...); err != nil {
		t.Fatalf("cannot subscribe to %v in %s: %v", names, c.NS, err)
	}
	ch := make(chan vici.Event, 256)
	s.NotifyEvents(ch)
	return ch
}

// LoadConfig loads a swanctl.conf document (connections) and a secrets
// document into the charon over VICI, as the gateway's agent does: the
// secrets first (load-shared), so that connections starting at once find
// their PSK, then every connection (load-conn), converted by
// internal/swanctl. It stops at the first refusal and returns charon's
// message.
func (c *Charon) LoadConfig(ctx context.Context, conf, secrets []byte) error {
	sdoc, err := swanctl.Parse(secrets)
	if err != nil {
		return fmt.Errorf("cannot parse secrets: %w", err)
	}
	shared, err := swanctl.LoadShared(sdoc)
	if err != nil {
		return err
	}
	doc, err := swanctl.Parse(conf)
	if err != nil {
		return fmt.Errorf("cannot parse swanctl.conf: %w", err)
	}
	conns, err := swanctl.LoadConns(doc)
	if err != nil {
		return err
	}
	for _, s := range shared {
		if _, err := c.Call(ctx, "load-shared", s.Message); err != nil {
			return fmt.Errorf("charon refused secret %s: %w", s.ID, err)
		}
	}
	for _, cn := range conns {
		if _, err := c.Call(ctx, "load-conn", cn.Message); err != nil {
			return fmt.Errorf("charon refused connection %s: %w", cn.Name, err)
		}
	}
	return nil
}

// LoadFile loads a complete swanctl.conf (connections and secrets) with
// the swanctl command, as a client site's administrator would, replacing
// whatever was loaded before. swanctl's exit code is not trusted (a syntax
// error exits 0): any "failed" or "error" in its output is an error too, and
// every connection in want must be loaded afterwards.
func (c *Charon) LoadFile(ctx context.Context, conf []byte, want ...string) error {
	// swanctl looks for credentials in directories beside the file and
	// reports each missing one as failed.
	dir := filepath.Join(c.Dir, "swanctl")
	for _, d := range []string{"x509", "x509ca", "x509ocsp", "x509aa", "x509ac", "x509crl", "pubkey",
		"private", "rsa", "ecdsa", "bliss", "pkcs8", "pkcs12"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o700); err != nil {
			return err
		}
	}
	file := filepath.Join(dir, "swanctl.conf")
	if err := os.WriteFile(file, conf, 0o600); err != nil {
		return err
	}
	out, err := c.Swanctl(ctx, "--load-all", "--noprompt", "--file", file)
	if err != nil {
		return err
	}
	if l := strings.ToLower(out); strings.Contains(l, "failed") || strings.Contains(l, "error") {
		return fmt.Errorf("swanctl --load-all reported a problem:\n%s", out)
	}
	m, err := c.Call(ctx, "get-conns", nil)
	if err != nil {
		return err
	}
	got, _ := m.Get("conns").([]string)
	for _, w := range want {
		found := false
		for _, g := range got {
			found = found || g == w
		}
		if !found {
			return fmt.Errorf("connection %s is not loaded after swanctl --load-all (loaded: %v):\n%s", w, got, out)
		}
	}
	return nil
}

// Swanctl runs the swanctl command against the charon, as the site's
// administrator would (such as "--terminate", "--ike", "vpn"), and returns
// its output; an exit code other than 0 is an error carrying the output.
func (c *Charon) Swanctl(ctx context.Context, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, SwanctlBinary, append(args, "--uri", "unix://"+c.Socket())...)
	cmd.Env = append(os.Environ(), "STRONGSWAN_CONF="+filepath.Join(c.Dir, "strongswan.conf"))
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("swanctl %s: %w: %s", strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

// tail returns the last n lines of the charon's log and output.
func (c *Charon) tail(n int) string {
	var b strings.Builder
	for _, f := range []string{"charon.out", "charon.log"} {
		data, err := os.ReadFile(filepath.Join(c.Dir, f))
		if err != nil {
			continue
		}
		lines := bytes.Split(bytes.TrimRight(data, "\n"), []byte("\n"))
		if len(lines) > n {
			lines = lines[len(lines)-n:]
		}
		fmt.Fprintf(&b, "--- %s\n%s\n", f, bytes.Join(lines, []byte("\n")))
	}
	return b.String()
}

// Log returns the charon's log (charon.log) so far.
func (c *Charon) Log() string {
	data, _ := os.ReadFile(filepath.Join(c.Dir, "charon.log"))
	return string(data)
}
