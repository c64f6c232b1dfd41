//go:build integration

package images

import (
	"archive/tar"
	"errors"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"

	"github.com/ipsecgw/provider-ipsec/apis/cluster/gateway/v1alpha1"
	"github.com/ipsecgw/provider-ipsec/internal/contract"
	"github.com/ipsecgw/provider-ipsec/internal/render"
	"github.com/ipsecgw/provider-ipsec/internal/workload"
)

var root, _ = filepath.Abs(filepath.Join("..", ".."))

// The image tarballs hack/images.sh writes, by the variable naming their
// directory.
var images = map[string]string{"GATEWAY_OUT": "gateway-image.tar", "PROVIDER_OUT": "provider-image.tar"}

// built is one run of hack/images.sh.
type built struct {
	// paths and digests of the images, by file name.
	paths, digests map[string]string
	// output is what the script printed.
	output string
}

// build runs hack/images.sh with its outputs in dir, offline: a root
// filesystem that `make images` has not cached skips the test.
func build(t *testing.T, dir string) built {
	t.Helper()
	cmd := exec.Command(filepath.Join(root, "hack", "images.sh"))
	cmd.Env = append(os.Environ(), "IMAGES_OFFLINE=1")
	b := built{paths: map[string]string{}, digests: map[string]string{}}
	for v, f := range images {
		cmd.Env = append(cmd.Env, v+"="+filepath.Join(dir, v))
		b.paths[f] = filepath.Join(dir, v, f)
	}
	t0 := time.Now()
	out, err := cmd.CombinedOutput()
	if ee := (*exec.ExitError)(nil); errors.As(err, &ee) && ee.ExitCode() == 3 {
		t.Skipf("the gateway's root filesystem is not cached: run make images (as root) first\n%s", out)
	}
	if err != nil {
		t.Fatalf("hack/images.sh: %v\n%s", err, out)
	}
	t.Logf("hack/images.sh in %v:\n%s", time.Since(t0).Round(time.Millisecond), out)
	b.output = string(out)
	for f, p := range b.paths {
		d, err := image(t, p).Digest()
		if err != nil {
			t.Fatal(err)
		}
		b.digests[f] = d.String()
	}
	return b
}

func image(t *testing.T, file string) v1.Image {
	t.Helper()
	img, err := tarball.ImageFromPath(file, nil)
	if err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	return img
}

// TestImages builds the images twice into directories of their own and
// checks the digests match, then again into the first: nothing is rebuilt.
func TestImages(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("hack/images.sh builds the gateway's root filesystem as root")
	}
	dir := t.TempDir()
	first := build(t, filepath.Join(dir, "first"))
	second := build(t, filepath.Join(dir, "second"))
	if diff := cmp.Diff(first.digests, second.digests); diff != "" {
		t.Errorf("two builds of one tree give different digests: -first +second:\n%s", diff)
	}
	again := build(t, filepath.Join(dir, "first"))
	for f := range first.digests {
		if !cached(again.output, f) {
			t.Errorf("a build with unchanged inputs rebuilt %s:\n%s", f, again.output)
		}
	}

	for f, p := range first.paths {
		t.Run("normalised/"+f, func(t *testing.T) { normalised(t, image(t, p)) })
	}
	t.Run("gateway", func(t *testing.T) { gateway(t, image(t, first.paths["gateway-image.tar"])) })
}

// cached reports whether the script's output line of image file f says it
// was served from the cache.
func cached(output, f string) bool {
	for _, l := range strings.Split(output, "\n") {
		if strings.HasPrefix(l, f+" ") {
			return strings.HasSuffix(l, "cached")
		}
	}
	return false
}

