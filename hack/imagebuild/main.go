// Command imagebuild writes an OCI image as a `docker save`-style tarball
// with no Docker and no registry: optionally a root filesystem as the first
// layer, then one layer made of the files named on the command line, an
// entrypoint or a command, a user and an environment. The same inputs give
// the same bytes and digest: every layer's entries are sorted, dated at the
// Unix epoch and carry numeric owners only (the files' layer is owned by
// root), and the image config carries no creation time (the epoch).
//
//	imagebuild -o out.tar -tag repo:tag [-base rootfs.tar] \
//	    [-entrypoint /usr/local/bin/provider] [-cmd /usr/lib/ipsec/charon] \
//	    [-user 65532:65532] [-env NAME=VALUE ...] \
//	    [-file SRC:DST:MODE ...] [-text DST:MODE:CONTENT ...]
//
// MODE is octal (0755). -base is a tar of a root filesystem (such as
// `tar --numeric-owner -C dir -cf rootfs.tar .`), normalised as above:
// access and change times, user and group names and every PAX record but
// extended attributes are dropped, and of each group of hard links the
// entry that sorts first holds the data. At least one of -entrypoint and
// -cmd is required. It prints the image's digest (sha256:...).
//
//	imagebuild digest FILE
//
// prints the digest of the image in an image tarball, such as an .xpkg: the
// digest a registry would serve it under.
//
//	imagebuild push FILE REGISTRY/REPOSITORY:TAG
//
// pushes the image in an image tarball to a registry over HTTPS, with no
// authentication (the local stack's, cluster/registry; a private CA through
// SSL_CERT_FILE), and prints its digest.
package main

