// Command xpkgcache puts a Crossplane package into Crossplane core's package
// cache, so that a package referenced by digest with packagePullPolicy Never
// installs with no registry at all. It prints the digest reference to use.
//
//	xpkgcache <cache-dir> <source> <package.yaml>...
//
// source is the package's repository without tag or digest. The digest is
// the SHA-256 of the concatenated YAML stream written to the cache, so the
// same files always give the same reference. The cache entry is named as
// crossplane-runtime's CachedClient looks it up (xpkg.FriendlyID of source
// and digest) and written with its FsPackageCache.
package main

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"io"
	"os"

	"github.com/crossplane/crossplane-runtime/v2/pkg/xpkg"
	"github.com/google/go-containerregistry/pkg/name"
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
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(&stream, "---\n%s\n", bytes.TrimPrefix(b, []byte("---\n")))
	}
	ref, err := name.NewDigest(fmt.Sprintf("%s@sha256:%x", source, sha256.Sum256(stream.Bytes())))
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
