//go:build integration

package integration

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	gwv1alpha1 "github.com/ipsecgw/provider-ipsec/apis/cluster/gateway/v1alpha1"
	"github.com/ipsecgw/provider-ipsec/internal/contract"
	"github.com/ipsecgw/provider-ipsec/internal/render"
	"github.com/ipsecgw/provider-ipsec/internal/workload"
	"github.com/ipsecgw/provider-ipsec/test/topology"
)

// TestDataPlaneCharon starts a real charon, in namespaces of its own, with
// the gateway image's strongswan.conf and each data plane's fragment where
// it includes it (the image's own, or the rendered one the Deployment
// mounts there), and checks the IPsec backends it loaded, in order (VICI
// stats): kernel-libipsec must come before kernel-netlink to be the
// backend. charon says nothing about the include.
func TestDataPlaneCharon(t *testing.T) {
	images := filepath.Join("..", "..", "cluster", "images", "gateway")
	image, err := os.ReadFile(filepath.Join(images, "strongswan.conf"))
	if err != nil {
		t.Fatal(err)
	}
	// The image's own fragment, which the Deployment's replaces.
	defaultFragment, err := os.ReadFile(filepath.Join(images, "dataplane.conf"))
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string]struct {
		dp   gwv1alpha1.DataPlane
		want []string
	}{
		"KernelXFRM": {gwv1alpha1.DataPlaneKernelXFRM, []string{"kernel-netlink"}},
		"Libipsec":   {gwv1alpha1.DataPlaneLibipsec, []string{"kernel-libipsec", "kernel-netlink"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if _, err := os.Stat(workload.TunDevice); err != nil && tc.dp == gwv1alpha1.DataPlaneLibipsec {
				t.Skipf("%s is missing: kernel-libipsec needs a TUN device", workload.TunDevice)
			}
			spec := gatewaySpec("tenant-a")
			spec.DataPlane = tc.dp
			f, err := render.Render(render.Input{Spec: spec, PSKs: map[string][]byte{"branch-a": []byte(psk)}})
			if err != nil {
				t.Fatal(err)
			}
			c := topology.StartCharon(t, func(dir, socket string) string {
				// The Deployment's paths, moved into the charon's directory.
				include := filepath.Join(dir, "strongswan.d")
				if err := os.Mkdir(include, 0o700); err != nil {
					t.Fatal(err)
				}
				fragment := defaultFragment
				if f.StrongSwanConf != nil {
					fragment = f.StrongSwanConf
				}
				if err := os.WriteFile(filepath.Join(include, "dataplane.conf"), fragment, 0o600); err != nil {
					t.Fatal(err)
				}
				conf := string(image)
				for from, to := range map[string]string{"unix://" + contract.ViciSocket: "unix://" + socket, workload.StrongSwanConfDir: include} {
					if !strings.Contains(conf, from) {
						t.Fatalf("the image's strongswan.conf does not name %s", from)
					}
					conf = strings.ReplaceAll(conf, from, to)
				}
				return conf
			})
			m, err := c.Call(context.Background(), "stats", nil)
			if err != nil {
				t.Fatal(err)
			}
			plugins, _ := m.Get("plugins").([]string)
			var backends []string
			for _, p := range plugins {
				if strings.HasPrefix(p, "kernel-") {
					backends = append(backends, p)
				}
			}
			if diff := cmp.Diff(tc.want, backends); diff != "" {
				t.Errorf("kernel plugins, in load order: -want, +got:\n%s\n(all plugins: %v)", diff, plugins)
			}
			if !slices.Contains(plugins, "vici") {
				t.Errorf("plugins %v lack vici", plugins)
			}
			out, err := os.ReadFile(filepath.Join(c.Dir, "charon.out"))
			if err != nil {
				t.Fatal(err)
			}
			for _, l := range strings.Split(string(out), "\n") {
				if strings.Contains(l, "file pattern") || strings.Contains(l, "no files found") {
					t.Errorf("charon warns about the include: %s", l)
				}
			}
		})
	}
}