import (
	"archive/tar"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// epoch is every entry's modification time and the image's creation time.
var epoch = time.Unix(0, 0).UTC()

// options are the command line's.
type options struct {
	out, tag, base, entrypoint, cmd, user string
	env, files, texts                     []string
}

// member is one entry of a layer: its header and, for a regular file, its
// content.
type member struct {
	h    *tar.Header
	data []byte
}

// list is a repeatable flag.
type list []string

func (l *list) String() string     { return strings.Join(*l, ",") }
func (l *list) Set(v string) error { *l = append(*l, v); return nil }

func main() {
	if (len(os.Args) == 3 && os.Args[1] == "digest") || (len(os.Args) == 4 && os.Args[1] == "push") {
		d, err := digestOrPush(os.Args[2], os.Args[3:])
		if err != nil {
			fmt.Fprintln(os.Stderr, "imagebuild:", err)
			os.Exit(1)
		}
		fmt.Println(d)
		return
	}
	var o options
	var env, files, texts list
	flag.StringVar(&o.out, "o", "", "output tarball")
	flag.StringVar(&o.tag, "tag", "", "image reference recorded in the tarball (repo:tag)")
	flag.StringVar(&o.base, "base", "", "tar of a root filesystem, the first layer")
	flag.StringVar(&o.entrypoint, "entrypoint", "", "entrypoint, an absolute path")
	flag.StringVar(&o.cmd, "cmd", "", "command, an absolute path")
	flag.StringVar(&o.user, "user", "", "user[:group] the entrypoint runs as")
	flag.Var(&env, "env", "NAME=VALUE in the image's environment (repeatable)")
	flag.Var(&files, "file", "SRC:DST:MODE, a file to put at DST (repeatable)")
	flag.Var(&texts, "text", "DST:MODE:CONTENT, a file with CONTENT (repeatable)")
	flag.Parse()
	o.env, o.files, o.texts = env, files, texts
	digest, err := build(o)
	if err != nil {
		fmt.Fprintln(os.Stderr, "imagebuild:", err)
		os.Exit(1)
	}
	fmt.Println(digest)
}

// digestOrPush returns the digest of the image in the tarball file, after
// pushing it to ref when one is given.
func digestOrPush(file string, ref []string) (v1.Hash, error) {
	img, err := tarball.ImageFromPath(file, nil)
	if err != nil {
		return v1.Hash{}, err
	}
	if len(ref) == 1 {
		r, err := name.ParseReference(ref[0], name.StrictValidation)
		if err != nil {
			return v1.Hash{}, err
		}
		if err := remote.Write(r, img); err != nil {
			return v1.Hash{}, fmt.Errorf("cannot push %s: %w", r, err)
		}
	}
	return img.Digest()
}

func build(o options) (string, error) { //nolint:gocyclo // the build steps in order, each with its error
	if o.out == "" || o.tag == "" || (o.entrypoint == "" && o.cmd == "") {
		return "", errors.New("-o, -tag and -entrypoint or -cmd are required")
	}
	ref, err := name.NewTag(o.tag)
	if err != nil {
		return "", err
	}
	entries, err := fileEntries(o.files, o.texts)
	if err != nil {
		return "", err
	}
	var tars [][]byte
	if o.base != "" {
		b, err := rootfs(o.base)
		if err != nil {
			return "", fmt.Errorf("-base %s: %w", o.base, err)
		}
		tars = append(tars, b)
	}
	if len(entries) > 0 {
		b, err := writeTar(fileLayer(entries))
		if err != nil {
			return "", err
		}
		tars = append(tars, b)
	}
	img := empty.Image
	for _, b := range tars {
		l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
			return io.NopCloser(bytes.NewReader(b)), nil
		})
		if err != nil {
			return "", err
		}
		if img, err = mutate.AppendLayers(img, l); err != nil {
			return "", err
		}
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return "", err
	}
	cf = cf.DeepCopy()
	cf.Architecture, cf.OS = "amd64", "linux"
	cf.Config = v1.Config{User: o.user, Env: o.env}
	if o.entrypoint != "" {
		cf.Config.Entrypoint = []string{o.entrypoint}
	}
	if o.cmd != "" {
		cf.Config.Cmd = []string{o.cmd}
	}
	cf.Created = v1.Time{Time: epoch}
	if img, err = mutate.ConfigFile(img, cf); err != nil {
		return "", err
	}
	if err := tarball.WriteToFile(o.out, ref, img); err != nil {
		return "", err
	}
	d, err := img.Digest()
	if err != nil {
		return "", err
	}
	return d.String(), nil
}

// entry is one file of the files' layer.
type entry struct {
	dst  string
	mode int64
	data []byte
}

// fileEntries reads the -file and -text flags' files.
func fileEntries(files, texts []string) ([]entry, error) {
	var entries []entry
	for _, f := range files {
		p := strings.SplitN(f, ":", 3)
		if len(p) != 3 {
			return nil, fmt.Errorf("-file %q: want SRC:DST:MODE", f)
		}
		data, err := os.ReadFile(p[0])
		if err != nil {
			return nil, err
		}
		e, err := newEntry(p[1], p[2], data)
		if err != nil {
			return nil, err
		}
		entries = append(entries, e)
	}
	for _, t := range texts {
		p := strings.SplitN(t, ":", 3)
		if len(p) != 3 {
			return nil, fmt.Errorf("-text %q: want DST:MODE:CONTENT", t)
		}
		e, err := newEntry(p[0], p[1], []byte(p[2]))
		if err != nil {
			return nil, err
		}
		entries = append(entries, e)
	}
	return entries, nil
}

func newEntry(dst, mode string, data []byte) (entry, error) {
	if !path.IsAbs(dst) {
		return entry{}, fmt.Errorf("%s: the destination must be absolute", dst)
	}
	m, err := strconv.ParseInt(mode, 8, 32)
	if err != nil {
		return entry{}, fmt.Errorf("%s: mode %q: %w", dst, mode, err)
	}
	return entry{dst: path.Clean(dst), mode: m, data: data}, nil
}

