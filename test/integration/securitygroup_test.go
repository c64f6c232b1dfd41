//go:build integration

package integration

import (
	"context"
	"errors"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/controller"
	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/security/groups"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/security/rules"
	corev1 "k8s.io/api/core/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ipsecgw/provider-ipsec/apis/cluster/networking/v1alpha1"
	pcv1alpha1 "github.com/ipsecgw/provider-ipsec/apis/cluster/v1alpha1"
	"github.com/ipsecgw/provider-ipsec/internal/clients/openstack"
	ipsecctrl "github.com/ipsecgw/provider-ipsec/internal/controller"
	"github.com/ipsecgw/provider-ipsec/internal/controller/mrsetup"
	"github.com/ipsecgw/provider-ipsec/internal/controller/securitygroup"
)

// neutron returns a Neutron client of e.ProviderConfig, for the test's own
// reads and hand-made changes.
func neutron(t *testing.T, e *openStackEnv) *gophercloud.ServiceClient {
	t.Helper()
	pc := &pcv1alpha1.ProviderConfig{}
	if err := kube.Get(context.Background(), client.ObjectKey{Name: e.ProviderConfig}, pc); err != nil {
		t.Fatal(err)
	}
	sc, err := e.Clients.Network(context.Background(), kube, pc)
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

func gatewaySecurityGroup(name, pc string) *v1alpha1.SecurityGroup {
	any4 := v1alpha1.CIDR("0.0.0.0/0")
	udp := func(port int32) v1alpha1.SecurityGroupRule {
		return v1alpha1.SecurityGroupRule{Direction: "ingress", Protocol: ptr.To("udp"), PortRangeMin: &port, PortRangeMax: &port, RemoteIPPrefix: &any4}
	}
	sg := &v1alpha1.SecurityGroup{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1alpha1.SecurityGroupSpec{ForProvider: v1alpha1.SecurityGroupParameters{
			Name: name, Description: ptr.To("IKE and ESP to the VPN gateway"),
			Rules: []v1alpha1.SecurityGroupRule{udp(500), udp(4500), {Direction: "ingress", Protocol: ptr.To("esp"), RemoteIPPrefix: &any4}},
		}},
	}
	sg.Spec.ProviderConfigReference = &xpv2.Reference{Name: pc}
	return sg
}

func securityGroupControllers(e *openStackEnv) func(ctrl.Manager, controller.Options) error {
	return func(mgr ctrl.Manager, o controller.Options) error {
		return securitygroup.Kind.Setup(mgr, o, mrsetup.Dependencies{OpenStack: e.Clients})
	}
}

// openStackControllers are the controllers of every kind on e's clients.
func openStackControllers(e *openStackEnv) func(ctrl.Manager, controller.Options) error {
	return allControllers(ipsecctrl.Dependencies{OpenStack: e.Clients})
}

// startNeutronProvider starts the local OpenStack and the provider with
// the controllers setup makes of it, and returns the OpenStack and its
// Neutron client (neutron's).
func startNeutronProvider(t *testing.T, setup func(*openStackEnv) func(ctrl.Manager, controller.Options) error) (*openStackEnv, *gophercloud.ServiceClient) {
	t.Helper()
	e := startOpenStack(t)
	startProvider(t, setup(e))
	return e, neutron(t, e)
}

// updateMR reads obj again, applies change to it and updates it, until the
// update succeeds within 10 s (eventually's what).
func updateMR(t *testing.T, what string, obj client.Object, change func()) {
	t.Helper()
	eventually(t, 10*time.Second, what, func() error {
		if err := kube.Get(context.Background(), client.ObjectKeyFromObject(obj), obj); err != nil {
			return err
		}
		change()
		return kube.Update(context.Background(), obj)
	})
}

func waitReady(t *testing.T, mg client.Object, conds func() xpv2.ConditionedStatus) {
	t.Helper()
	eventually(t, 60*time.Second, fmt.Sprintf("%s becomes Ready", mg.GetName()), func() error {
		if err := kube.Get(context.Background(), client.ObjectKeyFromObject(mg), mg); err != nil {
			return err
		}
		c := conds()
		if r := c.GetCondition(xpv2.TypeReady); r.Status != corev1.ConditionTrue {
			s := c.GetCondition(xpv2.TypeSynced)
			return fmt.Errorf("Ready %s, Synced %s %q", r.Status, s.Status, s.Message)
		}
		if s := c.GetCondition(xpv2.TypeSynced); s.Status != corev1.ConditionTrue {
			return fmt.Errorf("Synced %s %q", s.Status, s.Message)
		}
		return nil
	})
}

// TestSecurityGroup drives a SecurityGroup against the real Neutron:
// create with rules, drift in both directions corrected, one GET per
// up-to-date Observe, delete.
func TestSecurityGroup(t *testing.T) {
	e := startOpenStack(t)
	ctx := context.Background()
	logs := startProvider(t, securityGroupControllers(e))
	sc := neutron(t, e)

	sg := gatewaySecurityGroup("itest-gw-sg", "openstack")
	start := time.Now()
	create(t, sg)
	waitReady(t, sg, func() xpv2.ConditionedStatus { return sg.Status.ConditionedStatus })
	t.Logf("SecurityGroup Ready %s after create", time.Since(start).Round(10*time.Millisecond))
	id := meta.GetExternalName(sg)
	t.Cleanup(func() { _ = groups.Delete(context.Background(), sc, id).ExtractErr() })

	g, err := groups.Get(ctx, sc, id).Extract()
	if err != nil {
		t.Fatal(err)
	}
	if want := openstack.Mark(sg, ptr.Deref(sg.Spec.ForProvider.Description, "")); g.Description != want || len(g.Tags) != 0 {
		t.Errorf("group description %q, tags %v; want %q and no tags", g.Description, g.Tags, want)
	}
	if len(g.Rules) != 5 {
		t.Errorf("group has %d rules, want 3 from the spec and Neutron's 2 default egress rules:\n%+v", len(g.Rules), g.Rules)
	}

	// Steady state: one Neutron request per Observe.
	time.Sleep(2 * time.Second)
	reconciles := func() int {
		return strings.Count(logs.String(), `Reconciling	{"controller": "managed/securitygroup.networking.ipsecgw.io", "request": {"name":"itest-gw-sg"}}`)
	}
	before, r0 := e.Requests.Load(), reconciles()
	time.Sleep(6 * time.Second)
	requests := e.Requests.Load() - before
	observes := reconciles() - r0
	// A reconcile in flight at either edge of the window can put one
	// request on the wrong side of it.
	if observes < 3 || requests < int64(observes)-1 || requests > int64(observes)+1 {
		t.Errorf("%d Neutron requests in %d reconciles of an up-to-date SecurityGroup, want one each (±1 at the window's edges)", requests, observes)
	}
	t.Logf("steady state: %d requests in %d reconciles", requests, observes)

	// Drift: a rule deleted by hand comes back, a rule added by hand goes.
	var esp string
	for _, r := range g.Rules {
		if r.Protocol == "esp" {
			esp = r.ID
		}
	}
	if err := rules.Delete(ctx, sc, esp).ExtractErr(); err != nil {
		t.Fatalf("delete the ESP rule by hand: %v", err)
	}
	ssh, err := rules.Create(ctx, sc, rules.CreateOpts{Direction: "ingress", EtherType: "IPv4", SecGroupID: id, Protocol: "tcp", PortRangeMin: 22, PortRangeMax: 22}).Extract()
	if err != nil {
		t.Fatalf("add an SSH rule by hand: %v", err)
	}
	eventually(t, 30*time.Second, "hand-made rule changes are undone", func() error {
		g, err := groups.Get(ctx, sc, id).Extract()
		if err != nil {
			return err
		}
		hasESP, hasSSH := false, false
		for _, r := range g.Rules {
			hasESP = hasESP || r.Protocol == "esp"
			hasSSH = hasSSH || r.ID == ssh.ID
		}
		if !hasESP || hasSSH {
			return fmt.Errorf("esp rule present %v, hand-added ssh rule present %v", hasESP, hasSSH)
		}
		return nil
	})

	if err := kube.Delete(ctx, sg); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "deleting the MR deletes the group", func() error {
		if _, err := groups.Get(ctx, sc, id).Extract(); err == nil {
			return fmt.Errorf("group %s still exists", id)
		}
		if err := kube.Get(ctx, client.ObjectKeyFromObject(sg), sg); !kerrors.IsNotFound(err) {
			return fmt.Errorf("MR still exists (%w)", err)
		}
		return nil
	})
}

