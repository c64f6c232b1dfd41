//go:build kernel

package kernel

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

var root, _ = filepath.Abs(filepath.Join("..", ".."))

// A group is guest tests that share one boot, a -test.run pattern of
// package guest: each group starts on a fresh kernel.
type group struct{ name, run string }

// groups are the guest's tests, one boot per group.
var groups = []group{
	{"tunnels", "^TestTunnel"},
	{"xfrmlink", "^TestXFRMLink"},
}

// BootTimeout bounds one boot: TCG emulation runs the guest 5-20 times
// slower than the machine.
const BootTimeout = 10 * time.Minute

// TestGuest builds the guest (hack/kernel.sh's kernel, make images'
// gateway image, package guest's test binary as its init), boots it once
// per group and fails with every guest test that failed. Each guest test's
// output is logged as it comes, under its group. $KERNEL_RUN, a -test.run
// pattern of package guest, boots once for the tests it matches instead
// (a targeted run).
func TestGuest(t *testing.T) {
	img := build(t)
	boots := groups
	if run := os.Getenv("KERNEL_RUN"); run != "" {
		boots = []group{{"run", run}}
	}
	for _, g := range boots {
		t.Run(g.name, func(t *testing.T) {
			began := time.Now()
			ctx, cancel := context.WithTimeout(context.Background(), BootTimeout)
			defer cancel()
			console := filepath.Join(t.TempDir(), "console.log")
			var failed []string
			code, err := img.Run(ctx, Boot{
				Args:    []string{"-test.v", "-test.run=" + g.run, "-test.timeout=" + (BootTimeout - time.Minute).String()},
				Console: console,
				Line: func(l string) {
					t.Log(l)
					if m := failLine.FindStringSubmatch(l); m != nil {
						failed = append(failed, m[1])
					}
				},
			})
			t.Logf("group %s: boot to power-off in %v (accelerator %s)", g.name, time.Since(began).Round(time.Millisecond), Accel())
			if err != nil || code != 0 {
				data, _ := os.ReadFile(console)
				t.Logf("guest console:\n%s", tail(string(data), 60))
			}
			if err != nil {
				t.Fatal(err)
			}
			if code != 0 {
				t.Errorf("the guest's tests exited %d; failed: %v", code, failed)
			}
		})
	}
}

// failLine matches go test -v's line of a failed top-level test.
var failLine = regexp.MustCompile(`^--- FAIL: (\S+)`)

// build writes the guest's image for t, or skips t when what it needs
// is missing.
func build(t *testing.T) Image {
	t.Helper()
	if _, err := exec.LookPath(QEMU); err != nil {
		t.Skipf("%s is missing: hack/apt-install.sh --host kernel", QEMU)
	}
	kernel := exec.Command(filepath.Join(root, "hack", "kernel.sh"))
	kernel.Env = append(os.Environ(), "KERNEL_OFFLINE=1")
	out, err := kernel.Output()
	var ee *exec.ExitError
	if errors.As(err, &ee) && ee.ExitCode() == 3 {
		t.Skipf("the guest's kernel is not cached: make test-kernel downloads it (%s)", ee.Stderr)
	}
	if err != nil {
		t.Fatalf("hack/kernel.sh: %v", err)
	}
	kernelDir := strings.TrimSpace(string(out))
	image := filepath.Join(os.Getenv("GATEWAY_OUT"), "gateway-image.tar")
	if os.Getenv("GATEWAY_OUT") == "" {
		image = filepath.Join(root, "_output", "images", "gateway-image.tar")
	}
	if _, err := os.Stat(image); err != nil {
		t.Skipf("the gateway image is missing: make images (%v)", err)
	}
	dir := t.TempDir()
	began := time.Now()
	init := filepath.Join(dir, "init")
	gotest := exec.Command("go", "test", "-c", "-tags", "kernel", "-o", init, "./guest")
	gotest.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := gotest.CombinedOutput(); err != nil {
		t.Fatalf("cannot build the guest's tests: %v\n%s", err, out)
	}
	img, what, err := Build(Inputs{KernelDir: kernelDir, GatewayImage: image, Init: init, Repo: root, Out: filepath.Join(dir, "initramfs.cpio")})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("guest built in %v: %s", time.Since(began).Round(time.Millisecond), what)
	return img
}

// tail returns the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
