package workload

import (
	"encoding/json"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/ipsecgw/provider-ipsec/apis/cluster/gateway/v1alpha1"
	"github.com/ipsecgw/provider-ipsec/internal/render"
)

// Ports of the agent: Prometheus metrics and its health probes (the
// gateway-agent's defaults).
const (
	AgentMetricsPort int32 = 9100
	AgentHealthPort  int32 = 9101
)

// Replicas returns the replicas the gateway's Deployment runs:
// spec.forProvider.replicas (1 when unset), or 0 while
// spec.forProvider.active is false (pre-stage).
func Replicas(gw *v1alpha1.Gateway) int32 {
	if a := gw.Spec.ForProvider.Active; a != nil && !*a {
		return 0
	}
	return pods(gw)
}

// pods returns spec.forProvider.replicas, 1 when unset.
func pods(gw *v1alpha1.Gateway) int32 {
	if r := gw.Spec.ForProvider.Replicas; r != nil {
		return *r
	}
	return 1
}

// deployment runs the gateway pod: charon in container strongswan and the
// agent in container agent, sharing charon's VICI socket. Recreate, so two
// pods never hold the port's address at once; the config hash annotation
// records which configuration the pod template was made for, the network
// hash which network attachment (networkHash). The init
// container sets up the pod's routing (networkInit); the data plane adds
// to the strongswan container only (dataPlane).
func deployment(gw *v1alpha1.Gateway, f *render.Files, n Names, meta metav1.ObjectMeta, networkHash string) *appsv1.Deployment {
	p := gw.Spec.ForProvider
	networks, _ := json.Marshal([]map[string]string{{
		"name": n.Gateway, "namespace": p.Namespace, "interface": SecondaryInterface, "mac": p.Endpoint.MACAddress,
	}})
	// NET_ADMIN and NET_RAW are all either container needs: the agent's
	// validation charon runs beside the live one in the pod's namespaces,
	// not in namespaces of its own (no CAP_SYS_ADMIN; see
	// apply.CharonValidator).
	netAdmin := &corev1.SecurityContext{Capabilities: &corev1.Capabilities{Add: []corev1.Capability{"NET_ADMIN", "NET_RAW"}}}
	run := corev1.VolumeMount{Name: "run", MountPath: RunDir}
	var resources corev1.ResourceRequirements
	if p.Resources != nil {
		resources = *p.Resources
	}
	replicas := Replicas(gw)
	secretMode := int32(0o400)
	charonMounts, dataPlaneVolumes := dataPlane(gw, f, n)
	return &appsv1.Deployment{
		TypeMeta:   typeMeta("apps/v1", "Deployment"),
		ObjectMeta: meta,
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: Labels(gw.Name)},
			Strategy: appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{
					Labels:      Labels(gw.Name),
					Annotations: map[string]string{AnnotationMultus: string(networks), AnnotationHash: f.Hash, AnnotationNetworkHash: networkHash},
				},
				Spec: corev1.PodSpec{
					ServiceAccountName: n.Gateway,
					NodeSelector:       p.NodeSelector,
					Tolerations:        p.Tolerations,
					InitContainers:     []corev1.Container{networkInit(gw)},
					Containers: []corev1.Container{
						{
							Name:            "strongswan",
							Image:           p.Images.StrongSwan,
							Command:         []string{"/usr/lib/ipsec/charon"},
							Env:             []corev1.EnvVar{{Name: "STRONGSWAN_CONF", Value: "/etc/strongswan.conf"}},
							SecurityContext: netAdmin,
							Resources:       resources,
							VolumeMounts:    append([]corev1.VolumeMount{run}, charonMounts...),
						},
						{
							Name:    "agent",
							Image:   p.Images.Agent,
							Command: []string{"/usr/local/bin/gateway-agent"},
							Args: []string{
								"--config-dir=" + ConfigDir, "--secrets-dir=" + SecretsDir,
								"--vici-socket=" + RunDir + "/charon.vici", "--status-configmap=" + n.Status,
							},
							Env: []corev1.EnvVar{{Name: "POD_NAMESPACE", ValueFrom: &corev1.EnvVarSource{
								FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.namespace"},
							}}},
							SecurityContext: netAdmin,
							Ports: []corev1.ContainerPort{
								{Name: "metrics", ContainerPort: AgentMetricsPort},
								{Name: "health", ContainerPort: AgentHealthPort},
							},
							// Ready: configuration loaded into a charon that answers.
							ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{
								Path: "/readyz", Port: intstr.FromString("health"),
							}}, PeriodSeconds: 5},
							LivenessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{
								Path: "/healthz", Port: intstr.FromString("health"),
							}}, PeriodSeconds: 10, FailureThreshold: 3},
							VolumeMounts: []corev1.VolumeMount{
								run,
								{Name: "config", MountPath: ConfigDir, ReadOnly: true},
								{Name: "secrets", MountPath: SecretsDir, ReadOnly: true},
							},
						},
					},
					Volumes: append([]corev1.Volume{
						{Name: "run", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
						{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
							LocalObjectReference: corev1.LocalObjectReference{Name: n.Config},
						}}},
						{Name: "secrets", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
							SecretName: n.Secrets, DefaultMode: &secretMode,
						}}},
					}, dataPlaneVolumes...),
				},
			},
		},
	}
}

// dataPlane returns the strongswan container's mounts and the pod's volumes
// that the gateway's data plane adds, none with KernelXFRM: the rendered
// strongswan.conf fragment, when there is one, in StrongSwanConfDir, and
// with Libipsec the node's TUN device (kernel-libipsec creates its
// interface with it, which needs NET_ADMIN, the container's already).
func dataPlane(gw *v1alpha1.Gateway, f *render.Files, n Names) ([]corev1.VolumeMount, []corev1.Volume) {
	var mounts []corev1.VolumeMount
	var volumes []corev1.Volume
	if f.StrongSwanConf != nil {
		mounts = append(mounts, corev1.VolumeMount{Name: "strongswan-conf", MountPath: StrongSwanConfDir, ReadOnly: true})
		volumes = append(volumes, corev1.Volume{Name: "strongswan-conf", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: n.Config},
			Items:                []corev1.KeyToPath{{Key: KeyStrongSwanConf, Path: "dataplane.conf"}},
		}}})
	}
	if gw.Spec.ForProvider.DataPlane == v1alpha1.DataPlaneLibipsec {
		charDevice := corev1.HostPathCharDev
		mounts = append(mounts, corev1.VolumeMount{Name: "tun", MountPath: TunDevice})
		volumes = append(volumes, corev1.Volume{Name: "tun", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{
			Path: TunDevice, Type: &charDevice,
		}}})
	}
	return mounts, volumes
}
