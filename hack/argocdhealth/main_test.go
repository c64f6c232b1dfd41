package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	lua "github.com/yuin/gopher-lua"
	"sigs.k8s.io/yaml"
)

const (
	healthDir = "../../examples/gitops/argocd/health"
	xrd       = "../../package/configuration/zz_generated_definition.yaml"
	generated = "../../examples/gitops/argocd/zz_generated_argocd-cm.yaml"
)

// TestGenerated fails when zz_generated_argocd-cm.yaml is not what the
// scripts, the XRD and the API types give (make generate writes it).
func TestGenerated(t *testing.T) {
	want, err := render(healthDir, xrd)
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(generated)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("%s is out of date (make generate): -want +got:\n%s", generated, diff)
	}
}

// health is what an Argo CD health check returns.
type health struct {
	Status  string
	Message string
}

// TestHealth runs the health checks of the generated argocd-cm patch, as
// Argo CD runs them, on claims and managed resources captured from the
// local stack (testdata/README.md says how) and on the pre-staged claim
// with its Synced condition turned False, as Crossplane sets it when it
// cannot apply the composite resource.
func TestHealth(t *testing.T) {
	scripts := generatedScripts(t)
	const (
		gwPort     = "42d94d0e-a2e7-498d-8e48-3e9b7147839c"
		notOnPort  = "update failed: floating IP 203.0.113.10 is associated with another port, not this binding's port " + gwPort + ": disassociate it there first (runbook: cutover, openstack floating ip unset --port 203.0.113.10), or pin another address"
		preStaged  = "spec.forProvider.active is false: configuration is rendered, the Deployment runs 0 replicas"
		podUnready = "the gateway pod is not ready (0 of 1 replicas ready)"
		celError   = `cannot update managed resource: Gateway.gateway.ipsecgw.io "routed-branch-q2xj2-e1c814eee616" is invalid: spec.forProvider: Invalid value: "object": no such key: exposures evaluating rule: exposures and reverseExposures are for mode nat; in mode routed the tenant network reaches client subnets directly`
		notSynced  = "cannot bind and sync claim with composite resource: cannot apply composite resource: the server is currently unable to handle the request"
		unmapped   = `node node-2: spec.providerID "kind://docker/node-2" is not openstack:///<instance UUID>: run the OpenStack cloud provider (or set it so), or leave the node out with spec.forProvider.nodeSelector`
	)
	healthy := health{Status: "Healthy"}
	// namespaced makes a captured managed resource its namespaced twin
	// (networking.m.ipsecgw.io, gateway.m.ipsecgw.io), whose status has
	// the same shape.
	namespaced := func(obj map[string]any) {
		group := "networking.m.ipsecgw.io"
		if obj["kind"] == "Gateway" {
			group = "gateway.m.ipsecgw.io"
		}
		obj["apiVersion"] = group + "/v1alpha1"
		obj["metadata"].(map[string]any)["namespace"] = "tenant-a"
	}
	cases := map[string]struct {
		file, kind, name string
		// edit, when set, changes the captured object before the check.
		edit func(obj map[string]any)
		want health
	}{
		"pre-stage: claim waits for the floating IP another port holds": {
			file: "prestaged", kind: "IPsecGateway", name: "branch-office",
			want: health{"Progressing", "floating IP 203.0.113.10 is not attached yet: " + notOnPort},
		},
		"pre-stage: security group": {file: "prestaged", kind: "SecurityGroup", want: healthy},
		"pre-stage: port":           {file: "prestaged", kind: "Port", want: healthy},
		"pre-stage: floating IP binding fails harmlessly": {
			file: "prestaged", kind: "FloatingIPBinding",
			want: health{"Degraded", notOnPort},
		},
		"pre-stage: gateway rendered, 0 replicas": {
			file: "prestaged", kind: "Gateway",
			want: health{"Progressing", "DeploymentReady: " + preStaged},
		},
		"pre-stage: claim not synced": {
			file: "prestaged", kind: "IPsecGateway", name: "branch-office",
			edit: func(obj map[string]any) { setCondition(t, obj, "Synced", "False", notSynced) },
			want: health{"Degraded", notSynced},
		},
		"attached: claim waits for the gateway pod": {
			file: "attached", kind: "IPsecGateway", name: "branch-office",
			want: health{"Progressing", "gateway: " + podUnready + "; tunnels 0/1 up"},
		},
		"attached: floating IP binding": {file: "attached", kind: "FloatingIPBinding", want: healthy},
		"attached: gateway pod not ready": {
			file: "attached", kind: "Gateway",
			want: health{"Progressing", "DeploymentReady: " + podUnready},
		},
		"attached: claim waits for the node ports' pairs before the gateway pod": {
			file: "attached", kind: "IPsecGateway", name: "branch-office",
			edit: func(obj map[string]any) {
				obj["status"].(map[string]any)["nodePorts"] = map[string]any{"nodes": int64(1), "conditions": []any{
					map[string]any{"type": "Ready", "status": "False", "reason": "Unavailable", "message": unmapped},
				}}
			},
			want: health{"Progressing", "node ports: " + unmapped},
		},
		"tunnel down: claim names the tunnel and charon's error": {
			file: "tunnel-down", kind: "IPsecGateway", name: "branch-office",
			want: health{"Progressing", "gateway: " + podUnready + "; tunnels 0/1 up, branch-a DOWN (AUTHENTICATION_FAILED)"},
		},
		"tunnel down: gateway": {
			file: "tunnel-down", kind: "Gateway",
			want: health{"Progressing", "DeploymentReady: " + podUnready},
		},
		"ready: claim": {
			file: "ready", kind: "IPsecGateway", name: "branch-office",
			want: health{"Healthy", "floating IP 203.0.113.10 attached, tunnels 1/1 up"},
		},
		"ready: security group":       {file: "ready", kind: "SecurityGroup", want: healthy},
		"ready: port":                 {file: "ready", kind: "Port", want: healthy},
		"ready: floating IP binding":  {file: "ready", kind: "FloatingIPBinding", want: healthy},
		"ready: gateway":              {file: "ready", kind: "Gateway", want: healthy},
		"routed: router routes ready": {file: "routed", kind: "RouterRoutes", want: healthy},
		"routed: gateway refused by its CRD's validation": {
			file: "routed", kind: "Gateway",
			want: health{"Degraded", celError},
		},
		"routed: claim waits on the gateway step": {
			file: "routed", kind: "IPsecGateway", name: "routed-branch",
			want: health{"Progressing", "gateway: " + celError},
		},
		"network imported with management policy Observe, before its first poll reports Ready": {
			file: "routed", kind: "Network", name: "tenant-a-net",
			want: health{"Progressing", "waiting for the provider to report Ready"},
		},
		"network imported with management policy Observe": {file: "network-imported", kind: "Network", want: healthy},
		"network to import does not exist": {
			file: "routed", kind: "Network", name: "missing-net",
			want: health{"Degraded", "observe failed: external resource does not exist"},
		},
		"rollback: floating IP binding paused": {
			file: "rollback-paused", kind: "FloatingIPBinding",
			want: health{"Suspended", "ReconcilePaused"},
		},
		"rollback: a paused binding holds nothing up, the claim waits for the gateway pod": {
			file: "rollback-paused", kind: "IPsecGateway", name: "branch-office",
			want: health{"Progressing", "gateway: " + podUnready + "; tunnels 0/1 up"},
		},
		"node ports hold the gateway's pairs": {file: "node-pairs", kind: "NodeAddressPairs", name: "vpn-gateway-node-pairs", want: healthy},
		"a node that cannot be mapped to its port": {
			file: "node-pairs", kind: "NodeAddressPairs", name: "unmapped-node-pairs",
			want: health{"Progressing", "Ready: " + unmapped},
		},
		"namespaced: security group ready": {file: "ready", kind: "SecurityGroup", edit: namespaced, want: healthy},
		"namespaced: port ready":           {file: "ready", kind: "Port", edit: namespaced, want: healthy},
		"namespaced: pre-stage: floating IP binding fails harmlessly": {
			file: "prestaged", kind: "FloatingIPBinding", edit: namespaced,
			want: health{"Degraded", notOnPort},
		},
		"namespaced: network imported":                    {file: "network-imported", kind: "Network", edit: namespaced, want: healthy},
		"namespaced: router routes ready":                 {file: "routed", kind: "RouterRoutes", edit: namespaced, want: healthy},
		"namespaced: node ports hold the gateway's pairs": {file: "node-pairs", kind: "NodeAddressPairs", name: "vpn-gateway-node-pairs", edit: namespaced, want: healthy},
		"namespaced: pre-stage: gateway rendered, 0 replicas": {
			file: "prestaged", kind: "Gateway", edit: namespaced,
			want: health{"Progressing", "DeploymentReady: " + preStaged},
		},
		"claim paused": {
			file: "claim-paused", kind: "IPsecGateway", name: "branch-office",
			want: health{"Suspended", "Reconciliation (including deletion) is paused via the pause annotation"},
		},
		"claim whose composition does not exist: no step reported": {
			file: "wrong-composition", kind: "IPsecGateway", name: "wrong-composition",
			want: health{"Progressing", "Claim is waiting for composite resource to become Ready"},
		},
	}
	used := map[string]bool{}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			obj := captured(t, tc.file, tc.kind, tc.name)
			if tc.edit != nil {
				tc.edit(obj)
			}
			key := keyPrefix + groupOf(t, obj) + "_" + tc.kind
			script, ok := scripts[key]
			if !ok {
				t.Fatalf("the argocd-cm patch has no key %s", key)
			}
			used[key] = true
			got, err := runHealth(script, obj)
			if err != nil {
				t.Fatalf("%s: %v", key, err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s: -want +got:\n%s", key, diff)
			}
		})
	}
	for key := range scripts {
		if !used[key] {
			t.Errorf("no case runs the health check %s", key)
		}
	}
}