// TestSecurityGroupAdoptsUnrecordedCreate simulates a provider that died
// after Neutron created the group but before its ID was recorded: the next
// reconcile finds the group by the marker in its description and adopts
// it.
func TestSecurityGroupAdoptsUnrecordedCreate(t *testing.T) {
	ctx := context.Background()
	_, sc := startNeutronProvider(t, securityGroupControllers)

	sg := gatewaySecurityGroup("itest-adopt-sg", "openstack")
	sg.Annotations = map[string]string{meta.AnnotationKeyReconciliationPaused: "true"}
	create(t, sg)
	// What the killed provider's POST made, with a description since
	// changed in the spec, and what it left on the MR.
	orphan, err := groups.Create(ctx, sc, groups.CreateOpts{Name: "itest-adopt-sg", Description: openstack.Mark(sg, "before the edit")}).Extract()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = groups.Delete(context.Background(), sc, orphan.ID).ExtractErr() })
	leaveCreatePending(t, sg)
	updateMR(t, "unpause the MR", sg, func() { meta.RemoveAnnotations(sg, meta.AnnotationKeyReconciliationPaused) })
	waitReady(t, sg, func() xpv2.ConditionedStatus { return sg.Status.ConditionedStatus })
	if got := meta.GetExternalName(sg); got != orphan.ID {
		t.Errorf("external name %q, want the orphaned group %s", got, orphan.ID)
	}
	if all := createdFor(t, sc, openstack.SecurityGroups, sg); len(all) != 1 {
		t.Errorf("groups carrying the MR's marker: %v, want exactly the adopted one", all)
	}
	if g, err := groups.Get(ctx, sc, orphan.ID).Extract(); err != nil || g.Description != openstack.Mark(sg, ptr.Deref(sg.Spec.ForProvider.Description, "")) {
		t.Errorf("adopted group's description %q (%v), want the spec's, marked", g.Description, err)
	}
	if err := kube.Delete(ctx, sg); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "the adopted group is deleted with its MR", func() error {
		if _, err := groups.Get(ctx, sc, orphan.ID).Extract(); err == nil {
			return fmt.Errorf("group still exists")
		}
		return nil
	})
}

