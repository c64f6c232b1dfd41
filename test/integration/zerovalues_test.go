//go:build integration

package integration

import (
	"bufio"
	"cmp"
	"context"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	"github.com/gophercloud/gophercloud/v2"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/extensions/layer3/floatingips"
	"github.com/gophercloud/gophercloud/v2/openstack/networking/v2/ports"
	corev1 "k8s.io/api/core/v1"
	extv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	gwv1alpha1 "github.com/ipsecgw/provider-ipsec/apis/cluster/gateway/v1alpha1"
	pcv1alpha1 "github.com/ipsecgw/provider-ipsec/apis/cluster/v1alpha1"
	"github.com/ipsecgw/provider-ipsec/internal/clients/openstack"
	"github.com/ipsecgw/provider-ipsec/test/crds"
	"github.com/ipsecgw/provider-ipsec/test/neutronproxy"
	"github.com/ipsecgw/provider-ipsec/test/topology"
	"github.com/ipsecgw/provider-ipsec/test/variants"
)

// These tests close the class of issue 14's IKEv1 defect (a CEL rule that
// read the optional mobike without has(), so a tunnel without it was
// refused, and one with mobike: false was admitted but failed at the
// provider's own update, which drops the false): every example of the
// provider's kinds, every managed resource of the crossplane render
// goldens and every variant of a minimal object of every kind (optional
// fields absent; each other enum value; each optional boolean false,
// derived from the CRD schema by package variants) is admitted by the real
// API server, and the provider's real controllers bring each to Synced=True
// and keep it there through their own updates of the object.

// providerGroups are the API groups of the provider's own kinds; the
// claim's group (vpn.ipsecgw.io) is the XRD's, validated in
// test/configuration.
var providerGroups = []string{"ipsecgw.io", "networking.ipsecgw.io", "gateway.ipsecgw.io"}

// fixtures are what the objects under test point at: Neutron IDs, the
// Gateways' namespace and the ProviderConfig. Port and FloatingIP make a
// fresh Neutron port on the tenant network and a fresh floating IP (its
// address), one per object that names one, so that no two bindings compete
// for one.
type fixtures struct {
	TenantNet, TenantSubnet, TenantCIDR, ExtNet, Router string
	Namespace, ProviderConfig                           string
	Port, FloatingIP                                    func() string
	// InUse says whether a port has the address (nil: none has).
	InUse func(address string) bool
	// fixedIPs maps a fixed IP an object of a group (the examples, or one
	// golden) asks for to one free on the tenant subnet: examples and
	// goldens all ask for 10.20.0.10.
	fixedIPs map[string]string
	next     int
}

// placeholders are fixtures for admission alone: well-formed and absent.
func placeholders(prefix string) *fixtures {
	id := func(n int) string { return fmt.Sprintf("00000000-0000-4000-8000-%012d", n) }
	return &fixtures{
		TenantNet: id(1), TenantSubnet: id(2), TenantCIDR: "10.20.0.0/24", ExtNet: id(3), Router: id(4),
		Namespace: prefix + "gateways", ProviderConfig: prefix + "pc",
		Port:       func() string { return id(5) },
		FloatingIP: func() string { return "203.0.113.99" },
	}
}

// minimal is one kind's minimal object and the optional fields it sets on
// purpose, each with the reason; every other field it sets is required.
type minimal struct {
	gk       schema.GroupKind
	object   string
	optional map[string]string
}

