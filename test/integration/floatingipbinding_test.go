//go:build integration

package integration

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/controller"
	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/floatingips"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
	corev1 "k8s.io/api/core/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	netv1alpha1 "github.com/ipsecgw/provider-ipsec/apis/cluster/networking/v1alpha1"
	"github.com/ipsecgw/provider-ipsec/apis/cluster/v1alpha1"
	"github.com/ipsecgw/provider-ipsec/internal/clients/openstack"
	"github.com/ipsecgw/provider-ipsec/internal/controller/floatingipbinding"
	"github.com/ipsecgw/provider-ipsec/internal/controller/mrsetup"
	portctrl "github.com/ipsecgw/provider-ipsec/internal/controller/port"
)

// fipTest holds what the FloatingIPBinding tests share: the tenant's
// Neutron client (through the provider's own client cache) and the
// fixtures.
type fipTest struct {
	e  *openStackEnv
	sc *gophercloud.ServiceClient
}

func newFIPTest(t *testing.T) *fipTest {
	t.Helper()
	e := startOpenStack(t)
	pc := &v1alpha1.ProviderConfig{}
	if err := kube.Get(context.Background(), client.ObjectKey{Name: "openstack"}, pc); err != nil {
		t.Fatal(err)
	}
	sc, err := e.Clients.Network(context.Background(), kube, pc)
	if err != nil {
		t.Fatal(err)
	}
	return &fipTest{e: e, sc: sc}
}

// port creates an unbound port on the tenant network directly in Neutron
// and deletes it when t ends.
func (f *fipTest) port(t *testing.T, name string) *ports.Port {
	t.Helper()
	p, err := ports.Create(context.Background(), f.sc, ports.CreateOpts{NetworkID: f.e.Fixtures.TenantNet.ID, Name: name}).Extract()
	if err != nil {
		t.Fatalf("create port %s: %v", name, err)
	}
	t.Cleanup(func() {
		if err := ports.Delete(context.Background(), f.sc, p.ID).ExtractErr(); err != nil && !openstack.IsNotFound(err) {
			t.Errorf("delete port %s: %v", p.ID, err)
		}
	})
	return p
}

// releaseAfter deletes every floating IP tagged for mg, or with ID id,
// when t ends: whatever the test leaves behind.
func (f *fipTest) releaseAfter(t *testing.T, mg *netv1alpha1.FloatingIPBinding, id string) {
	t.Cleanup(func() {
		ctx := context.Background()
		var ids []string
		if id != "" {
			ids = append(ids, id)
		}
		if mg != nil {
			ids = append(ids, createdFor(t, f.sc, openstack.FloatingIPs, mg)...)
		}
		for _, id := range ids {
			if err := floatingips.Delete(ctx, f.sc, id).ExtractErr(); err != nil && !openstack.IsNotFound(err) {
				t.Errorf("release floating IP %s: %v", id, err)
			}
		}
	})
}

func (f *fipTest) list(t *testing.T, opts floatingips.ListOpts) []floatingips.FloatingIP {
	t.Helper()
	pages, err := floatingips.List(f.sc, opts).AllPages(context.Background())
	if err != nil {
		t.Fatalf("list floating IPs: %v", err)
	}
	all, err := floatingips.ExtractFloatingIPs(pages)
	if err != nil {
		t.Fatal(err)
	}
	return all
}

func (f *fipTest) get(t *testing.T, id string) *floatingips.FloatingIP {
	t.Helper()
	fip, err := floatingips.Get(context.Background(), f.sc, id).Extract()
	if err != nil {
		t.Fatalf("get floating IP %s: %v", id, err)
	}
	return fip
}

func (f *fipTest) setPort(t *testing.T, id, port string) {
	t.Helper()
	if _, err := floatingips.Update(context.Background(), f.sc, id, floatingips.UpdateOpts{PortID: &port}).Extract(); err != nil {
		t.Fatalf("set floating IP %s port to %q: %v", id, port, err)
	}
}

