//go:build kernel

package kernel

import (
	"archive/tar"
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/ipsecgw/provider-ipsec/test/kernel/guest"
)

// Mode bits of a newc entry's type (the kernel's initramfs unpacker reads
// them as stat's st_mode).
const (
	modeDir     = 0o040000
	modeRegular = 0o100000
	modeSymlink = 0o120000
)

// A cpioWriter writes a newc archive, the format the kernel unpacks as
// its initramfs (Documentation/driver-api/early-userspace/buffer-format.rst):
// per entry a header of 13 hexadecimal fields, the name and the data, each
// padded to 4 bytes, and a TRAILER!!! entry at the end. Every entry gets
// its own inode number and one link: a hard link is written as a symbolic
// link to its target.
type cpioWriter struct {
	w    *bufio.Writer
	off  int64
	ino  uint32
	dirs map[string]bool
}

func newCPIOWriter(w io.Writer) *cpioWriter {
	return &cpioWriter{w: bufio.NewWriterSize(w, 1<<20), dirs: map[string]bool{"": true}}
}

// entry writes one entry named name (no leading slash) with the mode
// (type and permission bits), owner and data; for a symbolic link the data
// is its target. A regular file's data comes from r, size bytes.
func (c *cpioWriter) entry(name string, mode uint32, uid, gid int, size int64, r io.Reader) error {
	c.ino++
	hdr := fmt.Sprintf("070701%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X%08X",
		c.ino, mode, uid, gid, 1, 0, size, 0, 0, 0, 0, len(name)+1, 0)
	if err := c.write([]byte(hdr + name + "\x00")); err != nil {
		return err
	}
	if err := c.pad(); err != nil {
		return err
	}
	if size > 0 {
		n, err := io.CopyN(c.w, r, size)
		c.off += n
		if err != nil {
			return fmt.Errorf("cannot copy %s into the initramfs: %w", name, err)
		}
	}
	if mode&0o170000 == modeDir {
		c.dirs[name] = true
	}
	return c.pad()
}

func (c *cpioWriter) write(b []byte) error {
	n, err := c.w.Write(b)
	c.off += int64(n)
	return err
}

func (c *cpioWriter) pad() error {
	if r := c.off % 4; r != 0 {
		return c.write(make([]byte, 4-r))
	}
	return nil
}

// parents writes a directory entry (0755, root's) for every parent of
// name not written yet, outermost first: the unpacker does not make them.
func (c *cpioWriter) parents(name string) error {
	dir := path.Dir(name)
	if dir == "." || c.dirs[dir] {
		return nil
	}
	if err := c.parents(dir); err != nil {
		return err
	}
	return c.entry(dir, modeDir|0o755, 0, 0, 0, nil)
}

// file writes the file src of this machine as name (root's, with mode
// perm).
func (c *cpioWriter) file(name, src string, perm uint32) error {
	f, err := os.Open(src)
	if err != nil {
		return err
	}
	defer f.Close() //nolint:errcheck // only read
	st, err := f.Stat()
	if err != nil {
		return err
	}
	if err := c.parents(name); err != nil {
		return err
	}
	return c.entry(name, modeRegular|perm, 0, 0, st.Size(), f)
}

// repo writes every regular file under guest.RepoPaths of the repository
// at root below guest.RepoDir, at its path in the repository (root's,
// 0644).
func (c *cpioWriter) repo(root string) error {
	for _, dir := range guest.RepoPaths {
		err := filepath.WalkDir(filepath.Join(root, dir), func(p string, d fs.DirEntry, err error) error {
			if err != nil || !d.Type().IsRegular() {
				return err
			}
			rel, err := filepath.Rel(root, p)
			if err != nil {
				return err
			}
			return c.file(path.Join(strings.TrimPrefix(guest.RepoDir, "/"), filepath.ToSlash(rel)), p, 0o644)
		})
		if err != nil {
			return fmt.Errorf("cannot write the repository's %s into the initramfs: %w", dir, err)
		}
	}
	return nil
}

// symlink writes a symbolic link name to target.
func (c *cpioWriter) symlink(name, target string) error {
	if err := c.parents(name); err != nil {
		return err
	}
	return c.entry(name, modeSymlink|0o777, 0, 0, int64(len(target)), strings.NewReader(target))
}

// close writes the trailer and flushes.
func (c *cpioWriter) close() error {
	if err := c.entry("TRAILER!!!", 0, 0, 0, 0, nil); err != nil {
		return err
	}
	return c.w.Flush()
}

