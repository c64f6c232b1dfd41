package workload

import (
	"encoding/json"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"

	"github.com/ipsecgw/provider-ipsec/apis/cluster/gateway/v1alpha1"
	"github.com/ipsecgw/provider-ipsec/internal/contract"
	"github.com/ipsecgw/provider-ipsec/internal/render"
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
func deployment(gw *v1alpha1.Gateway, f *render.Files, n Names, networkHash string) *appsv1ac.DeploymentApplyConfiguration {
	p := gw.Spec.ForProvider
	network := map[string]string{
		"name": n.Gateway, "namespace": p.Namespace, "interface": contract.SecondaryInterface, "mac": p.Endpoint.MACAddress,
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
	run := func() *corev1ac.VolumeMountApplyConfiguration {
		return corev1ac.VolumeMount().WithName("run").WithMountPath(contract.RunDir)
	}
	charonMounts, dataPlaneVolumes := dataPlane(gw, f, n)
	strongswan := corev1ac.Container().WithName("strongswan").WithImage(p.Images.StrongSwan).
		WithCommand("/usr/lib/ipsec/charon").
		WithEnv(corev1ac.EnvVar().WithName("STRONGSWAN_CONF").WithValue("/etc/strongswan.conf")).
		WithSecurityContext(netAdmin()).
		WithVolumeMounts(run()).WithVolumeMounts(charonMounts...)
	if p.Resources != nil {
		strongswan.WithResources(resources(p.Resources))
	}
	agent := corev1ac.Container().WithName(ContainerAgent).WithImage(p.Images.Agent).
		WithCommand("/usr/local/bin/gateway-agent").
		WithArgs(contract.Arg(contract.FlagConfigDir, contract.ConfigDir), contract.Arg(contract.FlagSecretsDir, contract.SecretsDir),
			contract.Arg(contract.FlagViciSocket, contract.ViciSocket), contract.Arg(contract.FlagStatusConfigMap, n.Status),
			contract.Arg(contract.FlagConfigConfigMap, n.Config), contract.Arg(contract.FlagSecret, n.Secrets)).
		WithEnv(fieldEnv(contract.EnvPodNamespace, "metadata.namespace")).
		WithSecurityContext(netAdmin()).
		// Every port names its protocol: the ports are a list keyed by
		// port and protocol, and a key the API server defaulted would read
		// back as drift.
		WithPorts(
			corev1ac.ContainerPort().WithName("metrics").WithContainerPort(contract.MetricsPort).WithProtocol(corev1.ProtocolTCP),
			corev1ac.ContainerPort().WithName("health").WithContainerPort(contract.HealthPort).WithProtocol(corev1.ProtocolTCP),
		).
		// Ready: configuration loaded into a charon that answers.
		WithReadinessProbe(corev1ac.Probe().WithHTTPGet(corev1ac.HTTPGetAction().WithPath(contract.ReadyzPath).WithPort(intstr.FromString("health"))).
			WithPeriodSeconds(5)).
		WithLivenessProbe(corev1ac.Probe().WithHTTPGet(corev1ac.HTTPGetAction().WithPath(contract.HealthzPath).WithPort(intstr.FromString("health"))).
			WithPeriodSeconds(10).WithFailureThreshold(3)).
		WithVolumeMounts(run(),
			corev1ac.VolumeMount().WithName("config").WithMountPath(contract.ConfigDir).WithReadOnly(true),
			corev1ac.VolumeMount().WithName("secrets").WithMountPath(contract.SecretsDir).WithReadOnly(true))
	pod := corev1ac.PodSpec().
		WithServiceAccountName(n.Gateway).
		WithNodeSelector(p.NodeSelector).
		WithTolerations(tolerations(p.Tolerations)...).
		WithInitContainers(networkInit(gw)).
		WithContainers(strongswan, agent).
		WithVolumes(
			corev1ac.Volume().WithName("run").WithEmptyDir(corev1ac.EmptyDirVolumeSource()),
			corev1ac.Volume().WithName("config").WithConfigMap(corev1ac.ConfigMapVolumeSource().WithName(n.Config)),
			corev1ac.Volume().WithName("secrets").WithSecret(corev1ac.SecretVolumeSource().WithSecretName(n.Secrets).WithDefaultMode(0o400)),
		).
		WithVolumes(dataPlaneVolumes...)
	spec := appsv1ac.DeploymentSpec().
		WithReplicas(Replicas(gw)).
		WithSelector(metav1ac.LabelSelector().WithMatchLabels(Labels(gw.Name))).
		WithStrategy(appsv1ac.DeploymentStrategy().WithType(appsv1.RecreateDeploymentStrategyType)).
		WithTemplate(corev1ac.PodTemplateSpec().
			WithLabels(Labels(gw.Name)).
			WithAnnotations(map[string]string{AnnotationMultus: string(networks), AnnotationStartHash: f.StartHash, AnnotationNetworkHash: networkHash}).
			WithSpec(pod))
	if pods(gw) > 1 {
		activeStandby(gw, n, spec)
	}
	return appsv1ac.Deployment(n.Gateway, p.Namespace).WithLabels(Labels(gw.Name)).WithSpec(spec)
}

// netAdmin is the security context of either container: NET_ADMIN and
// NET_RAW are all they need, the agent's validation charon running beside
// the live one in the pod's namespaces, not in namespaces of its own (no
// CAP_SYS_ADMIN; see apply.CharonValidator).
func netAdmin() *corev1ac.SecurityContextApplyConfiguration {
	return corev1ac.SecurityContext().WithCapabilities(corev1ac.Capabilities().WithAdd("NET_ADMIN", "NET_RAW"))
}

// fieldEnv is the environment variable name holding the pod's field path
// (the downward API). The field selector names its API version, which the
// API server would otherwise default: the selector is atomic, so the
// provider owns all of it, and a defaulted field in it would read back as
// drift.
func fieldEnv(name, path string) *corev1ac.EnvVarApplyConfiguration {
	return corev1ac.EnvVar().WithName(name).WithValueFrom(corev1ac.EnvVarSource().
		WithFieldRef(corev1ac.ObjectFieldSelector().WithAPIVersion("v1").WithFieldPath(path)))
}

// resources is r, the Gateway's resources of the strongswan container, as
// an apply configuration.
func resources(r *corev1.ResourceRequirements) *corev1ac.ResourceRequirementsApplyConfiguration {
	ac := corev1ac.ResourceRequirements()
	if r.Limits != nil {
		ac.WithLimits(r.Limits)
	}
	if r.Requests != nil {
		ac.WithRequests(r.Requests)
	}
	for _, c := range r.Claims {
		rc := corev1ac.ResourceClaim().WithName(c.Name)
		if c.Request != "" {
			rc.WithRequest(c.Request)
		}
		ac.WithClaims(rc)
	}
	return ac
}

// tolerations are ts, the Gateway's tolerations, as apply configurations,
// each field set as the Gateway sets it.
func tolerations(ts []corev1.Toleration) []*corev1ac.TolerationApplyConfiguration {
	out := make([]*corev1ac.TolerationApplyConfiguration, 0, len(ts))
	for _, t := range ts {
		ac := corev1ac.Toleration()
		if t.Key != "" {
			ac.WithKey(t.Key)
		}
		if t.Operator != "" {
			ac.WithOperator(t.Operator)
		}
		if t.Value != "" {
			ac.WithValue(t.Value)
		}
		if t.Effect != "" {
			ac.WithEffect(t.Effect)
		}
		if t.TolerationSeconds != nil {
			ac.WithTolerationSeconds(*t.TolerationSeconds)
		}
		out = append(out, ac)
	}
	return out
}

// LegacyTemplate turns the pod template of d, a gateway Deployment as
// Objects renders it, into the one providers before AnnotationStartHash
// rendered for the same Gateway, with hash, the live template's
// AnnotationHash, in place of the start hash, and the agent without the
// flags that make it watch its configuration through the API server
// (contract.FlagConfigConfigMap and contract.FlagSecret; it then reads the
// mounted files, as the older agent image did). The Gateway controller
// applies it to a Deployment the older provider made whose pod need not be
// replaced, so that a provider upgrade changes nothing in its pod template
// (testdata/legacy-*.json are the older provider's goldens).
func LegacyTemplate(d *appsv1ac.DeploymentApplyConfiguration, hash string) {
	a := d.Spec.Template.Annotations
	delete(a, AnnotationStartHash)
	a[AnnotationHash] = hash
	for i := range d.Spec.Template.Spec.Containers {
		c := &d.Spec.Template.Spec.Containers[i]
		c.Args = slices.DeleteFunc(c.Args, func(arg string) bool {
			return strings.HasPrefix(arg, contract.Arg(contract.FlagConfigConfigMap, "")) || strings.HasPrefix(arg, contract.Arg(contract.FlagSecret, ""))
		})
	}
}

// The pod-deletion-cost annotation the provider sets on the active pod of
// an active/standby gateway (replicas 2).
const (
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
func activeStandby(gw *v1alpha1.Gateway, n Names, spec *appsv1ac.DeploymentSpecApplyConfiguration) {
	spec.WithStrategy(appsv1ac.DeploymentStrategy().WithType(appsv1.RollingUpdateDeploymentStrategyType).
		WithRollingUpdate(appsv1ac.RollingUpdateDeployment().WithMaxSurge(intstr.FromInt32(0)).WithMaxUnavailable(intstr.FromInt32(1))))
	pod := spec.Template.Spec
	pod.WithAffinity(corev1ac.Affinity().WithPodAntiAffinity(corev1ac.PodAntiAffinity().
		WithRequiredDuringSchedulingIgnoredDuringExecution(corev1ac.PodAffinityTerm().
			WithLabelSelector(metav1ac.LabelSelector().WithMatchLabels(Labels(gw.Name))).
			WithTopologyKey(corev1.LabelHostname))))
	pod.InitContainers[0].Command = []string{"/bin/sh", "-euc", "ip link set " + contract.SecondaryInterface + " down\n"}
	agent := &pod.Containers[1]
	agent.WithArgs(
		contract.Arg(contract.FlagLease, n.Gateway), contract.Arg(contract.FlagInterface, contract.SecondaryInterface),
		contract.Arg(contract.FlagAddress, string(gw.Spec.ForProvider.Endpoint.PrivateAddress)),
		contract.Arg(contract.FlagAddressUp, agentAddressUp(gw)), contract.Arg(contract.FlagAddressDown, agentAddressDown()))
	agent.WithEnv(fieldEnv(contract.EnvPodName, "metadata.name"), fieldEnv(contract.EnvNodeName, "spec.nodeName"))
}

// dataPlane returns the strongswan container's mounts and the pod's volumes
// that the gateway's data plane adds, none with KernelXFRM: the rendered
// strongswan.conf fragment, when there is one, in StrongSwanConfDir, and
// with Libipsec the node's TUN device (kernel-libipsec creates its
// interface with it, which needs NET_ADMIN, the container's already).
func dataPlane(gw *v1alpha1.Gateway, f *render.Files, n Names) ([]*corev1ac.VolumeMountApplyConfiguration, []*corev1ac.VolumeApplyConfiguration) {
	var mounts []*corev1ac.VolumeMountApplyConfiguration
	var volumes []*corev1ac.VolumeApplyConfiguration
	if f.StrongSwanConf != nil {
		mounts = append(mounts, corev1ac.VolumeMount().WithName("strongswan-conf").WithMountPath(StrongSwanConfDir).WithReadOnly(true))
		volumes = append(volumes, corev1ac.Volume().WithName("strongswan-conf").WithConfigMap(corev1ac.ConfigMapVolumeSource().
			WithName(n.Config).WithItems(corev1ac.KeyToPath().WithKey(contract.KeyStrongSwanConf).WithPath("dataplane.conf"))))
	}
	if gw.Spec.ForProvider.DataPlane == v1alpha1.DataPlaneLibipsec {
		mounts = append(mounts, corev1ac.VolumeMount().WithName("tun").WithMountPath(TunDevice))
		volumes = append(volumes, corev1ac.Volume().WithName("tun").WithHostPath(corev1ac.HostPathVolumeSource().
			WithPath(TunDevice).WithType(corev1.HostPathCharDev)))
	}
	return mounts, volumes
}