// TestSecurityGroupLegacyMarkerReplaced proves on the real Neutron that a
// group an earlier release made, whose description ends in the marker with
// its MR's UID, gets the marker that names the MR at the MR's first
// reconcile, its text kept: the marker by which the MR, deleted by accident
// and applied again, finds it (TestRecoverBareMRs).
func TestSecurityGroupLegacyMarkerReplaced(t *testing.T) {
	ctx := context.Background()
	_, sc := startNeutronProvider(t, securityGroupControllers)

	sg := gatewaySecurityGroup("itest-legacy-sg", "openstack")
	sg.Annotations = map[string]string{meta.AnnotationKeyReconciliationPaused: "true"}
	create(t, sg)
	desc := ptr.Deref(sg.Spec.ForProvider.Description, "")
	old, err := groups.Create(ctx, sc, groups.CreateOpts{Name: "itest-legacy-sg", Description: desc + " [crossplane-uid-" + string(sg.UID) + "]"}).Extract()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = groups.Delete(context.Background(), sc, old.ID).ExtractErr() })
	updateMR(t, "record the earlier release's group and unpause the MR", sg, func() {
		meta.SetExternalName(sg, old.ID)
		meta.RemoveAnnotations(sg, meta.AnnotationKeyReconciliationPaused)
	})
	waitReady(t, sg, func() xpv2.ConditionedStatus { return sg.Status.ConditionedStatus })
	eventually(t, 30*time.Second, "the group's description carries the marker", func() error {
		g, err := groups.Get(ctx, sc, old.ID).Extract()
		if err != nil {
			return err
		}
		if want := openstack.Mark(sg, desc); g.Description != want {
			return fmt.Errorf("description %q, want %q", g.Description, want)
		}
		return nil
	})
	if all := createdFor(t, sc, openstack.SecurityGroups, sg); len(all) != 1 || all[0] != old.ID {
		t.Errorf("groups carrying the MR's marker: %v, want only %s", all, old.ID)
	}
	deleteGone(t, sg, "the group is deleted with its MR", old.ID, func() error { return groups.Get(ctx, sc, old.ID).Err })
}