// image writes the root filesystem of the image in the image tarball at
// path (every layer applied, whiteouts and all, as a container runtime
// does).
func (c *cpioWriter) image(file string) error {
	img, err := tarball.ImageFromPath(file, nil)
	if err != nil {
		return fmt.Errorf("cannot read the gateway image %s (make images writes it): %w", file, err)
	}
	rc := mutate.Extract(img)
	defer rc.Close() //nolint:errcheck // only read
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("cannot read the gateway image's root filesystem: %w", err)
		}
		name := strings.Trim(path.Clean(h.Name), "/")
		if name == "." {
			continue
		}
		perm := uint32(h.Mode) & 0o7777 //nolint:gosec // G115: permission bits only
		switch h.Typeflag {
		case tar.TypeDir:
			err = c.entry(name, modeDir|perm, h.Uid, h.Gid, 0, nil)
		case tar.TypeReg:
			err = c.entry(name, modeRegular|perm, h.Uid, h.Gid, h.Size, tr)
		case tar.TypeSymlink:
			err = c.entry(name, modeSymlink|0o777, h.Uid, h.Gid, int64(len(h.Linkname)), strings.NewReader(h.Linkname))
		case tar.TypeLink:
			target := "/" + strings.Trim(path.Clean(h.Linkname), "/")
			err = c.entry(name, modeSymlink|0o777, h.Uid, h.Gid, int64(len(target)), strings.NewReader(target))
		default:
			// Devices and FIFOs: the image has none (its /dev is empty; the
			// guest mounts devtmpfs).
			continue
		}
		if err != nil {
			return err
		}
	}
}

// moduleDirs are the parts of the kernel's module tree the guest gets
// whole (with what they depend on): the network stack with netfilter,
// XFRM and bridges, and every cipher, so that the kernel finds what it
// loads on demand (nft's expressions, ESP's algorithms, drbg for ESP's IV
// generators).
var moduleDirs = []string{
	"kernel/net/ipv4/", "kernel/net/ipv6/", "kernel/net/xfrm/", "kernel/net/key/", "kernel/net/netfilter/",
	"kernel/net/bridge/", "kernel/net/802/", "kernel/net/llc/", "kernel/net/core/", "kernel/net/sched/",
	"kernel/crypto/", "kernel/arch/x86/crypto/", "kernel/lib/",
}

// moduleFiles are single modules the guest gets besides: the links the
// topology makes.
var moduleFiles = []string{
	"kernel/drivers/net/veth.ko", "kernel/drivers/net/dummy.ko", "kernel/drivers/net/tun.ko",
}

// modules writes the guest's modules of the kernel of release in dir
// (hack/kernel.sh's, after depmod) under lib/modules/<release>: those of
// moduleDirs and moduleFiles and what they depend on, as modules.dep
// says, and depmod's indexes (which name every module of the kernel; the
// others are not there to load). It returns their number and size in bytes.
func (c *cpioWriter) modules(dir, release string) (int, int64, error) {
	base := filepath.Join(dir, "lib", "modules", release)
	dep, err := os.ReadFile(filepath.Join(base, "modules.dep"))
	if err != nil {
		return 0, 0, fmt.Errorf("cannot read the kernel's modules.dep (hack/kernel.sh runs depmod): %w", err)
	}
	deps := map[string][]string{}
	for line := range strings.Lines(string(dep)) {
		mod, rest, ok := strings.Cut(strings.TrimSpace(line), ":")
		if ok {
			deps[mod] = strings.Fields(rest)
		}
	}
	want := map[string]bool{}
	var add func(string)
	add = func(m string) {
		if want[m] {
			return
		}
		want[m] = true
		for _, d := range deps[m] {
			add(d)
		}
	}
	for m := range deps {
		if slices.ContainsFunc(moduleDirs, func(p string) bool { return strings.HasPrefix(m, p) }) || slices.Contains(moduleFiles, m) {
			add(m)
		}
	}
	names := make([]string, 0, len(want))
	for m := range want {
		names = append(names, m)
	}
	slices.Sort(names)
	indexes, err := filepath.Glob(filepath.Join(base, "modules.*"))
	if err != nil {
		return 0, 0, err
	}
	var size int64
	for _, f := range append(names, relative(base, indexes)...) {
		st, err := os.Stat(filepath.Join(base, f))
		if err != nil {
			return 0, 0, err
		}
		size += st.Size()
		if err := c.file(path.Join("usr/lib/modules", release, f), filepath.Join(base, f), 0o644); err != nil {
			return 0, 0, err
		}
	}
	return len(names), size, nil
}

// relative returns the paths, each relative to base.
func relative(base string, paths []string) []string {
	out := make([]string, 0, len(paths))
	for _, p := range paths {
		r, _ := filepath.Rel(base, p)
		out = append(out, r)
	}
	return out
}