// normalised checks every layer of img as imagebuild writes it: entries
// sorted by name, dated at the epoch, with numeric owners only, and no
// creation time in the config.
func normalised(t *testing.T, img v1.Image) {
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if !cf.Created.Equal(time.Unix(0, 0)) {
		t.Errorf("config created %v, want the epoch", cf.Created.Time)
	}
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	for i, l := range layers {
		rc, err := l.Uncompressed()
		if err != nil {
			t.Fatal(err)
		}
		tr := tar.NewReader(rc)
		prev, bad := "", 0
		for {
			h, err := tr.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatalf("layer %d: %v", i, err)
			}
			if (h.Name <= prev || !h.ModTime.Equal(time.Unix(0, 0)) || h.Uname != "" || h.Gname != "" ||
				!h.AccessTime.IsZero() || !h.ChangeTime.IsZero()) && bad < 5 {
				t.Errorf("layer %d: %s (after %s): mtime %v atime %v ctime %v owner %q:%q; want sorted, at the epoch, numeric owners only",
					i, h.Name, prev, h.ModTime, h.AccessTime, h.ChangeTime, h.Uname, h.Gname)
				bad++
			}
			prev = h.Name
		}
		rc.Close()
	}
}

// gateway checks the gateway image against the Deployment: each
// container's command is an executable in it, charon's STRONGSWAN_CONF is
// the gateway's strongswan.conf with the default data plane's fragment
// where it includes it, every plugin it loads (and kernel-libipsec, for
// data plane Libipsec) is there, and so are swanctl, nft and ip.
func gateway(t *testing.T, img v1.Image) {
	fs := files(t, img)
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	d := deployment(t)
	containers := map[string][]string{}
	conf := ""
	for _, c := range d.Spec.Template.Spec.Containers {
		containers[*c.Name] = c.Command
		for _, e := range c.Env {
			if *e.Name == "STRONGSWAN_CONF" {
				conf = *e.Value
			}
		}
	}
	if conf == "" {
		t.Fatal("no container of the Deployment sets STRONGSWAN_CONF")
	}
	want, err := os.ReadFile(filepath.Join(root, "cluster", "images", "gateway", "strongswan.conf"))
	if err != nil {
		t.Fatal(err)
	}
	if got := fs.content(t, conf); got != string(want) {
		t.Errorf("%s in the image is not cluster/images/gateway/strongswan.conf:\n%s", conf, got)
	}
	if !cmp.Equal(cf.Config.Env, []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "STRONGSWAN_CONF=" + conf}) {
		t.Errorf("image environment %q, want Debian's PATH and STRONGSWAN_CONF=%s", cf.Config.Env, conf)
	}
	dataPlane, err := os.ReadFile(filepath.Join(root, "cluster", "images", "gateway", "dataplane.conf"))
	if err != nil {
		t.Fatal(err)
	}
	if got := fs.content(t, workload.StrongSwanConfDir+"/dataplane.conf"); got != string(dataPlane) {
		t.Errorf("the image's data plane fragment is not cluster/images/gateway/dataplane.conf:\n%s", got)
	}
	for _, p := range plugins(t, fs.content(t, conf)) {
		fs.regular(t, "/usr/lib/ipsec/plugins/libstrongswan-"+p+".so", 0)
	}
	if diff := cmp.Diff(map[string][]string{
		"strongswan": {"/usr/lib/ipsec/charon"}, "agent": {"/usr/local/bin/gateway-agent"},
	}, containers); diff != "" {
		t.Fatalf("the Deployment's containers and commands changed: -this test, +Deployment:\n%s", diff)
	}
	for _, cmd := range containers {
		fs.regular(t, cmd[0], 0o111)
	}
	// Run as it is (no Deployment), the image starts charon, as the
	// Dockerfile's; the Deployment's commands replace no entrypoint.
	if len(cf.Config.Entrypoint) != 0 || !cmp.Equal(cf.Config.Cmd, containers["strongswan"]) {
		t.Errorf("entrypoint %q cmd %q, want none and %q", cf.Config.Entrypoint, cf.Config.Cmd, containers["strongswan"])
	}
	for _, p := range []string{"/usr/sbin/swanctl", "/usr/sbin/nft", "/bin/ip", "/usr/lib/ipsec/plugins/libstrongswan-kernel-libipsec.so"} {
		fs.regular(t, p, 0)
	}
	if h := fs.resolve(t, contract.RunDir); h.Typeflag != tar.TypeDir {
		t.Errorf("%s is not a directory", contract.RunDir)
	}
}