// minimalObjects returns the minimal object of every kind of the provider.
func minimalObjects(fx *fixtures) []minimal {
	pcRef := map[string]string{"providerConfigRef": "the test's own ProviderConfig: the default one belongs to other tests"}
	with := func(m map[string]string, kv ...string) map[string]string {
		out := map[string]string{}
		for k, v := range m {
			out[k] = v
		}
		for i := 0; i < len(kv); i += 2 {
			out[kv[i]] = kv[i+1]
		}
		return out
	}
	return []minimal{{
		gk: schema.GroupKind{Group: "ipsecgw.io", Kind: "ProviderConfig"},
		object: `{apiVersion: ipsecgw.io/v1alpha1, kind: ProviderConfig, spec: {credentials: {
			secretRef: {namespace: crossplane-system, name: openstack-clouds, key: clouds.yaml}, cloud: tenant-a}}}`,
		optional: map[string]string{"credentials.secretRef": "source defaults to Secret, which needs secretRef"},
	}, {
		gk:       schema.GroupKind{Group: "networking.ipsecgw.io", Kind: "Network"},
		object:   fmt.Sprintf(`{apiVersion: networking.ipsecgw.io/v1alpha1, kind: Network, spec: {forProvider: {}, providerConfigRef: {name: %s}}}`, fx.ProviderConfig),
		optional: with(pcRef, "forProvider", "empty, to hold the optional booleans that are varied (adminStateUp)"),
	}, {
		gk:       schema.GroupKind{Group: "networking.ipsecgw.io", Kind: "SecurityGroup"},
		object:   fmt.Sprintf(`{apiVersion: networking.ipsecgw.io/v1alpha1, kind: SecurityGroup, spec: {forProvider: {name: zero-sg}, providerConfigRef: {name: %s}}}`, fx.ProviderConfig),
		optional: pcRef,
	}, {
		gk: schema.GroupKind{Group: "networking.ipsecgw.io", Kind: "Port"},
		object: fmt.Sprintf(`{apiVersion: networking.ipsecgw.io/v1alpha1, kind: Port, spec: {forProvider: {networkId: %s}, providerConfigRef: {name: %s}}}`,
			fx.TenantNet, fx.ProviderConfig),
		optional: with(pcRef, "forProvider.networkId", "a port needs networkId, networkIdRef or networkIdSelector"),
	}, {
		gk: schema.GroupKind{Group: "networking.ipsecgw.io", Kind: "FloatingIPBinding"},
		object: fmt.Sprintf(`{apiVersion: networking.ipsecgw.io/v1alpha1, kind: FloatingIPBinding, spec: {forProvider: {floatingNetworkId: %s, portId: %s}, providerConfigRef: {name: %s}}}`,
			fx.ExtNet, fx.Port(), fx.ProviderConfig),
		optional: with(pcRef,
			"forProvider.floatingNetworkId", "a binding needs floatingIpAddress or floatingNetworkId; a pinned address must exist, an allocated one can always be had",
			"forProvider.portId", "the port to bind to (a binding without one waits for it and is never Synced)"),
	}, {
		gk: schema.GroupKind{Group: "networking.ipsecgw.io", Kind: "RouterRoutes"},
		object: fmt.Sprintf(`{apiVersion: networking.ipsecgw.io/v1alpha1, kind: RouterRoutes, spec: {forProvider: {routerId: %s, routes: [{destination: 192.0.2.0/24, nexthop: %s}]}, providerConfigRef: {name: %s}}}`,
			fx.Router, hostIn(fx.TenantCIDR, 250), fx.ProviderConfig),
		optional: with(pcRef, "forProvider.routes[*].nexthop", "every route needs a nexthop: its own, nexthop or a Port's"),
	}, {
		gk: schema.GroupKind{Group: "networking.ipsecgw.io", Kind: "NodeAddressPairs"},
		object: fmt.Sprintf(`{apiVersion: networking.ipsecgw.io/v1alpha1, kind: NodeAddressPairs, spec: {forProvider: {portId: %s}, providerConfigRef: {name: %s}}}`,
			fx.Port(), fx.ProviderConfig),
		optional: with(pcRef, "forProvider.portId", "the gateway's port, whose address the pairs carry (one without waits for it and is never Synced)"),
	}, {
		gk: schema.GroupKind{Group: "gateway.ipsecgw.io", Kind: "Gateway"},
		object: fmt.Sprintf(`{apiVersion: gateway.ipsecgw.io/v1alpha1, kind: Gateway, spec: {providerConfigRef: {name: %s}, forProvider: {
			namespace: %s,
			endpoint: {privateAddress: 10.20.0.10, prefixLength: 24, gateway: 10.20.0.1, macAddress: "fa:16:3e:00:00:0a", localId: 203.0.113.10},
			tunnels: [{name: branch-a, peer: {address: 198.51.100.7}, ikeVersion: 2,
				ikeProposals: [aes256-sha256-modp2048], espProposals: [aes256gcm16],
				preSharedKeySecretRef: {name: zero-psk, key: psk},
				trafficSelectors: [{local: 100.64.0.0/24, remote: 192.168.10.0/24}]}]}}}`, fx.ProviderConfig, fx.Namespace),
		optional: with(pcRef, "forProvider.tunnels[*].preSharedKeySecretRef", "a tunnel needs exactly one of a PSK and a certificate"),
	}}
}

// hostIn returns the n-th address of prefix.
func hostIn(prefix string, n int) string {
	a := netip.MustParsePrefix(prefix).Addr().As4()
	a[3] += byte(n)
	return netip.AddrFrom4(a).String()
}