// fipBinding is a FloatingIPBinding of port through the ProviderConfig
// "openstack".
func fipBinding(name, port string, p netv1alpha1.FloatingIPBindingParameters) *netv1alpha1.FloatingIPBinding {
	p.PortID = ptr.To(port)
	mg := &netv1alpha1.FloatingIPBinding{ObjectMeta: metav1.ObjectMeta{Name: name}}
	mg.Spec.ForProvider = p
	mg.Spec.ProviderConfigReference = &xpv2.Reference{Name: "openstack"}
	return mg
}

// deleteAndWait deletes mg and waits until its finalizer is gone.
func fipDeleteAndWait(t *testing.T, mg client.Object) {
	t.Helper()
	if err := kube.Delete(context.Background(), mg); err != nil && !kerrors.IsNotFound(err) {
		t.Fatal(err)
	}
	eventually(t, 60*time.Second, "the binding is deleted", func() error {
		err := kube.Get(context.Background(), client.ObjectKeyFromObject(mg), mg)
		if kerrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("still there: %w", err)
	})
}

// fipCond returns mg's condition ct as read from the API server.
func fipCond(t *testing.T, mg *netv1alpha1.FloatingIPBinding, ct xpv2.ConditionType) (xpv2.Condition, error) {
	t.Helper()
	if err := kube.Get(context.Background(), client.ObjectKeyFromObject(mg), mg); err != nil {
		return xpv2.Condition{}, err
	}
	return mg.GetCondition(ct), nil
}

// fipWaitSynced waits until mg is Synced=False with a message that
// contains msg.
func fipWaitSynced(t *testing.T, mg *netv1alpha1.FloatingIPBinding, what, msg string) {
	t.Helper()
	eventually(t, 30*time.Second, what, func() error {
		c, err := fipCond(t, mg, xpv2.TypeSynced)
		if err != nil {
			return err
		}
		if c.Status != corev1.ConditionFalse || !strings.Contains(c.Message, msg) {
			return fmt.Errorf("Synced=%s: %s", c.Status, c.Message)
		}
		return nil
	})
}

func fipWaitReady(t *testing.T, mg *netv1alpha1.FloatingIPBinding, timeout time.Duration, what string) {
	t.Helper()
	eventually(t, timeout, what, func() error {
		c, err := fipCond(t, mg, xpv2.TypeReady)
		if err != nil {
			return err
		}
		s := mg.GetCondition(xpv2.TypeSynced)
		if c.Status != corev1.ConditionTrue || s.Status != corev1.ConditionTrue {
			return fmt.Errorf("Ready=%s Synced=%s %s", c.Status, s.Status, s.Message)
		}
		return nil
	})
}

func fipSetup(e *openStackEnv) func(ctrl.Manager, controller.Options) error {
	return func(mgr ctrl.Manager, o controller.Options) error {
		return floatingipbinding.Kind.Setup(mgr, o, mrsetup.Dependencies{OpenStack: e.Clients})
	}
}

// startFIPTest is newFIPTest with the provider running the
// FloatingIPBindings' controller (fipSetup).
func startFIPTest(t *testing.T) *fipTest {
	t.Helper()
	f := newFIPTest(t)
	startProvider(t, fipSetup(f.e))
	return f
}

