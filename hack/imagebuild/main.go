// Command imagebuild writes an OCI image as a `docker save`-style tarball
// with no Docker and no registry: one layer made of the files named on the
// command line, an entrypoint and a user. The same inputs give the same
// bytes and digest: entries are sorted, owned by root and dated at the Unix
// epoch, and the image config carries no creation time.
//
//	imagebuild -o out.tar -tag repo:tag -entrypoint /usr/local/bin/provider \
//	    -user 65532:65532 -file SRC:DST:MODE ... -text DST:MODE:CONTENT ...
//
// MODE is octal (0755). It prints the image's digest (sha256:...).
//
//	imagebuild digest FILE
//
// prints the digest of the image in an image tarball, such as an .xpkg: the
// digest a registry would serve it under.
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
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// entry is one file of the layer.
type entry struct {
	dst  string
	mode int64
	data []byte
}

// list is a repeatable flag.
type list []string

func (l *list) String() string     { return strings.Join(*l, ",") }
func (l *list) Set(v string) error { *l = append(*l, v); return nil }

func main() {
	if len(os.Args) == 3 && os.Args[1] == "digest" {
		img, err := tarball.ImageFromPath(os.Args[2], nil)
		if err == nil {
			var d v1.Hash
			if d, err = img.Digest(); err == nil {
				fmt.Println(d)
				return
			}
		}
		fmt.Fprintln(os.Stderr, "imagebuild:", err)
		os.Exit(1)
	}
	out := flag.String("o", "", "output tarball")
	tag := flag.String("tag", "", "image reference recorded in the tarball (repo:tag)")
	entrypoint := flag.String("entrypoint", "", "entrypoint, an absolute path")
	user := flag.String("user", "", "user[:group] the entrypoint runs as")
	var files, texts list
	flag.Var(&files, "file", "SRC:DST:MODE, a file to put at DST (repeatable)")
	flag.Var(&texts, "text", "DST:MODE:CONTENT, a file with CONTENT (repeatable)")
	flag.Parse()
	digest, err := build(*out, *tag, *entrypoint, *user, files, texts)
	if err != nil {
		fmt.Fprintln(os.Stderr, "imagebuild:", err)
		os.Exit(1)
	}
	fmt.Println(digest)
}

func build(out, tag, entrypoint, user string, files, texts []string) (string, error) {
	if out == "" || tag == "" || entrypoint == "" {
		return "", errors.New("-o, -tag and -entrypoint are required")
	}
	ref, err := name.NewTag(tag)
	if err != nil {
		return "", err
	}
	var entries []entry
	for _, f := range files {
		p := strings.SplitN(f, ":", 3)
		if len(p) != 3 {
			return "", fmt.Errorf("-file %q: want SRC:DST:MODE", f)
		}
		data, err := os.ReadFile(p[0])
		if err != nil {
			return "", err
		}
		e, err := newEntry(p[1], p[2], data)
		if err != nil {
			return "", err
		}
		entries = append(entries, e)
	}
	for _, t := range texts {
		p := strings.SplitN(t, ":", 3)
		if len(p) != 3 {
			return "", fmt.Errorf("-text %q: want DST:MODE:CONTENT", t)
		}
		e, err := newEntry(p[0], p[1], []byte(p[2]))
		if err != nil {
			return "", err
		}
		entries = append(entries, e)
	}
	layerTar, err := layer(entries)
	if err != nil {
		return "", err
	}
	l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerTar)), nil
	})
	if err != nil {
		return "", err
	}
	img, err := mutate.AppendLayers(empty.Image, l)
	if err != nil {
		return "", err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return "", err
	}
	cf = cf.DeepCopy()
	cf.Architecture, cf.OS = "amd64", "linux"
	cf.Config = v1.Config{Entrypoint: []string{entrypoint}, User: user,
		Env: []string{"PATH=/usr/local/bin:/usr/bin:/bin"}}
	cf.Created = v1.Time{Time: time.Unix(0, 0).UTC()}
	if img, err = mutate.ConfigFile(img, cf); err != nil {
		return "", err
	}
	if err := tarball.WriteToFile(out, ref, img); err != nil {
		return "", err
	}
	d, err := img.Digest()
	if err != nil {
		return "", err
	}
	return d.String(), nil
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

// layer returns the tar of entries and their parent directories, sorted,
// owned by root and dated at the epoch.
func layer(entries []entry) ([]byte, error) {
	dirs := map[string]bool{}
	for _, e := range entries {
		for d := path.Dir(e.dst); d != "/"; d = path.Dir(d) {
			dirs[d] = true
		}
	}
	type item struct {
		name string
		e    *entry
	}
	var items []item
	for d := range dirs {
		items = append(items, item{name: strings.TrimPrefix(d, "/") + "/"})
	}
	for i := range entries {
		items = append(items, item{name: strings.TrimPrefix(entries[i].dst, "/"), e: &entries[i]})
	}
	sort.Slice(items, func(i, j int) bool { return items[i].name < items[j].name })
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	epoch := time.Unix(0, 0)
	for _, it := range items {
		h := &tar.Header{Name: it.name, ModTime: epoch, Format: tar.FormatPAX}
		if it.e == nil {
			h.Typeflag, h.Mode = tar.TypeDir, 0o755
		} else {
			h.Typeflag, h.Mode, h.Size = tar.TypeReg, it.e.mode, int64(len(it.e.data))
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if it.e != nil {
			if _, err := tw.Write(it.e.data); err != nil {
				return nil, err
			}
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