// deployment returns the Deployment of a gateway with the default data
// plane.
func deployment(t *testing.T) *appsv1ac.DeploymentApplyConfiguration {
	gw := &v1alpha1.Gateway{ObjectMeta: metav1.ObjectMeta{Name: "vpn"},
		Spec: v1alpha1.GatewaySpec{ForProvider: v1alpha1.GatewayParameters{Namespace: "tenant-a"}}}
	objs, err := workload.Build(gw, &render.Files{})
	if err != nil {
		t.Fatal(err)
	}
	return objs.Deployment
}

// plugins returns the plugins of the charon load setting of a
// strongswan.conf, and kernel-libipsec.
func plugins(t *testing.T, conf string) []string {
	for _, l := range strings.Split(conf, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(l), "load = "); ok && strings.Contains(v, "kernel-netlink") {
			return append(strings.Fields(v), "kernel-libipsec")
		}
	}
	t.Fatalf("no charon load setting in:\n%s", conf)
	return nil
}

// fileSystem is an image's flattened file system: headers and regular
// files' contents by path relative to the root.
type fileSystem struct {
	headers map[string]*tar.Header
	data    map[string][]byte
}

// files returns the flattened file system of img, keeping the contents of
// small regular files only.
func files(t *testing.T, img v1.Image) fileSystem {
	rc := mutate.Extract(img)
	defer rc.Close()
	fs := fileSystem{headers: map[string]*tar.Header{}, data: map[string][]byte{}}
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return fs
		}
		if err != nil {
			t.Fatal(err)
		}
		name := strings.TrimSuffix(path.Clean(h.Name), "/")
		fs.headers[name] = h
		if h.Typeflag == tar.TypeReg && h.Size < 1<<16 {
			if fs.data[name], err = io.ReadAll(tr); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// resolve returns the header of the absolute path p after following
// symbolic links (Debian's /bin is one), failing the test when it is not
// there.
func (fs fileSystem) resolve(t *testing.T, p string) *tar.Header {
	t.Helper()
	todo := strings.Split(strings.Trim(p, "/"), "/")
	cur := ""
	for hops := 0; len(todo) > 0; {
		next := path.Join(cur, todo[0])
		todo = todo[1:]
		h, ok := fs.headers[next]
		if !ok {
			t.Fatalf("%s: %s is not in the image", p, next)
		}
		if h.Typeflag != tar.TypeSymlink {
			cur = next
			continue
		}
		if hops++; hops > 40 {
			t.Fatalf("%s: too many symbolic links", p)
		}
		target := h.Linkname
		if !path.IsAbs(target) {
			target = path.Join("/", cur, target)
		}
		todo = append(strings.Split(strings.Trim(path.Clean(target), "/"), "/"), todo...)
		cur = ""
	}
	return fs.headers[cur]
}

// regular checks that p is a regular file with every bit of mode set.
func (fs fileSystem) regular(t *testing.T, p string, mode int64) {
	t.Helper()
	h := fs.resolve(t, p)
	if h.Typeflag != tar.TypeReg || h.Mode&mode != mode {
		t.Errorf("%s: type %c mode %o, want a regular file with mode bits %o", p, h.Typeflag, h.Mode, mode)
	}
}

// content returns the content of the small regular file p.
func (fs fileSystem) content(t *testing.T, p string) string {
	t.Helper()
	h := fs.resolve(t, p)
	return string(fs.data[strings.TrimSuffix(path.Clean(h.Name), "/")])
}