// TestFloatingIPBindingAllocated: an allocated binding becomes Ready with
// its floating IP really associated in Neutron, costs one GET per Observe,
// and deleting it releases the floating IP.
func TestFloatingIPBindingAllocated(t *testing.T) {
	f := startFIPTest(t)
	ctx := context.Background()
	port := f.port(t, "fipb-alloc-port")

	mg := fipBinding("fipb-alloc", port.ID, netv1alpha1.FloatingIPBindingParameters{
		FloatingNetworkID: ptr.To(netv1alpha1.UUID(f.e.Fixtures.ExtNet.ID)),
		Description:       ptr.To("itest allocated"),
	})
	start := time.Now()
	create(t, mg)
	f.releaseAfter(t, mg, "")
	fipWaitReady(t, mg, 60*time.Second, "the allocated binding is Ready")
	t.Logf("allocated binding: create to Ready in %s", time.Since(start).Round(time.Millisecond))

	id := meta.GetExternalName(mg)
	fip := f.get(t, id)
	if want := openstack.Mark(mg, "itest allocated"); fip.PortID != port.ID || fip.Description != want {
		t.Errorf("Neutron has floating IP %s on port %q, description %q; want port %s and %q",
			id, fip.PortID, fip.Description, port.ID, want)
	}
	if a := mg.Status.AtProvider; a.FloatingIPID != id || a.FloatingIPAddress != fip.FloatingIP || a.PortID != port.ID || !a.Attached || a.Pinned {
		t.Errorf("status.atProvider = %+v", a)
	}

	// Steady state: one Observe is exactly one Neutron request.
	sc, count := ownNetwork(t)
	ext := floatingipbinding.NewExternal(sc, openstack.Settling{})
	o, err := ext.Observe(ctx, mg)
	if err != nil || !o.ResourceExists || !o.ResourceUpToDate {
		t.Fatalf("Observe() = %+v, %v; want existing and up to date", o, err)
	}
	if n := count.Load(); n != 1 {
		t.Errorf("Observe of an attached binding sent %d Neutron requests, want 1", n)
	} else {
		t.Logf("Observe of an attached binding: %d Neutron request", n)
	}

	deleted := time.Now()
	fipDeleteAndWait(t, mg)
	t.Logf("allocated binding: delete to gone in %s", time.Since(deleted).Round(time.Millisecond))
	if _, err := floatingips.Get(ctx, f.sc, id).Extract(); !openstack.IsNotFound(err) {
		t.Errorf("after deleting the binding, GET floating IP %s = %v; want 404 (released)", id, err)
	}
}

