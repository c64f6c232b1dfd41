package gateway

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/event"
	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ipsecgw/provider-ipsec/apis/cluster/gateway/v1alpha1"
	"github.com/ipsecgw/provider-ipsec/internal/clients"
	"github.com/ipsecgw/provider-ipsec/internal/controller/drift"
	"github.com/ipsecgw/provider-ipsec/internal/render"
	"github.com/ipsecgw/provider-ipsec/internal/workload"
)

// fieldManager owns every field the provider applies.
const fieldManager = "provider-ipsec"

// Errors of the steps on the Gateway's objects, each with the object's
// kind, namespace and name.
const (
	errGet             = "cannot get %s %s/%s: %w"
	errApply           = "cannot apply %s %s/%s: %w"
	errDelete          = "cannot delete %s %s/%s: %w"
	errNothingRendered = "nothing rendered to apply"
)

// external manages one Gateway's objects in its target cluster, for one
// reconcile.
type external struct {
	// kube reads the Secrets the Gateway names (PSKs, certificates) in the
	// provider's cluster, each once (readOnce).
	kube client.Reader
	// target writes the Gateway's objects in its target cluster and reads
	// what is not the Gateway's there (Services, pods).
	target client.Client
	// live reads the cluster's copies of the Gateway's objects in its
	// target cluster, each once (readOnce).
	live client.Reader
	// recorder emits events when a tunnel changes state.
	recorder event.Recorder
	// image is the image of a Gateway that names none.
	image string
	// objects are the desired objects, rendered by Observe for Create and
	// Update of the same reconcile.
	objects *workload.Objects
	// details holds back status changes of details alone
	// (countersInterval).
	details *detailHold
}

// Observe renders the Gateway, reads its objects and says whether they exist
// and match. A spec that does not render sets ConfigRendered=False with the
// field at fault and returns the error, so the Gateway is Synced=False.
func (e *external) Observe(ctx context.Context, gw *v1alpha1.Gateway) (managed.ExternalObservation, error) {
	n := workload.NamesOf(gw.Name)
	ns := gw.Spec.ForProvider.Namespace
	got, depErr := e.get(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: n.Gateway}})
	dep := got.(*appsv1.Deployment)
	if depErr != nil && !kerrors.IsNotFound(depErr) {
		return managed.ExternalObservation{}, fmt.Errorf(errGet, "Deployment", ns, n.Gateway, depErr)
	}
	if meta.WasDeleted(gw) {
		// Deletion needs no rendering: a Gateway whose PSK Secret is gone
		// must still be deletable.
		exists, err := e.anyExists(ctx, gw)
		return managed.ExternalObservation{ResourceExists: exists}, err
	}

	was := *gw.Status.AtProvider.DeepCopy()
	late := lateInitImages(&gw.Spec.ForProvider.Images, e.image)
	replicas := workload.Replicas(gw)
	// Its error counts only while a pod is ready, as the report does
	// (agentReport.counts).
	rep, repErr := e.report(ctx, gw)
	// Before the objects are built: the network attachment follows it.
	gw.Status.AtProvider.SilentStartImage = e.silentStartImage(ctx, gw, replicas, rep.silentStartPod)
	files, reason, err := e.render(ctx, gw)
	if err != nil {
		gw.SetConditions(v1alpha1.ConfigNotRendered(reason, err.Error()))
		return managed.ExternalObservation{ResourceLateInitialized: late}, err
	}
	if e.objects, err = workload.Build(gw, files); err != nil {
		return managed.ExternalObservation{}, err
	}
	gw.Status.AtProvider.ConfigHash = files.Hash
	advise(e.recorder, gw, files.Advisories)
	gw.Status.AtProvider.Replicas = replicas
	if kerrors.IsNotFound(depErr) {
		gw.SetConditions(v1alpha1.DeploymentNotReady(v1alpha1.ReasonNoDeployment, "the Deployment does not exist yet"))
		return managed.ExternalObservation{ResourceExists: false, ResourceLateInitialized: late}, nil
	}

	if err := e.keepLegacyTemplate(ctx, dep, n); err != nil {
		return managed.ExternalObservation{}, err
	}
	ready := dep.Status.ReadyReplicas
	gw.Status.AtProvider.ReadyReplicas = ready
	setReadiness(gw, replicas, ready)
	if repErr != nil && ready > 0 {
		return managed.ExternalObservation{}, repErr
	}
	rep = rep.counts(gw, replicas, ready)
	for _, ev := range tunnelEvents(gw.Status.AtProvider.Tunnels, rep.tunnels) {
		e.recorder.Event(gw, ev)
	}
	if ev := leaderEvent(gw.Status.AtProvider.Leader, rep.leader); ev != nil {
		e.recorder.Event(gw, *ev)
	}
	gw.Status.AtProvider.LoadedConfigHash = rep.loadedHash
	gw.Status.AtProvider.Leader = rep.leader
	gw.Status.AtProvider.Tunnels = rep.tunnels
	gw.Status.AtProvider.TunnelsUp = tunnelsUp(rep.tunnels, len(gw.Spec.ForProvider.Tunnels))
	gw.Status.AtProvider.BytesIn, gw.Status.AtProvider.BytesOut = traffic(rep.tunnels)
	gw.Status.AtProvider = e.details.observation(gw.GetUID(), was, gw.Status.AtProvider, time.Now())
	diff, err := e.drift(ctx)
	if err != nil {
		return managed.ExternalObservation{}, err
	}
	if diff == "" {
		gw.SetConditions(v1alpha1.ConfigRendered())
	}
	return managed.ExternalObservation{ResourceExists: true, ResourceUpToDate: diff == "", Diff: diff, ResourceLateInitialized: late}, nil
}

