#!/usr/bin/env bash
# End-to-end check of the local stack's node, on a running stack (STATE and
# ports from the environment; test/e2e/dev-stack.sh runs it on its own):
# a pod from an image built here (test/nodeprobe, packed with
# hack/imagebuild, pushed to the stack's registry and pulled from it by the
# node's containerd, imagePullPolicy IfNotPresent) runs, reads a ConfigMap through the API with its own ServiceAccount
# token (a Role allows that one ConfigMap), is reachable through a
# ClusterIP Service from the node, and has a macvlan net1 from a
# NetworkAttachmentDefinition with static IPAM; `kubectl logs` and `exec`
# reach it (the API server through the relay to the kubelet). Prints the
# pod's start time. With two nodes or more (NODES=2), then checks node-2's
# loss and return (cluster/node/node.sh) and prints how long each took.
# Deletes its namespace at the end, also on failure.
#
#   test/e2e/node.sh check   the pod check, on a running node
#   test/e2e/node.sh host    prints what the node changes on the host: the
#                            sysctls the kubelet sets and the fixed paths
#                            (unless another node runs), this node's network
#                            namespace, cgroups and mounts; equal output
#                            before bring-up and after cluster-down means the
#                            host was restored
set -euo pipefail
# shellcheck source=cluster/node/lib.sh
source "$(dirname "$0")/../../cluster/node/lib.sh"

if [ "${1:-}" = host ]; then
	if [ -z "$(ls -A "$HOST_RECORD/nodes" 2>/dev/null)" ]; then
		for k in $KUBELET_SYSCTLS; do echo "$k=$(sysctl -n "$k")"; done
		for p in $HOST_PATHS "$HOST_RECORD"; do [ -e "$p" ] && echo "exists $p"; done
	fi
	for n in /run/netns/*-"$STATE_ID"; do [ ! -e "$n" ] || echo "netns ${n#/run/netns/}"; done
	ls -d /sys/fs/cgroup/*/provider-ipsec-*"$STATE_ID" 2>/dev/null || true
	awk -v s="$STATE" 'index($2, s) == 1 {print "mount " $2}' /proc/self/mounts
	exit 0
fi
[ "${1:-}" = check ] || { echo "usage: $0 check|host" >&2; exit 2; }
NS=node-e2e
IMAGE=$(registry)/nodeprobe:e2e
NET1=192.168.50.10/24

fail() {
	echo "FAIL: node: $*" >&2
	kubectl -n "$NS" get pods -o wide >&2 || true
	kubectl -n "$NS" get events --sort-by .lastTimestamp >&2 || true
	exit 1
}
trap 'kubectl delete namespace "$NS" --wait=false >/dev/null 2>&1 || true' EXIT
running node1-kubelet || fail "the node does not run"

mkdir -p "$NODES_DIR/nodeprobe"
(cd "$ROOT" && CGO_ENABLED=0 go build -trimpath -ldflags '-s -w' -o "$NODES_DIR/nodeprobe/nodeprobe" ./test/nodeprobe)
"$NODES_DIR/bin/imagebuild" -o "$NODES_DIR/nodeprobe/image.tar" -tag "$IMAGE" -entrypoint /nodeprobe \
	-user 65532:65532 -file "$NODES_DIR/nodeprobe/nodeprobe:/nodeprobe:0755" >/dev/null
push_image "$NODES_DIR/nodeprobe/image.tar" nodeprobe:e2e >/dev/null

t0=$(date +%s%N)
kubectl apply -f - >/dev/null <<YAML
apiVersion: v1
kind: Namespace
metadata: {name: $NS}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: probe, namespace: $NS}
data: {greeting: hello from the API}
---
apiVersion: v1
kind: ServiceAccount
metadata: {name: probe, namespace: $NS}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: probe, namespace: $NS}
rules: [{apiGroups: [""], resources: [configmaps], resourceNames: [probe], verbs: [get]}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: probe, namespace: $NS}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: probe}
subjects: [{kind: ServiceAccount, name: probe, namespace: $NS}]
---
apiVersion: k8s.cni.cncf.io/v1
kind: NetworkAttachmentDefinition
metadata: {name: macvlan-static, namespace: $NS}
spec:
  config: '{"cniVersion": "1.0.0", "name": "macvlan-static", "type": "macvlan", "master": "$MACVLAN_PARENT", "mode": "bridge",
    "capabilities": {"ips": true}, "ipam": {"type": "static"}}'
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: probe, namespace: $NS}
spec:
  selector: {matchLabels: {app: probe}}
  template:
    metadata:
      labels: {app: probe}
      annotations:
        k8s.v1.cni.cncf.io/networks: '[{"name": "macvlan-static", "interface": "net1", "ips": ["$NET1"]}]'
    spec:
      serviceAccountName: probe
      terminationGracePeriodSeconds: 1
      containers:
      - name: probe
        image: $IMAGE
        imagePullPolicy: IfNotPresent
        env: [{name: CONFIGMAP, value: probe}]
        ports: [{containerPort: 8080}]
        readinessProbe: {httpGet: {path: /, port: 8080}, periodSeconds: 1}
---
apiVersion: v1
kind: Service
metadata: {name: probe, namespace: $NS}
spec:
  selector: {app: probe}
  ports: [{port: 80, targetPort: 8080}]