// TestFloatingIPBindingRunbook plays the runbook's cutover and rollback at
// the OpenStack level with a pinned floating IP held by a "VM port".
func TestFloatingIPBindingRunbook(t *testing.T) {
	f := startFIPTest(t)
	ctx := context.Background()
	vm := f.port(t, "fipb-vm-port")
	gw := f.port(t, "fipb-gateway-port")
	fip, err := floatingips.Create(ctx, f.sc, floatingips.CreateOpts{FloatingNetworkID: f.e.Fixtures.ExtNet.ID, PortID: vm.ID, Description: "the VM's customer-owned floating IP"}).Extract()
	if err != nil {
		t.Fatal(err)
	}
	f.releaseAfter(t, nil, fip.ID)

	// 1. Pre-stage: the binding fails harmlessly, saying that another port
	// holds the floating IP without naming it (in a project shared by
	// tenants it may be another namespace's), and how to free it.
	mg := fipBinding("fipb-pinned", gw.ID, netv1alpha1.FloatingIPBindingParameters{FloatingIPAddress: ptr.To(netv1alpha1.IPAddress(fip.FloatingIP))})
	create(t, mg)
	elsewhere := "floating IP " + fip.FloatingIP + " is associated with another port, not this binding's port " + gw.ID +
		": disassociate it there first (runbook: cutover, openstack floating ip unset --port " + fip.FloatingIP + "), or pin another address"
	fipWaitSynced(t, mg, "the pinned binding is Synced=False: the floating IP is on another port", elsewhere)
	t.Logf("pre-stage: %s", mg.GetCondition(xpv2.TypeSynced).Message)
	if got := mg.GetCondition(xpv2.TypeSynced).Message + fmt.Sprintf("%+v", mg.Status.AtProvider); strings.Contains(got, vm.ID) || strings.Contains(got, vm.FixedIPs[0].IPAddress) {
		t.Errorf("pre-stage: the binding's message or status names the VM's port or its fixed IP: %s", got)
	}
	if r := mg.GetCondition(xpv2.TypeReady); r.Status == corev1.ConditionTrue {
		t.Errorf("pre-stage: Ready=True while the VM holds the floating IP")
	}
	if got := meta.GetExternalName(mg); got != fip.ID {
		t.Errorf("pre-stage: external name %q, want the floating IP's ID %s", got, fip.ID)
	}
	// Let a few retries happen: none may move the floating IP.
	time.Sleep(3 * time.Second)
	if now := f.get(t, fip.ID); now.PortID != vm.ID || now.RevisionNumber != fip.RevisionNumber {
		t.Fatalf("pre-stage: Neutron shows the floating IP on port %q (revision %d), want still on the VM port %s (revision %d)",
			now.PortID, now.RevisionNumber, vm.ID, fip.RevisionNumber)
	}

	// Neutron's own If-Match guard, which the association relies on: after
	// a concurrent change (here: of the description), a PUT with the
	// revision read before is refused with 412, a retryable error, and
	// moves nothing.
	if _, err := floatingips.Update(ctx, f.sc, fip.ID, floatingips.UpdateOpts{Description: ptr.To("changed meanwhile")}).Extract(); err != nil {
		t.Fatal(err)
	}
	stale := fip.RevisionNumber
	_, err = floatingips.Update(ctx, f.sc, fip.ID, floatingips.UpdateOpts{PortID: &gw.ID, RevisionNumber: &stale}).Extract()
	if a, ok := openstack.AsAPIError(err); !ok || a.Code != 412 || !a.Retryable() {
		t.Errorf("PUT with a stale If-Match = %v; want 412 RevisionNumberConstraintFailed", err)
	} else {
		t.Logf("stale If-Match: %v", a)
	}
	if now := f.get(t, fip.ID); now.PortID != vm.ID {
		t.Fatalf("a PUT with a stale revision moved the floating IP to %q", now.PortID)
	}

	// 2. Cutover: unset the floating IP from the VM; the binding attaches
	// by itself.
	f.setPort(t, fip.ID, "")
	unset := time.Now()
	fipWaitReady(t, mg, 90*time.Second, "the pinned binding attaches after the cutover")
	t.Logf("cutover: unset from the VM to Ready in %s", time.Since(unset).Round(time.Millisecond))
	if now := f.get(t, fip.ID); now.PortID != gw.ID {
		t.Errorf("after the cutover Neutron shows the floating IP on port %q, want the gateway port %s", now.PortID, gw.ID)
	}
	if a := mg.Status.AtProvider; !a.Attached || !a.Pinned || a.PortID != gw.ID || a.FloatingIPAddress != fip.FloatingIP {
		t.Errorf("status.atProvider = %+v", a)
	}

	// 3. Rollback, the runbook's two commands with the binding in place:
	// once it saw the floating IP leave its port for no port, the binding
	// leaves it there (more than two of its 6 s polls), says so, and
	// reports the VM's port after the set.
	f.setPort(t, fip.ID, "")
	unset = time.Now()
	fipWaitSynced(t, mg, "the binding notes that the floating IP left its port", "was taken off port "+gw.ID)
	t.Logf("rollback: unset from the gateway's port to the binding's note in %s", time.Since(unset).Round(time.Millisecond))
	time.Sleep(13 * time.Second)
	if now := f.get(t, fip.ID); now.PortID != "" {
		t.Fatalf("rollback: the binding took the floating IP to port %q while the rollback had it on no port", now.PortID)
	}
	f.setPort(t, fip.ID, vm.ID)
	set := time.Now()
	fipWaitSynced(t, mg, "the binding reports another port after the rollback", elsewhere)
	t.Logf("rollback: set on the VM's port to the binding's report in %s", time.Since(set).Round(time.Millisecond))
	if at := mg.Status.AtProvider.ReleasedAt; at != nil {
		t.Errorf("rollback: status.atProvider.releasedAt %s stays once the floating IP is on the VM's port", at)
	}

	// 4. Cutover again: the binding attaches what the VM let go of.
	f.setPort(t, fip.ID, "")
	unset = time.Now()
	fipWaitReady(t, mg, 90*time.Second, "the pinned binding attaches after a second cutover")
	t.Logf("second cutover: unset from the VM to Ready in %s", time.Since(unset).Round(time.Millisecond))

	// Deleting the binding only disassociates the pinned floating IP.
	fipDeleteAndWait(t, mg)
	if now := f.get(t, fip.ID); now.PortID != "" {
		t.Errorf("after deleting the binding the floating IP is on port %q, want unassociated and still existing", now.PortID)
	}

	// Rollback: the VM takes its floating IP back.
	f.setPort(t, fip.ID, vm.ID)
	if now := f.get(t, fip.ID); now.PortID != vm.ID || now.FloatingIP != fip.FloatingIP {
		t.Errorf("rollback: floating IP %s on port %q, want %s on the VM port %s", now.FloatingIP, now.PortID, fip.FloatingIP, vm.ID)
	}
}