// fileLayer returns the members of entries and their parent directories
// (mode 0755), owned by root.
func fileLayer(entries []entry) []member {
	dirs := map[string]bool{}
	for _, e := range entries {
		for d := path.Dir(e.dst); d != "/"; d = path.Dir(d) {
			dirs[d] = true
		}
	}
	ms := make([]member, 0, len(dirs)+len(entries))
	for d := range dirs {
		ms = append(ms, member{h: &tar.Header{Typeflag: tar.TypeDir, Name: strings.TrimPrefix(d, "/") + "/", Mode: 0o755}})
	}
	for _, e := range entries {
		ms = append(ms, member{h: &tar.Header{Typeflag: tar.TypeReg, Name: strings.TrimPrefix(e.dst, "/"),
			Mode: e.mode, Size: int64(len(e.data))}, data: e.data})
	}
	return ms
}

// rootfs reads the tar at file and returns its members normalised (see the
// package comment), without the root directory's own entry.
func rootfs(file string) ([]byte, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close() //nolint:errcheck // only read: closing loses nothing
	tr := tar.NewReader(f)
	var ms []member
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		name := relative(h.Name)
		if name == "" {
			continue
		}
		n := &tar.Header{Typeflag: h.Typeflag, Name: name, Linkname: h.Linkname, Mode: h.Mode,
			Uid: h.Uid, Gid: h.Gid, Devmajor: h.Devmajor, Devminor: h.Devminor}
		switch h.Typeflag {
		case tar.TypeDir:
			n.Name += "/"
		case tar.TypeLink:
			n.Linkname = relative(h.Linkname)
		}
		for k, v := range h.PAXRecords {
			if strings.HasPrefix(k, "SCHILY.xattr.") {
				if n.PAXRecords == nil {
					n.PAXRecords = map[string]string{}
				}
				n.PAXRecords[k] = v
			}
		}
		m := member{h: n}
		if h.Typeflag == tar.TypeReg {
			if m.data, err = io.ReadAll(tr); err != nil {
				return nil, err
			}
			n.Size = int64(len(m.data))
		}
		ms = append(ms, m)
	}
	relink(ms)
	return writeTar(ms)
}

// relative returns a tar entry's name as a path relative to the root
// ("./usr/bin/" and "/usr/bin" are "usr/bin"; the root is "").
func relative(name string) string {
	return strings.TrimPrefix(path.Clean("/"+name), "/")
}

// relink makes the member of each group of hard links that sorts first hold
// the data and the others link to it, so that the links still follow their
// target once the members are sorted.
func relink(ms []member) {
	byName := map[string]int{}
	groups := map[string][]int{}
	for i, m := range ms {
		byName[m.h.Name] = i
		if m.h.Typeflag == tar.TypeLink {
			groups[m.h.Linkname] = append(groups[m.h.Linkname], i)
		}
	}
	for target, links := range groups {
		t, ok := byName[target]
		if !ok {
			continue // a link to a file outside the tar: left as it is
		}
		first := t
		for _, l := range links {
			if ms[l].h.Name < ms[first].h.Name {
				first = l
			}
		}
		if first == t {
			continue
		}
		file, link := *ms[t].h, *ms[first].h
		file.Name, link.Name, link.Linkname = ms[first].h.Name, ms[t].h.Name, ms[first].h.Name
		ms[first] = member{h: &file, data: ms[t].data}
		ms[t] = member{h: &link}
		for _, l := range links {
			if l != first {
				ms[l].h.Linkname = file.Name
			}
		}
	}
}

// writeTar returns the tar of ms sorted by name, each dated at the epoch in
// PAX format.
func writeTar(ms []member) ([]byte, error) {
	sort.Slice(ms, func(i, j int) bool { return ms[i].h.Name < ms[j].h.Name })
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, m := range ms {
		m.h.ModTime, m.h.Format = epoch, tar.FormatPAX
		if err := tw.WriteHeader(m.h); err != nil {
			return nil, err
		}
		if _, err := tw.Write(m.data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