// generatedScripts returns the health checks of the generated argocd-cm
// patch by key.
func generatedScripts(t *testing.T) map[string]string {
	t.Helper()
	b, err := os.ReadFile(generated)
	if err != nil {
		t.Fatal(err)
	}
	var cm struct {
		Data map[string]string `json:"data"`
	}
	if err := yaml.Unmarshal(b, &cm); err != nil {
		t.Fatal(err)
	}
	return cm.Data
}

// captured returns the object of kind (and name, unless empty: then the
// only one of its kind) in testdata/<file>.yaml.
func captured(t *testing.T, file, kind, name string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", file+".yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var found []map[string]any
	for doc := range strings.SplitSeq(string(b), "\n---\n") {
		var obj map[string]any
		if err := yaml.Unmarshal([]byte(doc), &obj); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		meta, _ := obj["metadata"].(map[string]any)
		if obj["kind"] == kind && (name == "" || meta["name"] == name) {
			found = append(found, obj)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%s: %d objects of kind %s named %q, want 1", file, len(found), kind, name)
	}
	return found[0]
}

// groupOf returns the API group of obj.
func groupOf(t *testing.T, obj map[string]any) string {
	t.Helper()
	apiVersion, _ := obj["apiVersion"].(string)
	group, _, ok := strings.Cut(apiVersion, "/")
	if !ok {
		t.Fatalf("apiVersion %q has no group", apiVersion)
	}
	return group
}

// setCondition sets the status and message of obj's condition of type
// ctype.
func setCondition(t *testing.T, obj map[string]any, ctype, status, message string) {
	t.Helper()
	st, _ := obj["status"].(map[string]any)
	conds, _ := st["conditions"].([]any)
	for _, c := range conds {
		if c := c.(map[string]any); c["type"] == ctype {
			c["status"], c["message"], c["reason"] = status, message, "ReconcileError"
			return
		}
	}
	t.Fatalf("no condition %s", ctype)
}

// runHealth runs a health check on obj the way Argo CD does (util/lua of
// argo-cd, with the gopher-lua version it pins): a new Lua state with only
// the package, base and table libraries open (Argo CD adds a safe os with
// time and date, which these scripts do not use, so leaving it out keeps
// them from starting to), a deadline of one second, obj as the global
// table obj, and the table the script returns read as status and message.
func runHealth(script string, obj map[string]any) (health, error) {
	l := lua.NewState(lua.Options{SkipOpenLibs: true})
	defer l.Close()
	for _, lib := range []struct {
		name string
		open lua.LGFunction
	}{{lua.LoadLibName, lua.OpenPackage}, {lua.BaseLibName, lua.OpenBase}, {lua.TabLibName, lua.OpenTable}} {
		if err := l.CallByParam(lua.P{Fn: l.NewFunction(lib.open), Protect: true}, lua.LString(lib.name)); err != nil {
			return health{}, err
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	l.SetContext(ctx)
	l.SetGlobal("obj", toLua(l, obj))
	if err := l.DoString(script); err != nil {
		return health{}, err
	}
	ret, ok := l.Get(-1).(*lua.LTable)
	if !ok {
		return health{}, fmt.Errorf("the script returned %s, not a table", l.Get(-1).Type())
	}
	var h health
	for field, v := range map[string]*string{"status": &h.Status, "message": &h.Message} {
		switch s := ret.RawGetString(field).(type) {
		case lua.LString:
			*v = string(s)
		case *lua.LNilType:
		default:
			return health{}, errors.New("the script returned a " + field + " that is no string")
		}
	}
	return h, nil
}

// toLua converts a JSON value as Argo CD's decodeValue does: objects to
// tables keyed by string, arrays to sequences, numbers, strings and
// booleans to their Lua twins, anything else to nil.
func toLua(l *lua.LState, v any) lua.LValue {
	switch v := v.(type) {
	case map[string]any:
		tbl := l.CreateTable(0, len(v))
		for k, item := range v {
			tbl.RawSetH(lua.LString(k), toLua(l, item))
		}
		return tbl
	case []any:
		arr := l.CreateTable(len(v), 0)
		for _, item := range v {
			arr.Append(toLua(l, item))
		}
		return arr
	case string:
		return lua.LString(v)
	case float64:
		return lua.LNumber(v)
	case bool:
		return lua.LBool(v)
	}
	return lua.LNil
}