// packageCRDs returns the CRDs of package/crds, by file.
func packageCRDs(t *testing.T) map[string]*extv1.CustomResourceDefinition {
	t.Helper()
	out, err := crds.Read(crdDir)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// crdSchemas returns the root schema of every CRD in package/crds by kind.
func crdSchemas(t *testing.T) map[schema.GroupKind]*extv1.JSONSchemaProps {
	t.Helper()
	out := map[schema.GroupKind]*extv1.JSONSchemaProps{}
	for _, crd := range packageCRDs(t) {
		out[schema.GroupKind{Group: crd.Spec.Group, Kind: crd.Spec.Names.Kind}] = crd.Spec.Versions[0].Schema.OpenAPIV3Schema
	}
	return out
}

// underTest is an object to apply, where it comes from, and whether the
// test gave it its external name (so the provider need not write one).
type underTest struct {
	source string
	obj    *unstructured.Unstructured
	named  bool
}

func (u underTest) String() string {
	return fmt.Sprintf("%s %s (%s)", u.obj.GetKind(), u.obj.GetName(), u.source)
}

// variantsOf returns every variant of every kind's minimal object, named
// prefix + kind + index, and fails t when a minimal object sets an optional
// field it does not declare or when no kind of package/crds has one.
func variantsOf(t *testing.T, prefix string, fx *fixtures, kinds func(schema.GroupKind) bool) []underTest {
	t.Helper()
	schemas := crdSchemas(t)
	var out []underTest
	covered := map[schema.GroupKind]bool{}
	for _, m := range minimalObjects(fx) {
		covered[m.gk] = true
		if !kinds(m.gk) {
			continue
		}
		root := schemas[m.gk]
		if root == nil {
			t.Fatalf("no CRD of %s", m.gk)
		}
		obj := map[string]any{}
		if err := yaml.Unmarshal([]byte(m.object), &obj); err != nil {
			t.Fatalf("minimal %s: %v", m.gk.Kind, err)
		}
		spec := root.Properties["spec"]
		declared := make([]string, 0, len(m.optional))
		for k := range m.optional {
			declared = append(declared, k)
		}
		sort.Strings(declared)
		if got := variants.Optional(&spec, obj["spec"]); !slices.Equal(got, declared) {
			t.Errorf("the minimal %s sets the optional fields %v, want only %v (declare each with its reason)", m.gk.Kind, got, declared)
		}
		vs, absent, err := variants.Of(root, obj, "spec")
		if err != nil {
			t.Fatalf("variants of %s: %v", m.gk.Kind, err)
		}
		if len(absent) > 0 {
			t.Logf("%s: optional booleans not varied, their object being absent from the minimal %s: %s", m.gk.Kind, m.gk.Kind, strings.Join(absent, ", "))
		}
		for i, v := range vs {
			u := &unstructured.Unstructured{Object: v.Object}
			u.SetName(fmt.Sprintf("%s%s-%d", prefix, strings.ToLower(m.gk.Kind), i))
			if m.gk.Kind == "ProviderConfig" && i == 0 {
				// The one every other object here uses.
				u.SetName(fx.ProviderConfig)
			}
			out = append(out, underTest{source: "variant " + v.Name, obj: u})
		}
	}
	// The namespaced twins (.m. groups) take their cluster kinds'
	// parameter types (TestTwinFields); TestNamespacedExamples and
	// TestNamespacedIsolation admit them.
	for gk := range schemas {
		if !covered[gk] && gk.Kind != "ProviderConfigUsage" && slices.Contains(providerGroups, gk.Group) {
			t.Errorf("kind %s has no minimal object: add one to minimalObjects", gk)
		}
	}
	return out
}

// documents returns the objects of the provider's kinds in the YAML files
// under dir (or the file dir).
func documents(t *testing.T, dir string) []underTest {
	t.Helper()
	var out []underTest
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".yaml") {
			return err
		}
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		r := utilyaml.NewYAMLReader(bufio.NewReader(f))
		for {
			doc, err := r.Read()
			if errors.Is(err, io.EOF) {
				return nil
			}
			if err != nil {
				return fmt.Errorf("%s: %w", path, err)
			}
			u := &unstructured.Unstructured{}
			if err := yaml.Unmarshal(doc, &u.Object); err != nil {
				return fmt.Errorf("%s: %w", path, err)
			}
			if len(u.Object) == 0 || !slices.Contains(providerGroups, u.GroupVersionKind().Group) {
				continue
			}
			rel, _ := filepath.Rel(repoRoot, path)
			out = append(out, underTest{source: rel, obj: u})
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// examples returns every example of the provider's kinds, each name given
// prefix, and the references between them renamed alike.
func examples(t *testing.T, prefix string) []underTest {
	t.Helper()
	out := documents(t, filepath.Join(repoRoot, "examples"))
	if len(out) < 8 {
		t.Fatalf("%d examples of the provider's kinds, want every one of examples/ (at least 8)", len(out))
	}
	for i := range out {
		o := out[i].obj
		// examples/gitops/platform has a ProviderConfig "default" too.
		p := prefix
		if strings.Contains(out[i].source, "gitops") {
			p += "gitops-"
		}
		o.SetName(p + o.GetName())
		renameRefs(o.Object, prefix)
		out[i].named = meta.GetExternalName(o) != ""
	}
	return out
}

// renameRefs prefixes the name of every reference (xxxRef, xxxRefs) under
// v, the ProviderConfig's included.
func renameRefs(v any, prefix string) {
	switch v := v.(type) {
	case map[string]any:
		for k, c := range v {
			switch {
			case strings.HasSuffix(k, "Ref"):
				if m, ok := c.(map[string]any); ok && m["name"] != nil && !strings.HasSuffix(k, "SecretRef") && k != "secretRef" {
					m["name"] = prefix + m["name"].(string)
				}
			case strings.HasSuffix(k, "Refs"):
				for _, e := range asList(c) {
					if m, ok := e.(map[string]any); ok && m["name"] != nil {
						m["name"] = prefix + m["name"].(string)
					}
				}
			default:
				renameRefs(c, prefix)
			}
		}
	case []any:
		for _, c := range v {
			renameRefs(c, prefix)
		}
	}
}

func asList(v any) []any { l, _ := v.([]any); return l }

// beyondDefaultNeutron are the goldens that a Neutron with its default
// quotas refuses, as a real cloud with those defaults would, by case and
// why: the lab's Neutron keeps the defaults.
var beyondDefaultNeutron = map[string]string{
	"many-subnets": "its Port asks for 20 allowed address pairs, Neutron's default max_allowed_address_pair is 10 (docs/api.md: a routed claim with more than 10 client subnets needs a cloud that allows them)",
}

// withoutGateway are the goldens that compose no Gateway, by case and why.
var withoutGateway = map[string]string{
	"recomposed-allocated-routed": "composed anew after a Provider package deletion: the Gateway waits for the adopted port's observed address",
}

// goldens returns the managed resources that the crossplane render goldens
// compose, each named prefix + case + its composition resource name and
// controlled by a stand-in for its composite (so that matchControllerRef
// selectors resolve among them, as under Crossplane).
func goldens(t *testing.T, prefix string) []underTest {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(repoRoot, "test", "configuration", "testdata", "*", "rendered.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no render goldens: %v", err)
	}
	var out []underTest
	gateways, cases := 0, 0
	for _, f := range files {
		c := filepath.Base(filepath.Dir(f))
		if why, ok := beyondDefaultNeutron[c]; ok {
			t.Logf("golden %s left out: %s", c, why)
			continue
		}
		if strings.HasPrefix(c, "namespaced-") {
			// The namespaced XR's: namespaced MRs in the composite's
			// namespace, owned by a namespaced composite; these tests
			// stand in for the cluster-scoped composite of the claim.
			t.Logf("golden %s left out: the namespaced IPsecGateway's (TestNamespaced* cover its kinds)", c)
			continue
		}
		if _, ok := withoutGateway[c]; !ok {
			cases++
		}
		uid := types.UID(fmt.Sprintf("00000000-0000-4000-8000-%012d", len(out)+1))
		for _, d := range documents(t, f) {
			o := d.obj
			owner := metav1.OwnerReference{APIVersion: "vpn.ipsecgw.io/v1alpha1", Kind: "XIPsecGateway", Name: prefix + c, UID: uid, Controller: ptr.To(true)}
			o.SetOwnerReferences([]metav1.OwnerReference{owner})
			o.SetGenerateName("")
			o.SetName(prefix + c + "-" + o.GetAnnotations()["crossplane.io/composition-resource-name"])
			if o.GetKind() == "Gateway" {
				gateways++
			}
			out = append(out, d)
		}
	}
	if gateways != cases {
		t.Fatalf("%d composed Gateways in %d goldens that compose one (withoutGateway names the others), want one each", gateways, cases)
	}
	return out
}

// localize points an example's or golden's object at the fixtures: Neutron
// IDs, fresh ports and floating IPs, free fixed IPs, the Gateways'
// namespace and the test's ProviderConfig. A Network imported by external
// name imports the tenant network.
func (fx *fixtures) localize(u underTest) {
	o := u.obj
	if o.GetKind() == "Network" && meta.GetExternalName(o) != "" {
		meta.SetExternalName(o, fx.TenantNet)
	}
	if !strings.HasPrefix(u.source, "examples") && slices.Contains([]string{"SecurityGroup", "Port", "FloatingIPBinding"}, o.GetKind()) {
		// A golden's composite recorded the IDs of its own cloud's
		// objects, which this Neutron never had: they are made anew here,
		// as a first composition makes them. Adopting recorded objects is
		// TestRecoverProviderDeletion's.
		meta.RemoveAnnotations(o, meta.AnnotationKeyExternalName)
	}
	if o.GetKind() == "ProviderConfig" {
		_ = unstructured.SetNestedField(o.Object, map[string]any{"namespace": "crossplane-system", "name": "openstack-clouds", "key": "clouds.yaml"}, "spec", "credentials", "secretRef")
		_ = unstructured.SetNestedField(o.Object, "tenant-a", "spec", "credentials", "cloud")
		return
	}
	// An example names an example ProviderConfig (renamed like it), or
	// none; a golden's is the composite's.
	if _, named, _ := unstructured.NestedString(o.Object, "spec", "providerConfigRef", "name"); !named || !strings.HasPrefix(u.source, "examples") {
		_ = unstructured.SetNestedField(o.Object, fx.ProviderConfig, "spec", "providerConfigRef", "name")
	}
	fp, _ := o.Object["spec"].(map[string]any)["forProvider"].(map[string]any)
	// The examples refer to each other across files; a golden's objects
	// to each other.
	group := u.source
	if strings.HasPrefix(group, "examples") {
		group = "examples"
	}
	fx.rewrite(fp, "", group)
}

func (fx *fixtures) rewrite(v any, key, group string) any {
	switch v := v.(type) {
	case map[string]any:
		for k, c := range v {
			v[k] = fx.rewrite(c, k, group)
		}
		return v
	case []any:
		for i, c := range v {
			v[i] = fx.rewrite(c, key, group)
		}
		return v
	case string:
		switch key {
		case "networkId":
			return fx.TenantNet
		case "subnetId":
			return fx.TenantSubnet
		case "floatingNetworkId":
			return fx.ExtNet
		case "routerId":
			return fx.Router
		case "portId":
			return fx.Port()
		case "floatingIpAddress":
			return fx.FloatingIP()
		case "namespace":
			return fx.Namespace
		case "ipAddress", "fixedIp":
			a, err := netip.ParseAddr(v)
			if err != nil || !netip.MustParsePrefix(fx.TenantCIDR).Contains(a) {
				return v
			}
			if fx.fixedIPs == nil {
				fx.fixedIPs = map[string]string{}
			}
			k := group + " " + v
			// .230 to .254; past them the object keeps its own address
			// and fails naming it.
			for ; fx.fixedIPs[k] == "" && 230+fx.next < 255; fx.next++ {
				if a := hostIn(fx.TenantCIDR, 230+fx.next); fx.InUse == nil || !fx.InUse(a) {
					fx.fixedIPs[k] = a
				}
			}
			return cmp.Or(fx.fixedIPs[k], v)
		}
	}
	return v
}

// TestAdmissionAcceptsEveryObject creates (dry run) every example, every
// composed managed resource of the render goldens and every variant of the
// minimal objects: the API server, with the CRDs' schemas and CEL rules,
// must accept each as written.
func TestAdmissionAcceptsEveryObject(t *testing.T) {
	fx := placeholders("adm-")
	all := slices.Concat(examples(t, "adm-"), goldens(t, "adm-"), variantsOf(t, "adm-", fx, func(schema.GroupKind) bool { return true }))
	for _, u := range all {
		if err := kube.Create(context.Background(), u.obj, client.DryRunAll); err != nil {
			t.Errorf("%s is refused: %v", u, err)
		}
	}
	t.Logf("%d objects admitted", len(all))
}

// backoffBound bounds a wait for a reconcile that failed a few times
// (its reference not yet resolvable, Neutron slow) and is then tried
// again: twice the backoff's one-minute ceiling (crossplane-runtime's).
const backoffBound = 2 * time.Minute

// syncAll creates objs and waits until each is Synced=True with an
// external name the provider wrote (unless the test named it) and, unless
// it is a Gateway (whose pod never runs in envtest), Ready=True; a
// ProviderConfig that an object here uses until it counts users. Then it keeps reading them for
// settle while the provider goes on observing and updating them: each
// must stay Synced=True at every read. It reports which zero values the
// provider's writes dropped.
//
// Ports that ask for no fixed IP are created last, once those that ask
// for one have their Neutron ports: Neutron gives a port that asks for
// none a random free address of the subnet, which could be one asked for.
// The objects that take a Port by reference or selector come with them,
// so that they do not back off waiting for one.
func syncAll(t *testing.T, objs []underTest, settle time.Duration) {
	t.Helper()
	ctx := context.Background()
	var first, fixed, rest []underTest
	for _, u := range objs {
		ips, _, _ := unstructured.NestedSlice(u.obj.Object, "spec", "forProvider", "fixedIps")
		switch {
		case slices.ContainsFunc(ips, func(ip any) bool { return ip.(map[string]any)["ipAddress"] != nil }):
			first, fixed = append(first, u), append(fixed, u)
		case u.obj.GetKind() == "Port" || takesPort(u.obj):
			rest = append(rest, u)
		default:
			first = append(first, u)
		}
	}
	t.Cleanup(func() { deleteAll(t, objs) })
	used := map[string]bool{}
	for _, u := range objs {
		if n, ok, _ := unstructured.NestedString(u.obj.Object, "spec", "providerConfigRef", "name"); ok {
			used[n] = true
		}
	}
	start, logged := time.Now(), time.Now()
	for _, u := range first {
		if err := kube.Create(ctx, u.obj); err != nil {
			t.Fatalf("%s is refused: %v", u, err)
		}
	}
	// A Port whose security group is not created yet fails to resolve
	// its reference and backs off (1 s doubling to the 1 min ceiling, the
	// sum passing 60 s at its seventh try): on a loaded machine its
	// Neutron port comes a backoff later than its security group.
	eventually(t, backoffBound, "the Ports that ask for a fixed IP have their Neutron ports", func() error {
		for _, u := range fixed {
			got := u.obj.DeepCopy()
			if err := kube.Get(ctx, client.ObjectKeyFromObject(got), got); err != nil {
				return err
			}
			if meta.GetExternalName(got) == "" {
				return fmt.Errorf("%s: no external name yet (Synced: %s)", u, ucondition(got, "Synced").Message)
			}
		}
		return nil
	})
	for _, u := range rest {
		if err := kube.Create(ctx, u.obj); err != nil {
			t.Fatalf("%s is refused: %v", u, err)
		}
	}
	eventually(t, 180*time.Second, "every object is Synced=True and Ready=True", func() error {
		var pending []string
		for _, u := range objs {
			got := u.obj.DeepCopy()
			if err := kube.Get(ctx, client.ObjectKeyFromObject(got), got); err != nil {
				return err
			}
			s, r := ucondition(got, "Synced"), ucondition(got, "Ready")
			switch {
			case got.GetKind() == "ProviderConfig":
				// One that no object here uses is tested by admission alone.
				if n, _, _ := unstructured.NestedInt64(got.Object, "status", "users"); n == 0 && used[got.GetName()] {
					pending = append(pending, fmt.Sprintf("%s: no users", u))
				}
			case s.Status != corev1.ConditionTrue:
				pending = append(pending, fmt.Sprintf("%s: Synced %s %s", u, s.Status, s.Message))
			case got.GetKind() != "Gateway" && r.Status != corev1.ConditionTrue:
				pending = append(pending, fmt.Sprintf("%s: Ready %s %s", u, r.Status, r.Message))
			case !u.named && meta.GetExternalName(got) == "":
				pending = append(pending, fmt.Sprintf("%s: no external name yet", u))
			}
		}
		if len(pending) > 0 {
			err := fmt.Errorf("%d of %d not yet:\n%s", len(pending), len(objs), strings.Join(pending, "\n"))
			if time.Since(logged) > 30*time.Second {
				t.Logf("after %s: %v", time.Since(start).Round(time.Second), err)
				logged = time.Now()
			}
			return err
		}
		return nil
	})
	t.Logf("%d objects Synced=True (and Ready but Gateways) %s after create", len(objs), time.Since(start).Round(100*time.Millisecond))
	reads := 0
	notSynced := map[string]string{}
	for deadline := time.Now().Add(settle); time.Now().Before(deadline); time.Sleep(250 * time.Millisecond) {
		for _, u := range objs {
			got := u.obj.DeepCopy()
			if err := kube.Get(ctx, client.ObjectKeyFromObject(got), got); err != nil {
				t.Fatal(err)
			}
			if s := ucondition(got, "Synced"); got.GetKind() != "ProviderConfig" && s.Status != corev1.ConditionTrue {
				notSynced[u.String()] = fmt.Sprintf("Synced %s %s", s.Status, s.Message)
			}
		}
		reads++
	}
	for u, s := range notSynced {
		t.Errorf("%s while the provider observed and updated it: %s", u, s)
	}
	var dropped []string
	for _, u := range objs {
		got := u.obj.DeepCopy()
		if err := kube.Get(ctx, client.ObjectKeyFromObject(got), got); err != nil {
			t.Fatal(err)
		}
		if d := droppedFalse(u.obj.Object, got.Object, ""); len(d) > 0 {
			dropped = append(dropped, fmt.Sprintf("%s: %s", got.GetName(), strings.Join(d, ", ")))
		}
	}
	t.Logf("%d objects Synced=True at each of %d reads over %s", len(objs)-len(notSynced), reads, settle)
	if len(dropped) > 0 {
		t.Logf("false values that the provider's updates dropped (omitempty), still admitted and Synced:\n%s", strings.Join(dropped, "\n"))
	}
}

// takesPort says whether o takes a Port by reference or selector.
func takesPort(o *unstructured.Unstructured) bool {
	fp, _, _ := unstructured.NestedMap(o.Object, "spec", "forProvider")
	for _, k := range []string{"portIdRef", "portIdSelector", "nexthopPortRef", "nexthopPortSelector"} {
		if fp[k] != nil {
			return true
		}
	}
	return false
}

// ucondition returns u's condition of type ct (Status "" when it has none).
func ucondition(u *unstructured.Unstructured, ct string) xpCondition {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == ct {
			var out xpCondition
			b, _ := yaml.Marshal(m)
			_ = yaml.Unmarshal(b, &out)
			return out
		}
	}
	return xpCondition{}
}