// TestFloatingIPBindingPinnedMissing: a pinned address that does not exist
// is a clear error naming it, nothing is created, and the binding can be
// deleted.
func TestFloatingIPBindingPinnedMissing(t *testing.T) {
	f := startFIPTest(t)
	port := f.port(t, "fipb-missing-port")
	const addr = "203.0.113.250"
	if got := f.list(t, floatingips.ListOpts{FloatingIP: addr}); len(got) != 0 {
		t.Fatalf("%s exists already: %+v", addr, got)
	}
	before := len(f.list(t, floatingips.ListOpts{}))

	mg := fipBinding("fipb-missing", port.ID, netv1alpha1.FloatingIPBindingParameters{FloatingIPAddress: ptr.To(netv1alpha1.IPAddress(addr))})
	create(t, mg)
	eventually(t, 60*time.Second, "the binding is Synced=False naming the address", func() error {
		c, err := fipCond(t, mg, xpv2.TypeSynced)
		if err != nil {
			return err
		}
		if c.Status != corev1.ConditionFalse || !strings.Contains(c.Message, "floating IP "+addr+" does not exist") {
			return fmt.Errorf("Synced=%s: %s", c.Status, c.Message)
		}
		return nil
	})
	t.Logf("missing pinned address: %s", mg.GetCondition(xpv2.TypeSynced).Message)
	time.Sleep(2 * time.Second)
	if got := f.list(t, floatingips.ListOpts{FloatingIP: addr}); len(got) != 0 {
		t.Errorf("a floating IP %s was created: %+v", addr, got)
	}
	if after := len(f.list(t, floatingips.ListOpts{})); after != before {
		t.Errorf("the project has %d floating IPs, had %d: the binding created one", after, before)
	}
	fipDeleteAndWait(t, mg)
}

