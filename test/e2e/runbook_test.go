//go:build e2e

package e2e

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/floatingips"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/security/groups"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"
)

const (
	tenant = "tenant-a"
	pinned = "branch-office"
	// neutronName is the name the Composition gives the pinned claim's
	// security group and port in Neutron.
	neutronName = "ipsecgw-tenant-a-branch-office"
)

// TestRunbook follows the VM-to-operator migration runbook on the `make
// dev` stack: pre-stage, cutover (by a label edit, then by backoff),
// rollback, deletion that leaves the customer's floating IP on the VM, an
// allocated floating IP that is released, and bad claims refused at
// admission; and, on the same stack, the provider's safe start (a kind
// activated while it runs).
func TestRunbook(t *testing.T) {
	stackLanes.take(t)
	s := startStack(t)
	ctx := context.Background()

	t.Run("bad claims are refused at admission", func(t *testing.T) { badClaims(t, s) })
	t.Run("safe start: a kind activated while the provider runs", func(t *testing.T) { safeStart(t, s) })

	// 1. Pre-stage (dev.sh waited for the port and the rendered
	// configuration).
	claim := s.get(t, s.xr.gvk, tenant, pinned)
	for _, step := range []string{"securityGroup", "port"} {
		if st, msg := condition(claim, "Ready", "status", step, "conditions"); st != "True" {
			t.Errorf("pre-stage: claim status.%s Ready = %q (%s), want True", step, st, msg)
		}
	}
	eventually(t, "pre-stage: the claim reports the floating IP held by another port (the VM's, not named)", 60*time.Second, func() (bool, string) {
		c := s.get(t, s.xr.gvk, tenant, pinned)
		st, msg := condition(c, "Synced", "status", "floatingIP", "conditions")
		return st == "False" && s.onAnotherPort(msg) && str(c, "status", "floatingIP", "attached") == "false", st + ": " + msg
	})
	if got := s.fipPort(t); got != s.runbook.VMPortID {
		t.Fatalf("pre-stage: Neutron has the floating IP on port %q, want it untouched on the VM's port %s", got, s.runbook.VMPortID)
	}
	gw := str(claim, "status", "gateway", "name")
	cm := &corev1.ConfigMap{}
	if err := s.kube.Get(ctx, client.ObjectKey{Namespace: tenant, Name: gw + "-config"}, cm); err != nil {
		t.Fatalf("pre-stage: the rendered configuration: %v", err)
	}
	if conf := cm.Data["swanctl.conf"]; !strings.Contains(conf, s.runbook.FloatingIP) {
		t.Errorf("pre-stage: swanctl.conf does not identify the gateway by the pinned %s:\n%s", s.runbook.FloatingIP, conf)
	}
	if r := s.replicas(t, gw); r != 0 {
		t.Errorf("pre-stage: the gateway's Deployment has %d replicas, want 0 until the floating IP is attached", r)
	}

	// 2. Cutover right after the pre-stage, nudged by a label edit on the
	// claim: the binding retries at once. The claim was created seconds
	// ago: had its creation used up the watch events Crossplane's XR
	// circuit breaker allows, the edit would reach the binding, and the
	// attachment the claim, only at the breaker's probes, 30 s apart.
	s.setFIPPort(t, "")
	s.labelClaim(t)
	took := s.waitAttached(t, "cutover (label edit)")
	cb, _ := s.breaker(t)
	t.Logf("cutover by label edit: floating IP attached %s after the VM's port let go of it; %s",
		took.Round(100*time.Millisecond), cb)
	if took > labelEditBound {
		t.Errorf("cutover by label edit took %s, want at most %s", took.Round(100*time.Millisecond), labelEditBound)
	}
	eventually(t, "cutover: the gateway's Deployment runs 1 replica", 60*time.Second, func() (bool, string) {
		r := s.replicas(t, gw)
		return r == 1, fmt.Sprintf("%d replicas", r)
	})
	portID := str(s.get(t, s.xr.gvk, tenant, pinned), "status", "port", "id")
	if got := s.fipPort(t); got != portID {
		t.Fatalf("cutover: Neutron has the floating IP on port %q, want the gateway's port %s", got, portID)
	}

	// 3. Rollback: the floating IP goes back to the VM; the binding fails
	// harmlessly and the Deployment goes back to 0.
	s.rollback(t)
	eventually(t, "rollback: the gateway's Deployment goes back to 0 replicas", 60*time.Second, func() (bool, string) {
		r := s.replicas(t, gw)
		return r == 0, fmt.Sprintf("%d replicas", r)
	})

	// The claim's creation, its cutover and a rollback are what an
	// operator does in a claim's first minutes: they must not open the
	// XR's circuit breaker (cluster/local/up.sh says what they cost), or
	// each later change would reach the claim only at its probes, every
	// 30 s for 5 minutes. A second cutover and rollback within the same
	// minute may (docs/circuit-breaker.md: about 40 events each, with the
	// creation's 120-180 near the burst of 200).
	if cb, opens := s.breaker(t); opens > 0 {
		t.Errorf("the runbook opened the XR's circuit breaker: %s", cb)
	}

	// Cutover again with no nudge: the binding's backoff retry attaches it.
	s.setFIPPort(t, "")
	took = s.waitAttached(t, "cutover (backoff)")
	cb, _ = s.breaker(t)
	t.Logf("cutover by backoff: floating IP attached %s after the VM's port let go of it; %s",
		took.Round(100*time.Millisecond), cb)
	s.rollback(t)

	// Deleting the claim removes every composed resource and leaves the
	// customer's floating IP on the VM.
	s.deleteClaim(t, pinned)
	if got := s.fipPort(t); got != s.runbook.VMPortID {
		t.Errorf("after deleting the claim Neutron has the floating IP on %q, want it on the VM's port %s", got, s.runbook.VMPortID)
	}
	if n := s.count(t, neutronName); n != 0 {
		t.Errorf("after deleting the claim %d Neutron ports and security groups named %s remain", n, neutronName)
	}

	t.Run("allocated floating IP", func(t *testing.T) { allocated(t, s) })
}

