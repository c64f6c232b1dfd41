//go:build kernel

package guest

import (
	"fmt"
	"os"
	"os/exec"
	"testing"

	"golang.org/x/sys/unix"
)

// testPort is the guest's second serial port: the tests' output, which
// the host reads; the first (the console) has the kernel's messages.
const testPort = "/dev/ttyS1"

// preload are modules loaded before the tests, so that a missing one
// fails at once rather than as a test's odd error; the kernel loads the
// others (nft's expressions, ciphers, drbg) on demand through the
// guest's /sbin/modprobe.
var preload = []string{"veth", "bridge", "esp4", "xfrm_user", "xfrm_interface", "nf_tables"}

// TestMain is the guest's init: as pid 1 it mounts /proc, /sys, /dev, /tmp
// and /run, loads preload, runs the tests with their output on testPort,
// writes the exit code there and resets the guest (QEMU runs it with
// -no-reboot, so the reset powers it off). Started any other way it runs
// nothing: the tests change the kernel's network state.
func TestMain(m *testing.M) {
	if os.Getpid() != 1 {
		fmt.Println("the kernel tier's tests run only as the init of its guest: make test-kernel")
		os.Exit(0)
	}
	code := 1
	port, err := setup()
	if err != nil {
		fmt.Fprintln(os.Stderr, "guest init:", err)
	} else {
		code = m.Run()
	}
	fmt.Printf("\n%s%d\n", ExitPrefix, code)
	if port != nil {
		_ = unix.IoctlSetInt(int(port.Fd()), unix.TCSBRK, 1) // tcdrain: the host reads the exit code
	}
	unix.Sync()
	_ = unix.Reboot(unix.LINUX_REBOOT_CMD_RESTART)
}

// setup makes the guest's root filesystem usable and points the standard
// output and error at testPort, which it returns (nil if it could not
// open it: then nothing reaches the host but the missing exit code).
func setup() (*os.File, error) {
	for _, m := range []struct{ fs, dir string }{
		{"devtmpfs", "/dev"}, {"proc", "/proc"}, {"sysfs", "/sys"}, {"tmpfs", "/tmp"}, {"tmpfs", "/run"},
	} {
		if err := os.MkdirAll(m.dir, 0o755); err != nil {
			return nil, err
		}
		if err := unix.Mount(m.fs, m.dir, m.fs, 0, ""); err != nil {
			return nil, fmt.Errorf("cannot mount %s on %s: %w", m.fs, m.dir, err)
		}
	}
	port, err := os.OpenFile(testPort, os.O_WRONLY|unix.O_NOCTTY, 0)
	if err != nil {
		return nil, err
	}
	for _, fd := range []int{1, 2} {
		if err := unix.Dup2(int(port.Fd()), fd); err != nil {
			return port, fmt.Errorf("cannot point fd %d at %s: %w", fd, testPort, err)
		}
	}
	// The gateway image's PATH.
	if err := os.Setenv("PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"); err != nil {
		return port, err
	}
	if out, err := exec.Command("modprobe", append([]string{"-a"}, preload...)...).CombinedOutput(); err != nil {
		return port, fmt.Errorf("modprobe %v: %w: %s", preload, err, out)
	}
	return port, nil
}