// TestFloatingIPBindingCrashSafeCreate: a binding with no external name
// whose tagged floating IP already exists (the provider died after
// Neutron allocated it) adopts it instead of allocating a second one.
func TestFloatingIPBindingCrashSafeCreate(t *testing.T) {
	f := startFIPTest(t)
	ctx := context.Background()
	port := f.port(t, "fipb-crash-port")

	// Paused, so that the controller does nothing until the "crashed"
	// create is in Neutron.
	mg := fipBinding("fipb-crash", port.ID, netv1alpha1.FloatingIPBindingParameters{
		FloatingNetworkID: ptr.To(netv1alpha1.UUID(f.e.Fixtures.ExtNet.ID)),
	})
	mg.SetAnnotations(map[string]string{meta.AnnotationKeyReconciliationPaused: "true"})
	create(t, mg)
	f.releaseAfter(t, mg, "")
	// What the killed provider's POST made, and what it left on the MR.
	fip, err := floatingips.Create(ctx, f.sc, floatingips.CreateOpts{FloatingNetworkID: f.e.Fixtures.ExtNet.ID, PortID: port.ID,
		Description: openstack.Mark(mg, "")}).Extract()
	if err != nil {
		t.Fatal(err)
	}
	f.releaseAfter(t, nil, fip.ID)
	leaveCreatePending(t, mg)
	if n := meta.GetExternalName(mg); n != "" {
		t.Fatalf("the paused binding has external name %q already", n)
	}
	delete(mg.Annotations, meta.AnnotationKeyReconciliationPaused)
	if err := kube.Update(ctx, mg); err != nil {
		t.Fatal(err)
	}
	fipWaitReady(t, mg, 60*time.Second, "the binding adopts the floating IP carrying its marker")
	if got := meta.GetExternalName(mg); got != fip.ID {
		t.Errorf("external name %q, want the floating IP of the killed create %s", got, fip.ID)
	}
	if got := createdFor(t, f.sc, openstack.FloatingIPs, mg); len(got) != 1 || got[0] != fip.ID {
		t.Errorf("floating IPs carrying the binding's marker: %v, want exactly the one created before (%s)", got, fip.ID)
	}
	fipDeleteAndWait(t, mg)
}

// TestFloatingIPBindingPortRef: a binding that references a Port managed
// resource (portIdRef) waits for it, then binds a pool floating IP to the
// port that resource made; deleting both releases the floating IP and
// deletes the port.
func TestFloatingIPBindingPortRef(t *testing.T) {
	f := newFIPTest(t)
	ctx := context.Background()
	startProvider(t, func(mgr ctrl.Manager, o controller.Options) error {
		if err := portctrl.Kind.Setup(mgr, o, mrsetup.Dependencies{OpenStack: f.e.Clients}); err != nil {
			return err
		}
		return floatingipbinding.Kind.Setup(mgr, o, mrsetup.Dependencies{OpenStack: f.e.Clients})
	})
	port := &netv1alpha1.Port{ObjectMeta: metav1.ObjectMeta{Name: "fipb-ref-port"}}
	port.Spec.ForProvider.NetworkID = ptr.To(f.e.Fixtures.TenantNet.ID)
	port.Spec.ProviderConfigReference = &xpv2.Reference{Name: "openstack"}
	mg := fipBinding("fipb-ref", "", netv1alpha1.FloatingIPBindingParameters{
		FloatingNetworkID: ptr.To(netv1alpha1.UUID(f.e.Fixtures.ExtNet.ID)),
	})
	mg.Spec.ForProvider.PortID = nil
	mg.Spec.ForProvider.PortIDRef = &xpv2.Reference{Name: port.Name}
	start := time.Now()
	create(t, mg, port)
	f.releaseAfter(t, mg, "")
	t.Cleanup(func() {
		for _, id := range createdFor(t, f.sc, openstack.Ports, port) {
			if err := ports.Delete(ctx, f.sc, id).ExtractErr(); err != nil && !openstack.IsNotFound(err) {
				t.Errorf("delete port %s: %v", id, err)
			}
		}
	})
	fipWaitReady(t, mg, 90*time.Second, "the binding of the Port MR is Ready")
	t.Logf("Port MR + binding: create to binding Ready in %s", time.Since(start).Round(time.Millisecond))
	if err := kube.Get(ctx, client.ObjectKeyFromObject(port), port); err != nil {
		t.Fatal(err)
	}
	portID := meta.GetExternalName(port)
	if got := ptr.Deref(mg.Spec.ForProvider.PortID, ""); got != portID {
		t.Errorf("spec.forProvider.portId = %q, want the Port MR's external name %q", got, portID)
	}
	id := meta.GetExternalName(mg)
	if fip := f.get(t, id); fip.PortID != portID {
		t.Errorf("Neutron has floating IP %s on port %q, want %s", id, fip.PortID, portID)
	}
	fipDeleteAndWait(t, mg)
	fipDeleteAndWait(t, port)
	if _, err := floatingips.Get(ctx, f.sc, id).Extract(); !openstack.IsNotFound(err) {
		t.Errorf("GET floating IP %s after delete = %v; want 404 (released)", id, err)
	}
	if _, err := ports.Get(ctx, f.sc, portID).Extract(); !openstack.IsNotFound(err) {
		t.Errorf("GET port %s after delete = %v; want 404", portID, err)
	}
}