// labelEditBound is how soon after a label edit on the claim the claim must
// show the floating IP attached: it takes 1-3 s; the XR circuit breaker's
// half-open probes, which would carry the edit if the breaker were open,
// come only every 30 s.
const labelEditBound = 15 * time.Second

// labelClaim sets the label cutover on the pinned claim to the time of day,
// as the runbook's `kubectl label ... cutover=$(date +%s) --overwrite`.
func (s *stack) labelClaim(t *testing.T) {
	t.Helper()
	c := s.get(t, s.xr.gvk, tenant, pinned)
	labels := c.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	labels["cutover"] = time.Now().Format("150405.000")
	c.SetLabels(labels)
	if err := s.kube.Update(context.Background(), c); err != nil {
		t.Fatal(err)
	}
}

// breaker summarises Crossplane's XR circuit breaker counters (watch
// events allowed, dropped, and how often it opened) from its metrics, and
// returns how often it opened.
func (s *stack) breaker(t *testing.T) (summary string, opens int) {
	t.Helper()
	l, opens, _ := s.breakerCounters(t)
	return "XR circuit breaker: " + strings.Join(l, ", "), opens
}

// breakerCounters returns the lines of Crossplane's metrics that are the
// XR circuit breaker's (without the composite's controller label), how
// often it opened and how many events it allowed.
func (s *stack) breakerCounters(t *testing.T) (lines []string, opens, allowed int) {
	t.Helper()
	resp, err := http.Get("http://127.0.0.1:" + s.xpMetricsPort + "/metrics")
	if err != nil {
		t.Fatalf("Crossplane's metrics: %v", err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "circuit_breaker_") {
			continue
		}
		line = strings.Replace(line, `controller="composite/`+s.xr.crd+`",`, "", 1)
		lines = append(lines, line)
		value := line[strings.LastIndex(line, " ")+1:]
		switch {
		case strings.HasPrefix(line, "circuit_breaker_opens_total"):
			_, _ = fmt.Sscan(value, &opens)
		case strings.HasPrefix(line, `circuit_breaker_events_total{result="Allowed"}`):
			_, _ = fmt.Sscan(value, &allowed)
		}
	}
	return lines, opens, allowed
}

// waitAttached waits until the pinned claim shows its floating IP attached
// and returns how long that took.
func (s *stack) waitAttached(t *testing.T, what string) time.Duration {
	t.Helper()
	return eventually(t, what+": the claim shows the floating IP attached", 3*time.Minute, func() (bool, string) {
		c := s.get(t, s.xr.gvk, tenant, pinned)
		_, msg := condition(c, "Synced", "status", "floatingIP", "conditions")
		return str(c, "status", "floatingIP", "attached") == "true", msg
	})
}

// rollback takes the floating IP off the gateway's port, puts it back on
// the VM's and waits for the binding to report the floating IP on another port.
func (s *stack) rollback(t *testing.T) {
	t.Helper()
	s.setFIPPort(t, "")
	s.setFIPPort(t, s.runbook.VMPortID)
	eventually(t, "rollback: the claim reports the floating IP on another port again (the VM's)", 3*time.Minute, func() (bool, string) {
		c := s.get(t, s.xr.gvk, tenant, pinned)
		st, msg := condition(c, "Synced", "status", "floatingIP", "conditions")
		return st == "False" && s.onAnotherPort(msg) && str(c, "status", "floatingIP", "attached") == "false", msg
	})
	if got := s.fipPort(t); got != s.runbook.VMPortID {
		t.Fatalf("rollback: Neutron has the floating IP on %q, want the VM's port %s", got, s.runbook.VMPortID)
	}
}

