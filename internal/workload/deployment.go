package workload

import (
	"encoding/json"
	"slices"
	"strings"

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
// pods never hold the port's address at once; the start hash annotation
// records which start-time configuration (the strongswan.conf fragment) the
// pod template was made for, the network hash which network attachment
// (networkHash): a change of either replaces the pod, while the rest of
// the configuration reaches the running pod through the ConfigMap and
// Secret, which its agent watches and loads live. The init
// container sets up the pod's routing (networkInit); the data plane adds
// to the strongswan container only (dataPlane).
func deployment(gw *v1alpha1.Gateway, f *render.Files, n Names, meta metav1.ObjectMeta, networkHash string) *appsv1.Deployment {
	p := gw.Spec.ForProvider
	network := map[string]string{
		"name": n.Gateway, "namespace": p.Namespace, "interface": SecondaryInterface, "mac": p.Endpoint.MACAddress,
	}
	if pods(gw) > 1 {
		// Active/standby: the kernel's random MAC until the active agent
		// sets the port's (agentAddressUp). The CNI has the link up for a
		// moment while it creates it, before the init container sets it
		// down: a new standby's first frames (IPv6's multicast listener
		// report, sent before the tuning plugin turns IPv6 off) would
		// carry the port's MAC, and the tenant network's switches would
		// send the active pod's traffic to the new standby's node until
		// the active pod sends again (measured: 100-155 ms of outage each
		// time a standby started).
		delete(network, "mac")
	}
	networks, _ := json.Marshal([]map[string]string{network})
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
	d := &appsv1.Deployment{
		TypeMeta:   typeMeta("apps/v1", "Deployment"),
		ObjectMeta: meta,
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: Labels(gw.Name)},
			Strategy: appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{
					Labels:      Labels(gw.Name),
					Annotations: map[string]string{AnnotationMultus: string(networks), AnnotationStartHash: f.StartHash, AnnotationNetworkHash: networkHash},
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
								flagConfigMap + n.Config, flagSecret + n.Secrets,
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
	if pods(gw) > 1 {
		activeStandby(gw, n, &d.Spec)
	}
	return d
}

// Flags of the agent that providers before AnnotationStartHash did not
// give it: with them it watches its ConfigMap and Secret through the API
// server (see LegacyTemplate).
const (
	flagConfigMap = "--config-configmap="
	flagSecret    = "--secret="
)

// LegacyTemplate turns the pod template of d, a gateway Deployment as
// Objects renders it, into the one providers before AnnotationStartHash
// rendered for the same Gateway, with hash, the live template's
// AnnotationHash, in place of the start hash, and the agent without the
// flags that make it watch its configuration through the API server (it
// then reads the mounted files, as the older agent image did). The Gateway
// controller applies it to a Deployment the older provider made whose pod
// need not be replaced, so that a provider upgrade changes nothing in its
// pod template (testdata/legacy-*.json are the older provider's goldens).
func LegacyTemplate(d *appsv1.Deployment, hash string) {
	a := d.Spec.Template.Annotations
	delete(a, AnnotationStartHash)
	a[AnnotationHash] = hash
	for i := range d.Spec.Template.Spec.Containers {
		c := &d.Spec.Template.Spec.Containers[i]
		c.Args = slices.DeleteFunc(c.Args, func(arg string) bool {
			return strings.HasPrefix(arg, flagConfigMap) || strings.HasPrefix(arg, flagSecret)
		})
	}
}

// Agent flags and the downward API's environment of active/standby pods
// (replicas 2), and the pod-deletion-cost annotation the provider sets on
// the active pod.
const (
	EnvPodName  = "POD_NAME"
	EnvNodeName = "NODE_NAME"
	// AnnotationDeletionCost ranks the pods of a ReplicaSet for deletion
	// when it scales down: the lowest cost goes first.
	AnnotationDeletionCost = "controller.kubernetes.io/pod-deletion-cost"
	// ActiveDeletionCost is the active pod's deletion cost; the standby's
	// is unset (0), so a rolling update replaces the standby first.
	ActiveDeletionCost = "100"
)

// activeStandby turns the single gateway pod of spec into the active and
// the standby of replicas 2:
//   - required pod anti-affinity by node (kubernetes.io/hostname): a lost
//     node takes one of them at most;
//   - a rolling update with maxSurge 0 and maxUnavailable 1: a surge pod
//     cannot schedule while both nodes hold a gateway pod, so the
//     Deployment first removes an old pod, the standby (the provider gives
//     the active pod a higher pod-deletion-cost), waits for its
//     replacement to be ready, then removes the active one, which gives up
//     the address and releases the Lease on SIGTERM, so that the new
//     standby takes over at once;
//   - no address from the CNI (the NetworkAttachmentDefinition has no
//     IPAM, networkAttachment) and net1 down after the init container:
//     the agent that holds the Lease brings net1 up with the address and
//     routes (agentAddressUp) and announces it with gratuitous ARP, and
//     takes them down again (agentAddressDown) before it can lose the
//     Lease, so two pods never answer for the address.
func activeStandby(gw *v1alpha1.Gateway, n Names, spec *appsv1.DeploymentSpec) {
	zero, one := intstr.FromInt32(0), intstr.FromInt32(1)
	spec.Strategy = appsv1.DeploymentStrategy{
		Type:          appsv1.RollingUpdateDeploymentStrategyType,
		RollingUpdate: &appsv1.RollingUpdateDeployment{MaxSurge: &zero, MaxUnavailable: &one},
	}
	pod := &spec.Template.Spec
	pod.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
			LabelSelector: &metav1.LabelSelector{MatchLabels: Labels(gw.Name)},
			TopologyKey:   corev1.LabelHostname,
		}},
	}}
	pod.InitContainers[0].Command = []string{"/bin/sh", "-euc", "ip link set " + SecondaryInterface + " down\n"}
	agent := &pod.Containers[1]
	agent.Args = append(agent.Args,
		"--lease="+n.Gateway, "--interface="+SecondaryInterface, "--address="+string(gw.Spec.ForProvider.Endpoint.PrivateAddress),
		"--address-up="+agentAddressUp(gw), "--address-down="+agentAddressDown())
	agent.Env = append(agent.Env,
		corev1.EnvVar{Name: EnvPodName, ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
		corev1.EnvVar{Name: EnvNodeName, ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "spec.nodeName"}}})
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