// TestFloatingIPBindingExample: every document of
// examples/networking/floatingipbinding.yaml is accepted by the API server
// (schema and CEL rules; dry run).
func TestFloatingIPBindingExample(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "examples", "networking", "floatingipbinding.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	d := yaml.NewYAMLOrJSONDecoder(bytes.NewReader(b), 4096)
	n := 0
	for {
		u := &unstructured.Unstructured{}
		if err := d.Decode(&u.Object); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		if len(u.Object) == 0 {
			continue
		}
		n++
		if err := kube.Create(context.Background(), u, client.DryRunAll); err != nil {
			t.Errorf("%s %s does not apply: %v", u.GetKind(), u.GetName(), err)
		}
	}
	if n != 2 {
		t.Errorf("the example has %d documents, want 2 (pinned and allocated)", n)
	}
}

// TestFloatingIPBindingObserveOnly: with managementPolicies [Observe] a
// binding imports a pinned floating IP and reports it without changing
// it: a free one is not associated, and deleting the binding leaves it.
func TestFloatingIPBindingObserveOnly(t *testing.T) {
	f := startFIPTest(t)
	ctx := context.Background()
	gw := f.port(t, "fipb-observe-port")
	fip, err := floatingips.Create(ctx, f.sc, floatingips.CreateOpts{FloatingNetworkID: f.e.Fixtures.ExtNet.ID}).Extract()
	if err != nil {
		t.Fatal(err)
	}
	f.releaseAfter(t, nil, fip.ID)

	mg := fipBinding("fipb-observe", gw.ID, netv1alpha1.FloatingIPBindingParameters{FloatingIPAddress: ptr.To(netv1alpha1.IPAddress(fip.FloatingIP))})
	mg.Spec.ManagementPolicies = xpv2.ManagementPolicies{xpv2.ManagementActionObserve}
	create(t, mg)
	eventually(t, 60*time.Second, "the Observe-only binding reports the floating IP", func() error {
		c, err := fipCond(t, mg, xpv2.TypeSynced)
		if err != nil {
			return err
		}
		if c.Status != corev1.ConditionTrue || mg.Status.AtProvider.FloatingIPID != fip.ID {
			return fmt.Errorf("Synced=%s %s, atProvider %+v", c.Status, c.Message, mg.Status.AtProvider)
		}
		return nil
	})
	if a := mg.Status.AtProvider; a.Attached || a.PortID != "" || !a.Pinned || a.FloatingIPAddress != fip.FloatingIP {
		t.Errorf("status.atProvider = %+v, want the free pinned floating IP, not attached", a)
	}
	time.Sleep(2 * time.Second)
	if now := f.get(t, fip.ID); now.PortID != "" || now.RevisionNumber != fip.RevisionNumber {
		t.Errorf("Observe-only changed the floating IP: port %q, revision %d (was %d)", now.PortID, now.RevisionNumber, fip.RevisionNumber)
	}
	fipDeleteAndWait(t, mg)
	if now := f.get(t, fip.ID); now.RevisionNumber != fip.RevisionNumber {
		t.Errorf("deleting the Observe-only binding changed the floating IP (revision %d, was %d)", now.RevisionNumber, fip.RevisionNumber)
	}
}
