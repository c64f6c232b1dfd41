package main

import (
	"archive/tar"
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// got is what a test compares of one tar entry.
type got struct {
	Name, Linkname, Data string
	Type                 byte
	Mode                 int64
	Uid, Gid             int
	Xattrs               map[string]string
}

// TestRootfs normalises root filesystem tars as GNU tar writes them.
func TestRootfs(t *testing.T) {
	now := time.Unix(1700000000, 0)
	dir := func(name string) *tar.Header {
		return &tar.Header{Typeflag: tar.TypeDir, Name: name, Mode: 0o755, ModTime: now, Uname: "root", Gname: "root"}
	}
	file := func(name, data string) (*tar.Header, string) {
		return &tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: 0o644, Size: int64(len(data)), ModTime: now,
			AccessTime: now, ChangeTime: now, Uname: "root", Gname: "adm", Gid: 4, Format: tar.FormatPAX}, data
	}
	link := func(name, target string) *tar.Header {
		return &tar.Header{Typeflag: tar.TypeLink, Name: name, Linkname: target, Mode: 0o755, ModTime: now}
	}
	type in struct {
		h    *tar.Header
		data string
	}
	f := func(h *tar.Header, data string) in { return in{h, data} }
	cases := map[string]struct {
		in   []in
		want []got
	}{
		"SortedWithoutRootNamesOrTimes": {
			in: []in{{h: dir("./")}, {h: dir("./usr/")}, f(file("./usr/b", "b")), f(file("./etc", "e")), {h: dir("./usr/a/")}},
			want: []got{
				{Name: "etc", Data: "e", Type: tar.TypeReg, Mode: 0o644, Gid: 4},
				{Name: "usr/", Type: tar.TypeDir, Mode: 0o755},
				{Name: "usr/a/", Type: tar.TypeDir, Mode: 0o755},
				{Name: "usr/b", Data: "b", Type: tar.TypeReg, Mode: 0o644, Gid: 4},
			},
		},
		"HardLinksFollowTheFirstName": {
			// GNU tar stored perl5.36.0 first; sorted, perl comes first
			// and must hold the data.
			in: []in{f(file("./usr/bin/perl5.36.0", "perl")), {h: link("./usr/bin/perl", "./usr/bin/perl5.36.0")},
				{h: link("./usr/bin/perl5", "./usr/bin/perl5.36.0")}},
			want: []got{
				{Name: "usr/bin/perl", Data: "perl", Type: tar.TypeReg, Mode: 0o644, Gid: 4},
				{Name: "usr/bin/perl5", Linkname: "usr/bin/perl", Type: tar.TypeLink, Mode: 0o755},
				{Name: "usr/bin/perl5.36.0", Linkname: "usr/bin/perl", Type: tar.TypeLink, Mode: 0o755},
			},
		},
		"ExtendedAttributesKept": {
			in: []in{{h: &tar.Header{Typeflag: tar.TypeReg, Name: "./ping", Mode: 0o755, ModTime: now, Format: tar.FormatPAX,
				PAXRecords: map[string]string{"SCHILY.xattr.security.capability": "cap", "comment": "x"}}}},
			want: []got{{Name: "ping", Type: tar.TypeReg, Mode: 0o755, Xattrs: map[string]string{"SCHILY.xattr.security.capability": "cap"}}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var buf bytes.Buffer
			tw := tar.NewWriter(&buf)
			for _, e := range tc.in {
				if err := tw.WriteHeader(e.h); err != nil {
					t.Fatal(err)
				}
				if _, err := tw.Write([]byte(e.data)); err != nil {
					t.Fatal(err)
				}
			}
			if err := tw.Close(); err != nil {
				t.Fatal(err)
			}
			file := filepath.Join(t.TempDir(), "rootfs.tar")
			if err := os.WriteFile(file, buf.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
			b, err := rootfs(file)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, entries(t, b)); diff != "" {
				t.Errorf("normalised tar: -want, +got:\n%s", diff)
			}
		})
	}
}

// entries reads a normalised tar, failing on any time but the epoch or a
// user or group name.
func entries(t *testing.T, b []byte) []got {
	t.Helper()
	var out []got
	tr := tar.NewReader(bytes.NewReader(b))
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		if !h.ModTime.Equal(epoch) || !h.AccessTime.IsZero() || !h.ChangeTime.IsZero() || h.Uname != "" || h.Gname != "" {
			t.Errorf("%s: mtime %v atime %v ctime %v owner %q:%q, want the epoch and numeric owners only",
				h.Name, h.ModTime, h.AccessTime, h.ChangeTime, h.Uname, h.Gname)
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		g := got{Name: h.Name, Linkname: h.Linkname, Data: string(data), Type: h.Typeflag, Mode: h.Mode, Uid: h.Uid, Gid: h.Gid}
		for k, v := range h.PAXRecords {
			if g.Xattrs == nil {
				g.Xattrs = map[string]string{}
			}
			g.Xattrs[k] = v
		}
		out = append(out, g)
	}
}