// DefaultImage is the gateway image of a provider started without
// --gateway-image: the name `make images` tags it with.
const DefaultImage = "ipsecgw/gateway:v0.1.0"

// lateInitImages fills the images a Gateway leaves out with image and
// reports whether it filled any.
func lateInitImages(images *v1alpha1.Images, image string) bool {
	late := false
	for _, i := range []*string{&images.StrongSwan, &images.Agent} {
		if *i == "" {
			*i, late = image, true
		}
	}
	return late
}

// setReadiness sets DeploymentReady and Ready from the replicas the
// Deployment runs and how many of them are ready.
func setReadiness(gw *v1alpha1.Gateway, replicas, ready int32) {
	switch {
	case replicas == 0:
		gw.SetConditions(v1alpha1.DeploymentNotReady(v1alpha1.ReasonPreStaged,
			"spec.forProvider.active is false: configuration is rendered, the Deployment runs 0 replicas"), xpv2.Unavailable())
	case ready >= 1:
		gw.SetConditions(v1alpha1.DeploymentReady(), xpv2.Available())
	default:
		gw.SetConditions(v1alpha1.DeploymentNotReady(v1alpha1.ReasonPodNotReady,
			fmt.Sprintf("the gateway pod is not ready (%d of %d replicas ready)", ready, replicas)), xpv2.Unavailable())
	}
}

// render reads the PSKs and Service addresses the Gateway names and renders
// its files. It returns the condition reason that fits the error.
func (e *external) render(ctx context.Context, gw *v1alpha1.Gateway) (*render.Files, xpv2.ConditionReason, error) {
	p := gw.Spec.ForProvider
	in := render.Input{Spec: p, PSKs: map[string][]byte{}, Certs: map[string]*render.TunnelCert{}, ServiceAddresses: map[string]string{}}
	for _, t := range p.Tunnels {
		if t.Certificate != nil {
			tc, err := tunnelCert(ctx, e.kube, p.Namespace, t, time.Now())
			if err != nil {
				return nil, v1alpha1.ReasonInvalidCertificate, err
			}
			in.Certs[t.Name] = tc
			continue
		}
		if t.PreSharedKeySecretRef == nil {
			continue // Render names the missing field.
		}
		psk, err := clients.SecretKey(ctx, e.kube, *t.PreSharedKeySecretRef.ToSecretKeySelector(p.Namespace), "pre-shared key of tunnel "+t.Name)
		if err != nil {
			return nil, v1alpha1.ReasonMissingSecret, err
		}
		in.PSKs[t.Name] = psk
	}
	for _, x := range p.Exposures {
		if x.Target.ServiceName == nil {
			continue
		}
		svc := &corev1.Service{}
		if err := e.target.Get(ctx, types.NamespacedName{Namespace: p.Namespace, Name: *x.Target.ServiceName}, svc); err != nil {
			return nil, v1alpha1.ReasonInvalidSpec, fmt.Errorf("exposures[%s]: cannot get Service %s/%s: %w", x.Name, p.Namespace, *x.Target.ServiceName, err)
		}
		in.ServiceAddresses[x.Name] = svc.Spec.ClusterIP
	}
	f, err := render.Render(in)
	if err != nil {
		return nil, v1alpha1.ReasonInvalidSpec, fmt.Errorf("cannot render the gateway configuration: %w", err)
	}
	return f, "", nil
}