// xpCondition is the part of a Crossplane condition the tests read.
type xpCondition struct {
	Status  corev1.ConditionStatus `json:"status"`
	Message string                 `json:"message"`
}

// droppedFalse lists the paths where sent has false and stored nothing.
func droppedFalse(sent, stored map[string]any, at string) []string {
	var out []string
	for k, v := range sent {
		p := strings.TrimPrefix(at+"."+k, ".")
		switch v := v.(type) {
		case bool:
			if _, ok := stored[k]; !ok && !v {
				out = append(out, p)
			}
		case map[string]any:
			s, _ := stored[k].(map[string]any)
			out = append(out, droppedFalse(v, s, p)...)
		case []any:
			s, _ := stored[k].([]any)
			for i, e := range v {
				em, ok := e.(map[string]any)
				if ok && i < len(s) {
					sm, _ := s[i].(map[string]any)
					out = append(out, droppedFalse(em, sm, fmt.Sprintf("%s[%d]", p, i))...)
				}
			}
		}
	}
	sort.Strings(out)
	return out
}

// deleteAll deletes objs, managed resources before ProviderConfigs, and
// waits until every one is gone (its finalizers removed by the provider).
func deleteAll(t *testing.T, objs []underTest) {
	t.Helper()
	ctx := context.Background()
	for _, pcs := range []bool{false, true} {
		var left []underTest
		for _, u := range objs {
			if (u.obj.GetKind() == "ProviderConfig") != pcs {
				continue
			}
			if err := kube.Delete(ctx, u.obj); err != nil && !kerrors.IsNotFound(err) {
				t.Errorf("delete %s: %v", u, err)
			}
			left = append(left, u)
		}
		if pcs {
			deleteUsages(t, left)
		}
		eventually(t, backoffBound+time.Minute, "every object is deleted", func() error {
			var still []string
			for _, u := range left {
				if err := kube.Get(ctx, client.ObjectKeyFromObject(u.obj), u.obj.DeepCopy()); !kerrors.IsNotFound(err) {
					still = append(still, u.String())
				}
			}
			if len(still) > 0 {
				return fmt.Errorf("still there: %s", strings.Join(still, ", "))
			}
			return nil
		})
	}
}

