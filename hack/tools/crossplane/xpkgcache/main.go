// Command xpkgcache puts a Crossplane package into Crossplane core's package
// cache, so that a package referenced by digest with packagePullPolicy Never
// installs with no registry at all. It prints the digest reference to use.
//
//	xpkgcache <cache-dir> <source> <package.yaml>...
//	xpkgcache <cache-dir> <source> <package.xpkg>
//
// source is the package's repository without tag or digest. Given YAML
// files, the digest is the SHA-256 of their concatenated stream. Given an
// .xpkg (an image tarball, as `crossplane xpkg build` writes it), the digest
// is the image's manifest digest, the one a registry serves it under, and
// the cached stream is the image's package.yaml. Either way the same input
// gives the same reference. The cache entry is named as crossplane-runtime's
// CachedClient looks it up (xpkg.FriendlyID of source and digest) and
// written with its FsPackageCache.
package main

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/crossplane/crossplane-runtime/v2/pkg/xpkg"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/spf13/afero"
)

func main() {
	if len(os.Args) < 4 {
		fmt.Fprintln(os.Stderr, "usage: xpkgcache <cache-dir> <source> <package.yaml>...")
		os.Exit(2)
	}
	ref, err := store(os.Args[1], os.Args[2], os.Args[3:])
	if err != nil {
		fmt.Fprintln(os.Stderr, "xpkgcache:", err)
		os.Exit(1)
	}
	fmt.Println(ref)
}

func store(dir, source string, files []string) (string, error) {
	var stream bytes.Buffer
	digest := ""
	if len(files) == 1 && strings.HasSuffix(files[0], ".xpkg") {
		d, err := fromXpkg(files[0], &stream)
		if err != nil {
			return "", fmt.Errorf("%s: %w", files[0], err)
		}
		digest = d
	} else {
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				return "", err
			}
			fmt.Fprintf(&stream, "---\n%s\n", bytes.TrimPrefix(b, []byte("---\n")))
		}
		digest = fmt.Sprintf("sha256:%x", sha256.Sum256(stream.Bytes()))
	}
	ref, err := name.NewDigest(source + "@" + digest)
	if err != nil {
		return "", fmt.Errorf("cannot make a digest reference of %q: %w", source, err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	id := xpkg.FriendlyID(xpkg.ParsePackageSourceFromReference(ref), ref.DigestStr())
	c := xpkg.NewFsPackageCache(dir, afero.NewOsFs())
	if err := c.Store(id, io.NopCloser(&stream)); err != nil {
		return "", fmt.Errorf("cannot store %s in %s: %w", ref, dir, err)
	}
	return ref.String(), nil
}

// fromXpkg writes the package.yaml of the xpkg image tarball at path to w
// and returns the image's digest.
func fromXpkg(path string, w io.Writer) (string, error) {
	img, err := tarball.ImageFromPath(path, nil)
	if err != nil {
		return "", err
	}
	d, err := img.Digest()
	if err != nil {
		return "", err
	}
	rc := mutate.Extract(img)
	defer rc.Close()
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return "", errors.New("the image has no package.yaml")
		}
		if err != nil {
			return "", err
		}
		if strings.TrimPrefix(h.Name, "/") == xpkg.StreamFile {
			if _, err := io.Copy(w, tr); err != nil {
				return "", err
			}
			return d.String(), nil
		}
	}
}