// drift compares what the provider's field manager owns in each object's
// cluster copy (client-go's Extract<Kind>) with what it applies, and
// describes every difference, or returns "" when all match: a field of
// the provider's changed or removed by someone else (who then owns it) or
// an object deleted is drift; fields others own alone (defaults, the
// agent's status, other managers' labels) are not. The Secret's data is
// compared but never shown.
func (e *external) drift(ctx context.Context) (string, error) {
	r := &drift.Report{}
	for _, o := range ownedObjects(e.objects) {
		got, err := e.get(ctx, o.live)
		if kerrors.IsNotFound(err) {
			r.Add(fmt.Sprintf("%s %s/%s", o.kind, o.live.GetNamespace(), o.live.GetName()), "missing")
			continue
		}
		if err != nil {
			return "", fmt.Errorf(errGet, o.kind, o.live.GetNamespace(), o.live.GetName(), err)
		}
		if err := o.compare(r, got); err != nil {
			return "", err
		}
	}
	return r.Diff(), nil
}

// get reads the cluster's copy of want, one of the Gateway's objects, into
// a fresh object of its type, through e.live: each object once per
// reconcile, so that the Deployment and the status ConfigMap serve
// Observe's readiness, tunnel status and drift check from one read each.
func (e *external) get(ctx context.Context, want client.Object) (client.Object, error) {
	var got client.Object
	if u, ok := want.(*unstructured.Unstructured); ok {
		g := &unstructured.Unstructured{}
		g.SetGroupVersionKind(u.GroupVersionKind())
		got = g
	} else {
		got = want.DeepCopyObject().(client.Object)
	}
	return got, e.live.Get(ctx, client.ObjectKeyFromObject(want), got)
}

// readOnce is a client.Reader of one reconcile that reads each object
// once: a later Get of the same type, kind and key gets a copy of what the
// first read, or its error. A Secret that two tunnels name is read once.
// Lists go to Reader. Not safe for concurrent use: a reconcile is one
// goroutine.
type readOnce struct {
	client.Reader
	seen map[string]read
}

// read is one object read, and the error.
type read struct {
	obj client.Object
	err error
}

// Get reads key into obj from Reader the first time, and from what that
// read after.
func (r *readOnce) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	k := fmt.Sprintf("%T %s %s", obj, obj.GetObjectKind().GroupVersionKind(), key)
	if got, ok := r.seen[k]; ok {
		if got.err == nil {
			reflect.ValueOf(obj).Elem().Set(reflect.ValueOf(got.obj.DeepCopyObject()).Elem())
		}
		return got.err
	}
	err := r.Reader.Get(ctx, key, obj, opts...)
	if r.seen == nil {
		r.seen = map[string]read{}
	}
	r.seen[k] = read{obj: obj.DeepCopyObject().(client.Object), err: err}
	return err
}

// anyExists says whether any object of a Gateway being deleted remains.
func (e *external) anyExists(ctx context.Context, gw *v1alpha1.Gateway) (bool, error) {
	for _, o := range existing(gw) {
		err := e.target.Get(ctx, client.ObjectKeyFromObject(o), o)
		if err == nil {
			return true, nil
		}
		if !kerrors.IsNotFound(err) {
			return false, err
		}
	}
	return false, nil
}

// Create applies every object of the Gateway.
func (e *external) Create(ctx context.Context, gw *v1alpha1.Gateway) (managed.ExternalCreation, error) {
	return managed.ExternalCreation{}, e.apply(ctx, gw)
}

// Update applies every object of the Gateway, correcting any drift; with
// replicas 2 it first ranks the pods for the rollout it may start
// (rankPods).
func (e *external) Update(ctx context.Context, gw *v1alpha1.Gateway) (managed.ExternalUpdate, error) {
	if err := e.rankPods(ctx, gw); err != nil {
		return managed.ExternalUpdate{}, err
	}
	return managed.ExternalUpdate{}, e.apply(ctx, gw)
}