// deleteUsages deletes the ProviderConfigUsages of the ProviderConfigs pcs,
// whose managed resources are gone, as Kubernetes' garbage collector (which
// envtest does not run) would: they are owned by those managed resources.
func deleteUsages(t *testing.T, pcs []underTest) {
	t.Helper()
	l := &pcv1alpha1.ProviderConfigUsageList{}
	if err := kube.List(context.Background(), l); err != nil {
		t.Fatal(err)
	}
	for i := range l.Items {
		u := &l.Items[i]
		if slices.ContainsFunc(pcs, func(pc underTest) bool { return pc.obj.GetName() == u.ProviderConfigReference.Name }) {
			if err := kube.Delete(context.Background(), u); err != nil && !kerrors.IsNotFound(err) {
				t.Errorf("delete ProviderConfigUsage %s: %v", u.Name, err)
			}
		}
	}
}

// gatewayFixtures creates the namespace of the Gateways in objs and every
// Secret and Service they name (PSKs; exposure targets by Service name).
func gatewayFixtures(t *testing.T, ns string, objs []underTest) {
	t.Helper()
	ctx := context.Background()
	secrets := map[string]map[string]string{}
	services := map[string]bool{}
	var certs []map[string]any
	for _, u := range objs {
		if u.obj.GetKind() != "Gateway" {
			continue
		}
		tunnels, _, _ := unstructured.NestedSlice(u.obj.Object, "spec", "forProvider", "tunnels")
		for _, tn := range tunnels {
			if c, ok := tn.(map[string]any)["certificate"].(map[string]any); ok {
				certs = append(certs, c)
				continue
			}
			ref := tn.(map[string]any)["preSharedKeySecretRef"].(map[string]any)
			name := ref["name"].(string)
			if secrets[name] == nil {
				secrets[name] = map[string]string{}
			}
			secrets[name][ref["key"].(string)] = "zero-values-psk-" + name
		}
		exposures, _, _ := unstructured.NestedSlice(u.obj.Object, "spec", "forProvider", "exposures")
		for _, x := range exposures {
			if s, ok := x.(map[string]any)["target"].(map[string]any)["serviceName"].(string); ok {
				services[s] = true
			}
		}
	}
	objsToMake := []client.Object{&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}}
	for name, data := range secrets {
		objsToMake = append(objsToMake, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, StringData: data})
	}
	objsToMake = append(objsToMake, certFixtures(t, ns, certs)...)
	for name := range services {
		objsToMake = append(objsToMake, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 8443}}}})
	}
	create(t, objsToMake...)
	t.Cleanup(func() {
		for _, o := range objsToMake[1:] {
			_ = kube.Delete(ctx, o)
		}
	})
}

