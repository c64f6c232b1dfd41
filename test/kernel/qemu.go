//go:build kernel

package kernel

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/ipsecgw/provider-ipsec/test/kernel/guest"
)

// QEMU is the emulator that boots the guest, from Debian's
// qemu-system-x86.
const QEMU = "qemu-system-x86_64"

// Busybox is Debian's busybox-static: the guest's /sbin/modprobe (the
// kernel loads drbg, which ESP's IV generators need, and nft's expressions
// through it; the gateway image has no kmod) and sysctl (the topology's
// forwarding; the image has no procps).
const Busybox = "/bin/busybox"

// An Image is what a guest boots: the kernel and the initramfs.
type Image struct {
	// Kernel is the uncompressed ELF kernel (hack/kernel.sh's vmlinux).
	Kernel string
	// Initramfs is the newc archive Build wrote.
	Initramfs string
}

// Inputs are what Build makes a guest image of.
type Inputs struct {
	// KernelDir is hack/kernel.sh's directory: vmlinux, release, the
	// modules.
	KernelDir string
	// GatewayImage is the gateway image tarball (make images).
	GatewayImage string
	// Init is the static test binary of package guest, the guest's /init.
	Init string
	// Repo is the repository's root: the guest gets its directories
	// guest.RepoPaths below guest.RepoDir, every file as it is in the
	// tree, so that the guest's tests decode the manifests users apply
	// (the examples, and the CRDs whose defaults the API server gives
	// them). Neither a copy in package guest (go:embed reaches no further
	// than its directory) nor a generated file, which could drift from
	// them.
	Repo string
	// Out is the initramfs to write.
	Out string
}

// Build writes the guest's initramfs: the gateway image's root filesystem,
// the kernel's modules of moduleDirs, busybox as modprobe and sysctl, and
// in.Init as /init. It returns the image and a line saying what it holds.
func Build(in Inputs) (Image, string, error) {
	release, err := os.ReadFile(filepath.Join(in.KernelDir, "release"))
	if err != nil {
		return Image{}, "", fmt.Errorf("cannot read the kernel's release (hack/kernel.sh writes it): %w", err)
	}
	f, err := os.Create(in.Out)
	if err != nil {
		return Image{}, "", err
	}
	defer f.Close() //nolint:errcheck // closed below on success
	c := newCPIOWriter(f)
	if err := c.image(in.GatewayImage); err != nil {
		return Image{}, "", err
	}
	rootfs := c.off
	n, size, err := c.modules(in.KernelDir, strings.TrimSpace(string(release)))
	if err != nil {
		return Image{}, "", err
	}
	steps := []error{
		c.file("usr/local/sbin/busybox", Busybox, 0o755),
		c.symlink("usr/local/sbin/sysctl", "busybox"),
		c.symlink("usr/sbin/modprobe", "/usr/local/sbin/busybox"),
		c.repo(in.Repo),
		c.file("init", in.Init, 0o755),
		c.close(),
	}
	if err := errors.Join(steps...); err != nil {
		return Image{}, "", fmt.Errorf("cannot write the initramfs %s: %w", in.Out, err)
	}
	if err := f.Close(); err != nil {
		return Image{}, "", err
	}
	what := fmt.Sprintf("initramfs %d MiB: the gateway image's root filesystem %d MiB, %d modules %d MiB of kernel %s, the init",
		c.off>>20, rootfs>>20, n, size>>20, strings.TrimSpace(string(release)))
	return Image{Kernel: filepath.Join(in.KernelDir, "vmlinux"), Initramfs: in.Out}, what, nil
}

// Memory is the guest's memory in MiB: the initramfs is unpacked into it.
const Memory = 1024

// Accel returns QEMU's accelerator: $KERNEL_ACCEL if set (kvm or tcg),
// else KVM where /dev/kvm opens and the CPU has hardware virtualisation
// (a /dev/kvm without it, as in some sandboxes, boots a guest that stalls
// at its clock), else TCG emulation with a smaller translation cache.
func Accel() string {
	if a := os.Getenv("KERNEL_ACCEL"); a != "" {
		return a
	}
	if f, err := os.OpenFile("/dev/kvm", os.O_RDWR, 0); err == nil {
		_ = f.Close()
		if info, err := os.ReadFile("/proc/cpuinfo"); err == nil && (bytes.Contains(info, []byte(" vmx")) || bytes.Contains(info, []byte(" svm"))) {
			return "kvm"
		}
	}
	return "tcg,tb-size=64"
}

// A Boot is one run of a guest.
type Boot struct {
	// Args are the test binary's arguments (after the kernel's --).
	Args []string
	// Console is the file of the guest's console (ttyS0): the kernel's
	// messages.
	Console string
	// Line gets each line the guest's tests write (ttyS1), as it comes.
	Line func(string)
}

// Run boots img with b's arguments until the guest powers off or ctx ends,
// and returns the test binary's exit code. The guest has one vCPU and no
// network device.
func (img Image) Run(ctx context.Context, b Boot) (int, error) {
	cmd := exec.CommandContext(ctx, QEMU,
		"-accel", Accel(), "-cpu", "max", "-smp", "1", "-m", strconv.Itoa(Memory),
		"-nic", "none", "-display", "none", "-monitor", "none", "-no-reboot",
		"-serial", "file:"+b.Console, "-serial", "stdio",
		"-kernel", img.Kernel, "-initrd", img.Initramfs,
		"-append", "console=ttyS0 loglevel=4 panic=-1 -- "+strings.Join(b.Args, " "))
	cmd.WaitDelay = 5 * time.Second
	out, err := cmd.StdoutPipe()
	if err != nil {
		return 0, err
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		return 0, fmt.Errorf("cannot start %s: %w", QEMU, err)
	}
	code := -1
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		l := strings.TrimRight(sc.Text(), "\r")
		if rest, ok := strings.CutPrefix(l, guest.ExitPrefix); ok {
			if n, err := strconv.Atoi(rest); err == nil {
				code = n
				continue
			}
		}
		b.Line(l)
	}
	werr := cmd.Wait()
	if ctx.Err() != nil {
		return 0, fmt.Errorf("the guest did not power off in time: %w", ctx.Err())
	}
	if werr != nil {
		return 0, fmt.Errorf("%s: %w: %s", QEMU, werr, stderr.Bytes())
	}
	if code < 0 {
		return 0, errors.New("the guest powered off without its tests' exit code (see its console)")
	}
	return code, nil
}