// TestSecurityGroupStaleExternalNameAndTwin proves, on the real Neutron,
// the two ways a second object carrying an MR's marker could outlive it:
// an external name written over by an older one whose object is gone is
// relocated to the MR's own group rather than answered by a new group,
// and a twin a create left (a POST Neutron completed after the provider
// gave up on it, made here by hand) is deleted with the MR.
func TestSecurityGroupStaleExternalNameAndTwin(t *testing.T) {
	ctx := context.Background()
	_, sc := startNeutronProvider(t, securityGroupControllers)

	sg := gatewaySecurityGroup("itest-twin-sg", "openstack")
	create(t, sg)
	t.Cleanup(func() {
		for _, id := range createdFor(t, sc, openstack.SecurityGroups, sg) {
			_ = groups.Delete(context.Background(), sc, id).ExtractErr()
		}
	})
	waitReady(t, sg, func() xpv2.ConditionedStatus { return sg.Status.ConditionedStatus })
	own := meta.GetExternalName(sg)

	// A group that existed once: its ID is what an older copy of the MR
	// would bring back.
	gone, err := groups.Create(ctx, sc, groups.CreateOpts{Name: "itest-twin-gone"}).Extract()
	if err != nil {
		t.Fatal(err)
	}
	if err := groups.Delete(ctx, sc, gone.ID).ExtractErr(); err != nil {
		t.Fatal(err)
	}
	updateMR(t, "write the stale external name", sg, func() { meta.SetExternalName(sg, gone.ID) })
	eventually(t, 60*time.Second, "the external name is relocated to the MR's own group", func() error {
		if err := kube.Get(ctx, client.ObjectKeyFromObject(sg), sg); err != nil {
			return err
		}
		if got := meta.GetExternalName(sg); got != own {
			return fmt.Errorf("external name %s, want the MR's own group %s", got, own)
		}
		return nil
	})
	if all := createdFor(t, sc, openstack.SecurityGroups, sg); !slices.Equal(all, []string{own}) {
		t.Fatalf("groups carrying the MR's marker after the relocation: %v, want only %s", all, own)
	}

	twin, err := groups.Create(ctx, sc, groups.CreateOpts{Name: "itest-twin-sg", Description: openstack.Mark(sg, "completed late")}).Extract()
	if err != nil {
		t.Fatal(err)
	}
	if err := kube.Delete(ctx, sg); err != nil {
		t.Fatal(err)
	}
	eventually(t, 60*time.Second, "the MR, its group and the twin are deleted", func() error {
		if err := kube.Get(ctx, client.ObjectKeyFromObject(sg), sg); err == nil {
			return fmt.Errorf("MR still exists")
		}
		if left := createdFor(t, sc, openstack.SecurityGroups, sg); len(left) > 0 {
			return fmt.Errorf("groups carrying the MR's marker left: %v (own %s, twin %s)", left, own, twin.ID)
		}
		return nil
	})
}

// TestSecurityGroupWrongPassword proves a ProviderConfig with a wrong
// password makes the MR Synced=False with a message naming it.
func TestSecurityGroupWrongPassword(t *testing.T) {
	e := startOpenStack(t)
	ctx := context.Background()
	startProvider(t, securityGroupControllers(e))
	bad := strings.Replace(string(e.CloudsYAML), "tenant-a-password", "wrong", 1)
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "crossplane-system", Name: "sg-bad-clouds"}, Data: map[string][]byte{"clouds.yaml": []byte(bad)}}
	ref := secretRef(s.Name, "clouds.yaml")
	ref.Namespace = "crossplane-system"
	pc := &pcv1alpha1.ProviderConfig{ObjectMeta: metav1.ObjectMeta{Name: "sg-wrong-password"},
		Spec: pcv1alpha1.ProviderConfigSpec{Credentials: pcv1alpha1.OpenStackCredentials{SecretRef: ref, Cloud: "tenant-a"}}}
	sg := gatewaySecurityGroup("itest-badpw-sg", pc.Name)
	create(t, s, pc, sg)
	t.Cleanup(func() {
		_ = kube.Delete(context.Background(), sg)
	})
	eventually(t, 30*time.Second, "Synced=False names the ProviderConfig", func() error {
		if err := kube.Get(ctx, client.ObjectKeyFromObject(sg), sg); err != nil {
			return err
		}
		c := sg.Status.GetCondition(xpv2.TypeSynced)
		if c.Status != corev1.ConditionFalse || !strings.Contains(c.Message, "ProviderConfig sg-wrong-password: cannot authenticate to Keystone") ||
			!strings.Contains(c.Message, "Keystone 401 Unauthorized") {
			return fmt.Errorf("Synced %s %q", c.Status, c.Message)
		}
		return nil
	})
}

