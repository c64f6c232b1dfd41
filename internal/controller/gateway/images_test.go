package gateway

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/ipsecgw/provider-ipsec/apis/cluster/gateway/v1alpha1"
)

func TestLateInitImages(t *testing.T) {
	const image = "127.0.0.1:5000/ipsecgw/gateway:v0.1.0"
	cases := map[string]struct {
		reason   string
		images   v1alpha1.Images
		want     v1alpha1.Images
		wantLate bool
	}{
		"NoneNamed": {
			reason:   "A Gateway that names no image gets the provider's for both containers, written back as late initialization.",
			want:     v1alpha1.Images{StrongSwan: image, Agent: image},
			wantLate: true,
		},
		"OneNamed": {
			reason:   "An image the Gateway names is kept; only the one left out is filled.",
			images:   v1alpha1.Images{Agent: "agent:2"},
			want:     v1alpha1.Images{StrongSwan: image, Agent: "agent:2"},
			wantLate: true,
		},
		"BothNamed": {
			reason: "A Gateway that names both images is not changed, whatever the provider's flag says (no restart when it changes).",
			images: v1alpha1.Images{StrongSwan: "gw:1", Agent: "gw:1"},
			want:   v1alpha1.Images{StrongSwan: "gw:1", Agent: "gw:1"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := tc.images
			late := lateInitImages(&got, image)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\nlateInitImages(): -want images, +got:\n%s", tc.reason, diff)
			}
			if late != tc.wantLate {
				t.Errorf("%s\nlateInitImages(): late initialized %t, want %t", tc.reason, late, tc.wantLate)
			}
		})
	}
}