// allocated applies the allocated-FIP example, waits until everything up to
// the Deployment is there and checks that deleting it releases the address.
func allocated(t *testing.T, s *stack) {
	const name = "new-branch"
	b, err := os.ReadFile(filepath.Join(s.state, "claims", "allocated-fip.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal(b, &u.Object); err != nil {
		t.Fatal(err)
	}
	if err := s.kube.Create(context.Background(), u); err != nil {
		t.Fatal(err)
	}
	var address string
	took := eventually(t, "the allocated claim's floating IP is attached and its gateway Deployment runs", 3*time.Minute, func() (bool, string) {
		c := s.get(t, s.xr.gvk, tenant, name)
		address = str(c, "status", "floatingIP", "address")
		gw := str(c, "status", "gateway", "name")
		if str(c, "status", "floatingIP", "attached") != "true" || gw == "" {
			return false, "attached " + str(c, "status", "floatingIP", "attached")
		}
		return s.replicas(t, gw) == 1, "gateway " + gw
	})
	t.Logf("allocated claim: floating IP %s attached and Deployment at 1 replica %s after create", address, took.Round(100*time.Millisecond))
	s.deleteClaim(t, name)
	pages, err := floatingips.List(s.network, floatingips.ListOpts{FloatingIP: address}).AllPages(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if l, _ := floatingips.ExtractFloatingIPs(pages); len(l) != 0 {
		t.Errorf("the allocated floating IP %s still exists after deleting the claim: %+v", address, l)
	}
}

// deleteClaim deletes a claim and waits until it and every managed
// resource composed for it are gone.
func (s *stack) deleteClaim(t *testing.T, name string) {
	t.Helper()
	c := s.get(t, s.xr.gvk, tenant, name)
	if err := s.kube.Delete(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	s.waitClaimGone(t, name, time.Now())
}

// waitClaimGone waits until the claim name, deleted at deleted, and every
// managed resource composed for it are gone.
func (s *stack) waitClaimGone(t *testing.T, name string, deleted time.Time) {
	t.Helper()
	eventually(t, "deleting claim "+name+" removes it and its managed resources", 3*time.Minute, func() (bool, string) {
		if s.get(t, s.xr.gvk, tenant, name) != nil {
			return false, "the claim exists"
		}
		for _, k := range s.xr.managedKinds() {
			l := &unstructured.UnstructuredList{}
			l.SetGroupVersionKind(k.GroupVersion().WithKind(k.Kind + "List"))
			if err := s.kube.List(context.Background(), l, s.xr.composedBy(name)); err != nil {
				return false, err.Error()
			}
			if len(l.Items) > 0 {
				return false, k.Kind + " " + l.Items[0].GetName() + " exists"
			}
		}
		return true, ""
	})
	t.Logf("claim %s and its managed resources deleted in %s", name, time.Since(deleted).Round(100*time.Millisecond))
}

// fipPort returns the port the runbook's floating IP is on in Neutron, ""
// when it is unassociated.
func (s *stack) fipPort(t *testing.T) string {
	t.Helper()
	f, err := floatingips.Get(context.Background(), s.network, s.runbook.FloatingIPID).Extract()
	if err != nil {
		t.Fatalf("the runbook's floating IP: %v", err)
	}
	return f.PortID
}

// setFIPPort associates the runbook's floating IP with a port, or
// disassociates it for "" (openstack floating ip set/unset --port).
func (s *stack) setFIPPort(t *testing.T, port string) {
	t.Helper()
	setFIPPort(t, s.network, s.runbook.FloatingIPID, port)
}

// setFIPPort associates floating IP id with a port, or disassociates it
// for "".
func setFIPPort(t *testing.T, network *gophercloud.ServiceClient, id, port string) {
	t.Helper()
	if _, err := floatingips.Update(context.Background(), network, id, floatingips.UpdateOpts{PortID: &port}).Extract(); err != nil {
		t.Fatalf("set the floating IP's port to %q: %v", port, err)
	}
}

// replicas returns the gateway Deployment's spec.replicas, -1 while there is
// none (the claim names its gateway before the Gateway has made it).
func (s *stack) replicas(t *testing.T, name string) int32 {
	t.Helper()
	d := &appsv1.Deployment{}
	err := s.kube.Get(context.Background(), client.ObjectKey{Namespace: tenant, Name: name}, d)
	if apierrors.IsNotFound(err) {
		return -1
	}
	if err != nil {
		t.Fatalf("the gateway's Deployment %s/%s: %v", tenant, name, err)
	}
	if d.Spec.Replicas == nil {
		return 1
	}
	return *d.Spec.Replicas
}

// count returns how many Neutron ports and security groups are named name.
func (s *stack) count(t *testing.T, name string) int {
	t.Helper()
	pp, err := ports.List(s.network, ports.ListOpts{Name: name}).AllPages(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	pl, _ := ports.ExtractPorts(pp)
	gp, err := groups.List(s.network, groups.ListOpts{Name: name}).AllPages(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	gl, _ := groups.ExtractGroups(gp)
	return len(pl) + len(gl)
}

// onAnotherPort says whether msg is the binding's message of the
// pre-stage: the pinned floating IP is on another port (the VM's), which it
// does not name, since in a project shared by tenants that port may be
// another namespace's.
func (s *stack) onAnotherPort(msg string) bool {
	return strings.Contains(msg, "floating IP "+s.runbook.FloatingIP+" is associated with another port") && !strings.Contains(msg, s.runbook.VMPortID)
}