// missingRules is the Ready=False message of a group that lacks rules.
var missingRules = regexp.MustCompile(`^the group lacks [1-9][0-9]* of the spec's rules and has 0 that the spec does not$`)

// TestSecurityGroupNotReadyWhileRulesFail is issue 18's defect: a
// SecurityGroup reported Ready while Neutron refused to create one of its
// rules. A rule whose remote group does not exist (Neutron answers 404
// SecurityGroupNotFound) keeps the group Synced=False naming the rule and
// Ready=False the whole time; once the spec names a group that exists the
// rule is created and the group becomes Ready.
func TestSecurityGroupNotReadyWhileRulesFail(t *testing.T) {
	ctx := context.Background()
	_, sc := startNeutronProvider(t, securityGroupControllers)

	sg := gatewaySecurityGroup("itest-badrule-sg", "openstack")
	missing := v1alpha1.UUID("00000000-0000-4000-8000-00000000dead")
	sg.Spec.ForProvider.Rules = append(sg.Spec.ForProvider.Rules, v1alpha1.SecurityGroupRule{Direction: "ingress", Protocol: ptr.To("tcp"),
		PortRangeMin: ptr.To[int32](443), PortRangeMax: ptr.To[int32](443), RemoteGroupID: &missing})
	create(t, sg)
	t.Cleanup(func() {
		_ = kube.Delete(context.Background(), sg)
		eventually(t, 30*time.Second, "the SecurityGroup is deleted", func() error {
			if err := kube.Get(context.Background(), client.ObjectKeyFromObject(sg), &v1alpha1.SecurityGroup{}); !kerrors.IsNotFound(err) {
				return fmt.Errorf("still there (%w)", err)
			}
			return nil
		})
		if id := meta.GetExternalName(sg); id != "" {
			_ = groups.Delete(context.Background(), sc, id).ExtractErr()
		}
	})
	eventually(t, 30*time.Second, "the refused rule shows in Synced=False", func() error {
		if err := kube.Get(ctx, client.ObjectKeyFromObject(sg), sg); err != nil {
			return err
		}
		if s := sg.GetCondition(xpv2.TypeSynced); s.Status != corev1.ConditionFalse || !strings.Contains(s.Message, "cannot add ingress tcp rule") {
			return fmt.Errorf("Synced %s %q", s.Status, s.Message)
		}
		return nil
	})
	// The provider retries, with backoff; through several of its tries the
	// group never reports Ready.
	tries := 0
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		if err := kube.Get(ctx, client.ObjectKeyFromObject(sg), sg); err != nil {
			t.Fatal(err)
		}
		r := sg.GetCondition(xpv2.TypeReady)
		if r.Status == corev1.ConditionTrue {
			t.Fatalf("Ready=True while a rule of the spec cannot be created (Synced: %s)", sg.GetCondition(xpv2.TypeSynced).Message)
		}
		// The count is Observe's, before that reconcile's Update added the
		// rules it could: 4 at first, then 1.
		if r.Status != corev1.ConditionFalse || !missingRules.MatchString(r.Message) {
			t.Fatalf("Ready %s %q, want False saying rules are missing", r.Status, r.Message)
		}
		tries++
	}
	t.Logf("Ready=False through %d reads over 10 s of refused rule creates", tries)

	// A remote group that exists: the rule is created, the group is Ready.
	peer, err := groups.Create(ctx, sc, groups.CreateOpts{Name: "itest-badrule-peer"}).Extract()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = groups.Delete(context.Background(), sc, peer.ID).ExtractErr() })
	updateMR(t, "point the rule at an existing group", sg, func() {
		rs := sg.Spec.ForProvider.Rules
		rs[len(rs)-1].RemoteGroupID = ptr.To(v1alpha1.UUID(peer.ID))
	})
	waitReady(t, sg, func() xpv2.ConditionedStatus { return sg.Status.ConditionedStatus })
	g, err := groups.Get(ctx, sc, meta.GetExternalName(sg)).Extract()
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, r := range g.Rules {
		found = found || (r.RemoteGroupID == peer.ID && r.PortRangeMin == 443)
	}
	if !found {
		t.Errorf("Ready, but Neutron has no tcp 443 rule from group %s: %+v", peer.ID, g.Rules)
	}
}