// apply server-side applies the desired objects with the provider's field
// manager, taking over fields others changed by hand. Once all are
// written it sets ConfigRendered=True on gw at once: crossplane-runtime
// requeues a created resource through the rate limiter, so after a run of
// failures the next Observe may come a minute later, and the last failure
// must not be shown that long for a configuration that is in place.
func (e *external) apply(ctx context.Context, gw *v1alpha1.Gateway) error {
	if e.objects == nil {
		return errors.New(errNothingRendered)
	}
	// The client decodes the API server's answer into each apply
	// configuration: e.objects is the desired state only until here.
	for _, o := range ownedObjects(e.objects) {
		if d, ok := o.apply.(*appsv1ac.DeploymentApplyConfiguration); ok {
			if live, err := e.get(ctx, o.live); err == nil {
				o.apply = withStrategy(d, strategy(live.(*appsv1.Deployment), d))
			}
		}
		if err := e.target.Apply(ctx, o.apply, client.FieldOwner(fieldManager), client.ForceOwnership); err != nil {
			return fmt.Errorf(errApply, o.kind, o.live.GetNamespace(), o.live.GetName(), err)
		}
	}
	gw.SetConditions(v1alpha1.ConfigRendered())
	return nil
}

// withStrategy returns a shallow copy of d, the gateway's Deployment,
// with strategy s; d keeps the rendered strategy.
func withStrategy(d *appsv1ac.DeploymentApplyConfiguration, s *appsv1ac.DeploymentStrategyApplyConfiguration) *appsv1ac.DeploymentApplyConfiguration {
	c, spec := *d, *d.Spec
	spec.Strategy = s
	c.Spec = &spec
	return &c
}

// strategy returns the strategy to apply want, the gateway's Deployment,
// over live, the cluster's: want's, except while a Deployment of one pod
// (Recreate, static address from the CNI) becomes active/standby (a
// rolling update, the address taken by the elected agent): a rolling
// update would start a new pod, which finds the Lease free and takes the
// address, beside the old pod that still holds it. That change of network
// attachment rolls out with Recreate, and the next update, with the pods
// on the new attachment, sets the rolling update (which alone rolls no
// pod).
func strategy(live *appsv1.Deployment, want *appsv1ac.DeploymentApplyConfiguration) *appsv1ac.DeploymentStrategyApplyConfiguration {
	netHash := workload.AnnotationNetworkHash
	if live.Spec.Strategy.Type == appsv1.RecreateDeploymentStrategyType &&
		live.Spec.Template.Annotations[netHash] != want.Spec.Template.Annotations[netHash] {
		return appsv1ac.DeploymentStrategy().WithType(appsv1.RecreateDeploymentStrategyType)
	}
	return want.Spec.Strategy
}

// Delete removes every object the Gateway created, newest first, and only
// those carrying its labels.
func (e *external) Delete(ctx context.Context, gw *v1alpha1.Gateway) (managed.ExternalDelete, error) {
	e.details.forget(gw.GetUID())
	objs := existing(gw)
	for i := len(objs) - 1; i >= 0; i-- {
		o := objs[i]
		if err := e.target.Get(ctx, client.ObjectKeyFromObject(o), o); err != nil {
			if kerrors.IsNotFound(err) {
				continue
			}
			return managed.ExternalDelete{}, err
		}
		if o.GetLabels()[workload.LabelGateway] != gw.Name || o.GetLabels()[workload.LabelManagedBy] != workload.ManagedBy {
			continue
		}
		if err := e.target.Delete(ctx, o, client.PropagationPolicy("Background")); client.IgnoreNotFound(err) != nil {
			return managed.ExternalDelete{}, fmt.Errorf(errDelete, kind(o), o.GetNamespace(), o.GetName(), err)
		}
	}
	return managed.ExternalDelete{}, nil
}

// Disconnect does nothing: clients hold no connection to close.
func (e *external) Disconnect(context.Context) error { return nil }

func kind(o client.Object) string {
	if k := o.GetObjectKind().GroupVersionKind().Kind; k != "" {
		return k
	}
	return fmt.Sprintf("%T", o)
}