// certFixtures returns the Secrets and ConfigMaps the certificate
// sections certs name: a kubernetes.io/tls Secret with a certificate of a
// test CA (the tunnels take its subject as their identity) and the CA's
// certificate under each peerCA's key.
func certFixtures(t *testing.T, ns string, certs []map[string]any) []client.Object {
	t.Helper()
	if len(certs) == 0 {
		return nil
	}
	ca := topology.NewCA(t, pkix.Name{CommonName: "zero-values CA"})
	is := ca.Issue(t, pkix.Name{CommonName: "zero-values gateway"}, nil, time.Now().Add(-time.Hour), time.Now().Add(24*time.Hour), topology.SEC1)
	made := map[string]bool{}
	var out []client.Object
	for _, c := range certs {
		if name := c["secretName"].(string); !made["Secret "+name] {
			made["Secret "+name] = true
			out = append(out, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Type: corev1.SecretTypeTLS,
				Data: map[string][]byte{"tls.crt": is.Cert, "tls.key": is.Key}})
		}
		ref := c["peerCA"].(map[string]any)
		key, _ := ref["key"].(string)
		if key == "" {
			key = gwv1alpha1.DefaultCAKey
		}
		if name, ok := ref["secretName"].(string); ok && !made["Secret "+name] {
			made["Secret "+name] = true
			out = append(out, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Data: map[string][]byte{key: ca.Cert}})
		}
		if name, ok := ref["configMapName"].(string); ok && !made["ConfigMap "+name] {
			made["ConfigMap "+name] = true
			out = append(out, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Data: map[string]string{key: string(ca.Cert)}})
		}
	}
	return out
}

