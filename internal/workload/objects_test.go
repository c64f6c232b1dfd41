package workload

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"

	"github.com/ipsecgw/provider-ipsec/apis/cluster/gateway/v1alpha1"
	"github.com/ipsecgw/provider-ipsec/internal/contract"
	"github.com/ipsecgw/provider-ipsec/internal/render"
)

func gw(active *bool) *v1alpha1.Gateway {
	return &v1alpha1.Gateway{
		ObjectMeta: metav1.ObjectMeta{Name: "vpn"},
		Spec: v1alpha1.GatewaySpec{ForProvider: v1alpha1.GatewayParameters{
			Namespace: "tenant-a",
			GatewayConfig: v1alpha1.GatewayConfig{Active: active,
				Endpoint: v1alpha1.Endpoint{PrivateAddress: "10.20.0.10", PrefixLength: 24, Gateway: "10.20.0.1",
					MACAddress: "fa:16:3e:00:00:0a", LocalID: "203.0.113.10"},
				Images:           v1alpha1.Images{StrongSwan: "gw:1", Agent: "gw:1"},
				ReverseExposures: []v1alpha1.ReverseExposure{{Name: "db", Protocol: "udp", ListenPort: 5353}},
			}}},
	}
}

var files = &render.Files{SwanctlConf: []byte("connections {\n}\n"), Secrets: []byte("secrets {\n}\n"), NATRules: []byte("table ip ipsecgw {\n}\n"), Hash: "abc", StartHash: "start"}

func TestObjects(t *testing.T) {
	objs, err := typedObjects(gw(nil), files)
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, o := range objs {
		kinds = append(kinds, o.GetObjectKind().GroupVersionKind().Kind+"/"+o.GetName())
		if o.GetNamespace() != "tenant-a" || o.GetLabels()[LabelGateway] != "vpn" || o.GetLabels()[LabelManagedBy] != ManagedBy {
			t.Errorf("%s: namespace %q labels %v, want tenant-a and the gateway's labels", o.GetName(), o.GetNamespace(), o.GetLabels())
		}
	}
	want := []string{"NetworkAttachmentDefinition/vpn", "ConfigMap/vpn-config", "Secret/vpn-secrets", "ConfigMap/vpn-status", "ServiceAccount/vpn",
		"Role/vpn", "RoleBinding/vpn", "NetworkPolicy/vpn", "Lease/vpn", "Deployment/vpn"}
	if diff := cmp.Diff(want, kinds); diff != "" {
		t.Fatalf("objects, in apply order: -want, +got:\n%s", diff)
	}

	cm := objs[1].(*corev1.ConfigMap)
	if diff := cmp.Diff(map[string]string{contract.KeySwanctlConf: "connections {\n}\n", contract.KeyNATRules: "table ip ipsecgw {\n}\n"}, cm.Data); diff != "" {
		t.Errorf("ConfigMap data: -want, +got:\n%s", diff)
	}
	if s := objs[2].(*corev1.Secret); string(s.Data[contract.KeySecrets]) != "secrets {\n}\n" || len(s.Data) != 1 {
		t.Errorf("Secret data = %v, want only %s", s.Data, contract.KeySecrets)
	}

	cfg, _, _ := unstructured.NestedString(objs[0].(*unstructured.Unstructured).Object, "spec", "config")
	var nad any
	if err := json.Unmarshal([]byte(cfg), &nad); err != nil {
		t.Fatalf("NAD config is not JSON: %v", err)
	}
	wantNAD := map[string]any{"cniVersion": "0.3.1", "name": "vpn", "plugins": []any{
		map[string]any{"type": "macvlan", "master": "eth1", "mode": "bridge", "capabilities": map[string]any{"mac": true},
			"ipam": map[string]any{"type": "static", "addresses": []any{map[string]any{"address": "10.20.0.10/24", "gateway": "10.20.0.1"}}}},
		map[string]any{"type": "tuning", "sysctl": map[string]any{"net.ipv4.ip_forward": "1"}},
	}}
	if diff := cmp.Diff(wantNAD, nad); diff != "" {
		t.Errorf("NAD config: -want, +got:\n%s", diff)
	}

	d := objs[9].(*appsv1.Deployment)
	ann := d.Spec.Template.Annotations
	if ann[AnnotationStartHash] != "start" || !strings.Contains(ann[AnnotationMultus], `"mac":"fa:16:3e:00:00:0a"`) {
		t.Errorf("pod annotations = %v, want the start hash and the port's MAC", ann)
	}
	if h, ok := ann[AnnotationHash]; ok {
		t.Errorf("pod annotation %s = %q: the live-reloaded configuration's hash must not be on the pod template", AnnotationHash, h)
	}
	if *d.Spec.Replicas != 1 || d.Spec.Strategy.Type != appsv1.RecreateDeploymentStrategyType {
		t.Errorf("replicas %d strategy %s, want 1 and Recreate", *d.Spec.Replicas, d.Spec.Strategy.Type)
	}
	np := objs[7]
	if b, _ := json.Marshal(np); !strings.Contains(string(b), `"protocol":"UDP","port":5353`) {
		t.Errorf("NetworkPolicy does not admit the reverse exposure's port: %s", b)
	}
}