YAML
kubectl -n "$NS" rollout status deployment/probe --timeout 120s >/dev/null || fail "the probe pod did not become ready"
ms=$((($(date +%s%N) - t0) / 1000000))

ip=$(kubectl -n "$NS" get service probe -o 'jsonpath={.spec.clusterIP}')
# The pod may have been Ready before kube-proxy programmed the Service.
report=
for _ in $(seq 1 40); do
	report=$("${IN_NODE[@]}" curl -fsS --max-time 2 "http://$ip/" 2>/dev/null) && break
	sleep 0.5
done
[ -n "$report" ] || fail "the probe is not reachable through its ClusterIP $ip"
check() { python3 -c "import json,sys; r=json.loads(sys.argv[1]); sys.exit(0 if $1 else 1)" "$report"; }
check 'r.get("configMap", {}).get("greeting") == "hello from the API"' ||
	fail "the pod did not read its ConfigMap with its ServiceAccount token: $report"
check '"'"$NET1"'" in r["interfaces"].get("net1", [])' || fail "the pod has no macvlan net1 with $NET1: $report"
kubectl -n "$NS" logs deployment/probe | grep -q 'serving on :8080' || fail "kubectl logs does not show the probe's log"
report=$(kubectl -n "$NS" exec deployment/probe -- /nodeprobe report) || fail "kubectl exec into the probe failed"
check '"'"$NET1"'" in r["interfaces"].get("net1", [])' || fail "kubectl exec did not run in the probe's pod: $report"
echo "PASS: node: a locally built pod runs, reads its ConfigMap with its own token, answers on ClusterIP $ip, has net1 $NET1, logs and exec work (apply to Ready $((ms / 1000)).$((ms % 1000 / 100))s)"
[ -d "$NODES_DIR/2" ] || exit 0

# Two nodes: a pod pinned to each reads its ConfigMap and is reached from
# the other node; node-2 lost (cluster/node/node.sh) goes NotReady and its
# pod unreachable, node-1's pod still answers; returned, node-2 is Ready and
# the same pod answers again.
for i in 1 2; do
	kubectl -n "$NS" run "probe-$i" --image "$IMAGE" --image-pull-policy IfNotPresent --env CONFIGMAP=probe --overrides \
		'{"spec": {"nodeName": "node-'"$i"'", "serviceAccountName": "probe", "terminationGracePeriodSeconds": 1}}' >/dev/null
done
kubectl -n "$NS" wait --for condition=Ready --timeout 120s pod/probe-1 pod/probe-2 >/dev/null || fail "the pinned probes did not become ready"
pod_ip() { kubectl -n "$NS" get pod "$1" -o 'jsonpath={.status.podIP}'; }
ip1=$(pod_ip probe-1) ip2=$(pod_ip probe-2)
# reach N IP prints the report of the probe at IP, asked from node N.
reach() { (select_node "$1" && "${IN_NODE[@]}" curl -fsS --max-time 2 "http://$2:8080/"); }
wait_for "node-2's pod $ip2 from node-1" 30 reach 1 "$ip2"
report=$(reach 1 "$ip2")
check 'r.get("configMap", {}).get("greeting") == "hello from the API"' ||
	fail "node-2's pod did not read its ConfigMap: $report"
reach 2 "$ip1" >/dev/null || fail "node-1's pod $ip1 is not reachable from node-2"
uid=$(kubectl -n "$NS" get pod probe-2 -o 'jsonpath={.metadata.uid}')
ready_is() { [ "$(kubectl get node "$1" -o 'jsonpath={.status.conditions[?(@.type=="Ready")].status}')" = "$2" ]; }
not_ready() { ! ready_is "$1" True; }

t0=$(date +%s%N)
"$ROOT/cluster/node/node.sh" lose 2 >/dev/null
! reach 1 "$ip2" >/dev/null 2>&1 || fail "node-2's pod $ip2 still answers with node-2 lost"
wait_for "node-2 NotReady after its loss" 180 not_ready node-2
lost=$(elapsed "$t0")
! reach 1 "$ip2" >/dev/null 2>&1 || fail "node-2's pod $ip2 answers while node-2 is NotReady"
reach 2 "$ip1" >/dev/null 2>&1 && fail "node-1's pod was reached from node-2 while lost"
reach 1 "$ip1" >/dev/null || fail "node-1's pod $ip1 stopped answering when node-2 was lost"
ready_is node-1 True || fail "node-1 is not Ready while node-2 is lost"

t0=$(date +%s%N)
"$ROOT/cluster/node/node.sh" return 2 >/dev/null
wait_for "node-2 Ready after its return" 120 ready_is node-2 True
back=$(elapsed "$t0")
wait_for "node-2's pod $ip2 after its return" 30 reach 1 "$ip2"
[ "$(kubectl -n "$NS" get pod probe-2 -o 'jsonpath={.metadata.uid}')" = "$uid" ] || fail "node-2's pod was replaced"
echo "PASS: nodes: a pod on each of node-1 and node-2 reach each other; node-2 lost: NotReady after ${lost}s, its pod unreachable, node-1's answers; returned: Ready after ${back}s, the same pod answers"