func isGateway(gk schema.GroupKind) bool { return gk.Kind == "Gateway" || gk.Kind == "ProviderConfig" }

// TestGatewaysSyncEveryObject runs the provider's controllers on every
// Gateway of the examples and render goldens and on every variant of the
// minimal Gateway (IKEv2 and IKEv1, each optional boolean false), all
// through a minimal ProviderConfig (the target cluster is envtest's, by
// the default injected identity): each becomes Synced=True, the provider
// writes its external name, and it stays Synced=True while the provider
// observes and updates it.
func TestGatewaysSyncEveryObject(t *testing.T) {
	startProvider(t, gatewayControllers())
	fx := placeholders("zgw-")
	var objs []underTest
	for _, u := range slices.Concat(examples(t, "zgw-"), goldens(t, "zgw-")) {
		if u.obj.GetKind() == "Gateway" {
			fx.localize(u)
			objs = append(objs, u)
		}
	}
	objs = append(objs, variantsOf(t, "zgw-", fx, isGateway)...)
	gatewayFixtures(t, fx.Namespace, objs)
	syncAll(t, objs, 5*time.Second)
}

// TestOpenStackKindsSyncEveryObject runs the provider's controllers, against
// the real Neutron, on every example and golden-composed managed resource
// of the OpenStack kinds and every variant of their minimal objects, all
// through a minimal ProviderConfig. Inputs are chosen to succeed against
// the fixtures: IDs are the fixture network, subnet, external network and
// router; a pinned floatingIpAddress is a floating IP the test allocates
// (one each, free); a portId is a port the test creates (one each); fixed
// IPs are free addresses of the tenant subnet; the imported Network
// imports the tenant network. Each becomes Synced=True with an external
// name the provider wrote and stays so while the provider observes and
// updates it; deleting them all completes.
func TestOpenStackKindsSyncEveryObject(t *testing.T) {
	e, sc := startNeutronProvider(t, openStackControllers)
	fx := &fixtures{
		TenantNet: e.Fixtures.TenantNet.ID, TenantSubnet: e.Fixtures.TenantSub.ID, TenantCIDR: e.Fixtures.TenantSub.CIDR,
		ExtNet: e.Fixtures.ExtNet.ID, Router: e.Fixtures.Router.ID,
		Namespace: "zos-gateways", ProviderConfig: "zos-pc",
	}
	// Fixture ports take addresses below those localize gives the objects
	// (from .230), so neither takes the other's.
	next := 200
	fx.Port = func() string {
		for ; next < 230 && fx.InUse(hostIn(fx.TenantCIDR, next)); next++ {
		}
		if next == 230 {
			t.Fatalf("no free address from .200 to .229 for a fixture port")
		}
		next++
		return fixturePort(t, sc, e.Fixtures.TenantNet.ID, e.Fixtures.TenantSub.ID, hostIn(fx.TenantCIDR, next-1))
	}
	fx.InUse = func(address string) bool {
		pages, err := ports.List(sc, ports.ListOpts{FixedIPs: []ports.FixedIPOpts{{IPAddress: address}}}).AllPages(context.Background())
		if err != nil {
			t.Fatalf("list ports with %s: %v", address, err)
		}
		ps, _ := ports.ExtractPorts(pages)
		return len(ps) > 0
	}
	fx.FloatingIP = func() string {
		return fixtureFloatingIP(t, sc, e.Fixtures.ExtNet.ID)
	}
	openStack := func(gk schema.GroupKind) bool {
		return gk.Group == "networking.ipsecgw.io" || gk.Kind == "ProviderConfig"
	}
	var objs []underTest
	for _, u := range slices.Concat(examples(t, "zos-"), goldens(t, "zos-")) {
		if openStack(u.obj.GroupVersionKind().GroupKind()) {
			fx.localize(u)
			objs = append(objs, u)
		}
	}
	objs = append(objs, variantsOf(t, "zos-", fx, openStack)...)
	raiseQuotasFor(t, e, objs)
	syncAll(t, objs, 5*time.Second)
}