// TestSecurityGroupWaitsForItsProviderConfig applies a SecurityGroup 35 s
// before its ProviderConfig, as an Argo CD sync of the tenants before the
// platform's does. While the ProviderConfig does not exist, Synced=False
// names it; once it is created, the group is made within 20 s (the
// provider retries a resource whose ProviderConfig or Secret is absent
// within 10 s), not at the next retry of a backoff grown by then to 32 s
// (28 s after the ProviderConfig's creation). Its deletion then takes
// seconds, not the backoff's minute that its failures had grown to.
func TestSecurityGroupWaitsForItsProviderConfig(t *testing.T) {
	ctx := context.Background()
	e, sc := startNeutronProvider(t, securityGroupControllers)
	pc := &pcv1alpha1.ProviderConfig{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("itest-late-%d", os.Getpid())}}
	existing := &pcv1alpha1.ProviderConfig{}
	if err := kube.Get(ctx, client.ObjectKey{Name: e.ProviderConfig}, existing); err != nil {
		t.Fatal(err)
	}
	pc.Spec = existing.Spec

	sg := gatewaySecurityGroup(pc.Name+"-sg", pc.Name)
	create(t, sg)
	// Cleanups run last first: the group goes while its ProviderConfig
	// still exists (its deletion needs the credentials), then the
	// ProviderConfig.
	t.Cleanup(func() { _ = kube.Delete(context.Background(), pc) })
	t.Cleanup(func() {
		_ = kube.Delete(context.Background(), sg)
		deleted := time.Now()
		eventually(t, 15*time.Second, "the SecurityGroup is deleted (not after the backoff of its failures)", func() error {
			if err := kube.Get(context.Background(), client.ObjectKeyFromObject(sg), &v1alpha1.SecurityGroup{}); err == nil {
				return errors.New("still there")
			} else if !kerrors.IsNotFound(err) {
				return err
			}
			return nil
		})
		t.Logf("the SecurityGroup deleted in %s", time.Since(deleted).Round(100*time.Millisecond))
		if id := meta.GetExternalName(sg); id != "" {
			_ = groups.Delete(context.Background(), sc, id).ExtractErr()
		}
	})
	applied := time.Now()
	eventually(t, 30*time.Second, "Synced=False names the absent ProviderConfig", func() error {
		if err := kube.Get(ctx, client.ObjectKeyFromObject(sg), sg); err != nil {
			return err
		}
		if s := sg.GetCondition(xpv2.TypeSynced); s.Status != corev1.ConditionFalse || !strings.Contains(s.Message, "cannot get ProviderConfig "+pc.Name) {
			return fmt.Errorf("Synced %s %q", s.Status, s.Message)
		}
		return nil
	})
	time.Sleep(time.Until(applied.Add(35 * time.Second)))
	create(t, pc)
	created := time.Now()
	eventually(t, 20*time.Second, "the group made once its ProviderConfig exists", func() error {
		if err := kube.Get(ctx, client.ObjectKeyFromObject(sg), sg); err != nil {
			return err
		}
		if s := sg.GetCondition(xpv2.TypeSynced); s.Status != corev1.ConditionTrue || meta.GetExternalName(sg) == "" {
			return fmt.Errorf("Synced %s %q, external name %q", s.Status, s.Message, meta.GetExternalName(sg))
		}
		return nil
	})
	t.Logf("the SecurityGroup Synced %s after its ProviderConfig was created (%s after the group)",
		time.Since(created).Round(100*time.Millisecond), time.Since(applied).Round(100*time.Millisecond))
}