func TestReplicas(t *testing.T) {
	cases := map[string]struct {
		active *bool
		want   int32
	}{
		"Default":  {nil, 1},
		"Active":   {ptr.To(true), 1},
		"PreStage": {ptr.To(false), 0},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := Replicas(gw(tc.active)); got != tc.want {
				t.Errorf("Replicas() = %d, want %d", got, tc.want)
			}
		})
	}
}

// TestDataPlane proves the data planes' objects differ only where they
// must: with Libipsec the ConfigMap holds the strongswan.conf fragment and
// only the strongswan container gains it and the node's TUN device.
func TestDataPlane(t *testing.T) {
	base, err := typedObjects(gw(nil), files)
	if err != nil {
		t.Fatal(err)
	}
	charDevice := corev1.HostPathCharDev
	fragment := "charon {\n}\n"
	libipsec := *files
	libipsec.StrongSwanConf = []byte(fragment)
	cases := map[string]struct {
		dp      v1alpha1.DataPlane
		files   *render.Files
		config  map[string]string
		mounts  []corev1.VolumeMount
		volumes []corev1.Volume
	}{
		"KernelXFRM": {dp: v1alpha1.DataPlaneKernelXFRM, files: files},
		"Libipsec": {
			dp: v1alpha1.DataPlaneLibipsec, files: &libipsec,
			config: map[string]string{contract.KeyStrongSwanConf: fragment},
			mounts: []corev1.VolumeMount{
				{Name: "strongswan-conf", MountPath: "/etc/ipsecgw/strongswan.d", ReadOnly: true},
				{Name: "tun", MountPath: "/dev/net/tun"},
			},
			volumes: []corev1.Volume{
				{Name: "strongswan-conf", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
					LocalObjectReference: corev1.LocalObjectReference{Name: "vpn-config"},
					Items:                []corev1.KeyToPath{{Key: "strongswan.conf", Path: "dataplane.conf"}},
				}}},
				{Name: "tun", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{
					Path: "/dev/net/tun", Type: &charDevice,
				}}},
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			g := gw(nil)
			g.Spec.ForProvider.DataPlane = tc.dp
			objs, err := typedObjects(g, tc.files)
			if err != nil {
				t.Fatal(err)
			}
			wantCM := base[1].(*corev1.ConfigMap).DeepCopy()
			for k, v := range tc.config {
				wantCM.Data[k] = v
			}
			if diff := cmp.Diff(wantCM, objs[1]); diff != "" {
				t.Errorf("ConfigMap: -want, +got:\n%s", diff)
			}
			want := base[9].(*appsv1.Deployment).DeepCopy()
			pod := &want.Spec.Template.Spec
			pod.Containers[0].VolumeMounts = append(pod.Containers[0].VolumeMounts, tc.mounts...)
			pod.Volumes = append(pod.Volumes, tc.volumes...)
			if diff := cmp.Diff(want, objs[9]); diff != "" {
				t.Errorf("Deployment: -want, +got:\n%s", diff)
			}
			for i, o := range base[:9] {
				if i != 1 {
					if diff := cmp.Diff(o, objs[i]); diff != "" {
						t.Errorf("%s: -KernelXFRM, +%s:\n%s", o.GetName(), name, diff)
					}
				}
			}
		})
	}
}

// TestPodPlacement proves the strongswan container's resources and the
// pod's node selector and tolerations reach the Deployment as the Gateway
// gives them, every field.
func TestPodPlacement(t *testing.T) {
	g := gw(nil)
	p := &g.Spec.ForProvider
	p.Resources = &corev1.ResourceRequirements{
		Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("256Mi")},
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")},
		Claims:   []corev1.ResourceClaim{{Name: "tun", Request: "dev"}},
	}
	p.NodeSelector = map[string]string{"node-role.kubernetes.io/gateway": ""}
	p.Tolerations = []corev1.Toleration{
		{Key: "gateway", Operator: corev1.TolerationOpEqual, Value: "true", Effect: corev1.TaintEffectNoSchedule},
		{Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](30)},
	}
	objs, err := typedObjects(g, files)
	if err != nil {
		t.Fatal(err)
	}
	pod := objs[len(objs)-1].(*appsv1.Deployment).Spec.Template.Spec
	if diff := cmp.Diff(*p.Resources, pod.Containers[0].Resources); diff != "" {
		t.Errorf("strongswan resources: -want, +got:\n%s", diff)
	}
	if diff := cmp.Diff(corev1.ResourceRequirements{}, pod.Containers[1].Resources); diff != "" {
		t.Errorf("agent resources: -want, +got:\n%s", diff)
	}
	if diff := cmp.Diff(p.NodeSelector, pod.NodeSelector); diff != "" {
		t.Errorf("node selector: -want, +got:\n%s", diff)
	}
	if diff := cmp.Diff(p.Tolerations, pod.Tolerations); diff != "" {
		t.Errorf("tolerations: -want, +got:\n%s", diff)
	}
}