// raiseQuotasFor raises the tenant's Neutron quotas by what objs create
// (each SecurityGroup with up to 10 rules, each Port and FloatingIPBinding
// with a fixture of its own) until t ends: the objects are more than
// Neutron's default quotas allow one project, as a real cloud's defaults
// would refuse.
func raiseQuotasFor(t *testing.T, e *openStackEnv, objs []underTest) {
	t.Helper()
	var more neutronproxy.Quotas
	for _, u := range objs {
		switch u.obj.GetKind() {
		case "SecurityGroup":
			more.SecurityGroups++
			more.SecurityGroupRules += 10
		case "Port":
			more.Ports += 2
		case "FloatingIPBinding":
			more.Ports++
			more.FloatingIPs += 2
		}
	}
	restore, err := neutronproxy.RaiseQuotas(context.Background(), e.CloudsYAML, "admin", e.Fixtures.Project.ID, more)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := restore(context.Background()); err != nil {
			t.Error(err)
		}
	})
}

// fixturePort creates an unbound port on network with address on subnet
// and deletes it when t ends; it returns its ID.
func fixturePort(t *testing.T, sc *gophercloud.ServiceClient, network, subnet, address string) string {
	t.Helper()
	p, err := ports.Create(context.Background(), sc, ports.CreateOpts{NetworkID: network, Name: "zero-values-fixture",
		FixedIPs: []ports.IP{{SubnetID: subnet, IPAddress: address}}}).Extract()
	if err != nil {
		t.Fatalf("create a fixture port: %v", err)
	}
	t.Cleanup(func() {
		if err := ports.Delete(context.Background(), sc, p.ID).ExtractErr(); err != nil && !openstack.IsNotFound(err) {
			t.Errorf("delete fixture port %s: %v", p.ID, err)
		}
	})
	return p.ID
}

// fixtureFloatingIP allocates a floating IP from network, to be pinned,
// and releases it when t ends; it returns its address.
func fixtureFloatingIP(t *testing.T, sc *gophercloud.ServiceClient, network string) string {
	t.Helper()
	f, err := floatingips.Create(context.Background(), sc, floatingips.CreateOpts{FloatingNetworkID: network, Description: "zero-values fixture"}).Extract()
	if err != nil {
		t.Fatalf("allocate a fixture floating IP: %v", err)
	}
	t.Cleanup(func() {
		if err := floatingips.Delete(context.Background(), sc, f.ID).ExtractErr(); err != nil && !openstack.IsNotFound(err) {
			t.Errorf("release fixture floating IP %s: %v", f.FloatingIP, err)
		}
	})
	return f.FloatingIP
}
