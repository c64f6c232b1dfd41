#!/usr/bin/env bash
# Argo CD v3.2 in the local stack (ARGOCD=1 cluster/local/dev.sh, the GitOps
# e2e): its application-controller, applicationset-controller and
# repo-server out of cluster against the local API server (the multi-call
# binary of hack/tools/argocd, cached by hack/tools.sh), Redis (Debian's
# redis-server) on a unix socket in $STATE/argocd, Argo CD's CRDs from its
# module, and Debian's `git daemon` on loopback serving the repository
# ipsecgw-gitops.git that this script makes from examples/gitops/ with the
# placeholders substituted for this stack (make_repo). Then Argo CD is set up
# as examples/gitops/README.md tells a user (argocd-cm: tracking by
# annotation, ProviderConfigUsages excluded, the health checks) and the root
# Application applied: it syncs the platform and the tenants from Git.
#
#   argocd.sh up CLAIM start what does not run, set Argo CD up, apply the root
#   argocd.sh down     stop it all (cluster/local/down.sh runs it)
#   argocd.sh commit MESSAGE
#                      commit and push what changed in the work tree
#                      $STATE/argocd/gitops (a clone of the repository);
#                      prints the commit
#   argocd.sh rm PATH MESSAGE
#                      the same, taking PATH out of the repository
#   argocd.sh head     the commit the repository's main is at
#   argocd.sh status APPLICATION
#                      the Application's sync and health status and message
#
# The local stack has no External Secrets Operator: the stack writes the
# Secrets the ExternalSecrets would (the clouds.yaml and the PSK, as a
# secret manager would) before this runs, and its repository leaves the
# ExternalSecrets out. The packages are the ones up.sh pushed to the stack's
# registry (ARGOCD=1: pushed, not installed), the Configuration built for
# it: the repository names them there, as the README has a platform team
# substitute its registry path, and Argo CD's platform Application installs
# them; Crossplane resolves the Configuration's dependencies. The stack then
# plays the External runtime for them (packages.sh runtime, dev.sh).
#
# The application-controller keeps each resource's health in its
# Application's status (--persist-resource-health, as before Argo CD 3.0),
# where `kubectl get application -o yaml` and the e2e read it: the stack
# runs no Argo CD API server for `argocd app get`. It writes them there at
# each comparison with Git, not at each change of a resource's status:
# every 20 s here (--app-resync; Argo CD's default is 180 s, with up to 60 s
# of jitter), so that the status says what a user's `argocd app get` would
# within 20 s.
#
# The application-controller reaches the cluster as the stack's admin (its
# in-cluster ClusterRole grants all as well) through $KUBECONFIG
# (ARGOCD_FAKE_IN_CLUSTER: https://kubernetes.default.svc is the kubeconfig's
# cluster). Its metrics listen on 0.0.0.0:$ARGOCD_CONTROLLER_METRICS_PORT:
# Argo CD 3.2 has no flag for their address.
set -euo pipefail
# shellcheck source=cluster/local/lib.sh
source "$(dirname "$0")/lib.sh"

DIR=$STATE/argocd
REPO=ipsecgw-gitops.git
WORK=$DIR/gitops
NS=argocd
# The names Argo CD's processes run under in $STATE (pid and log files).
PROCS=(argocd-appset argocd-controller argocd-repo-server argocd-git argocd-redis)

# Argo CD's ports on 127.0.0.1, a range of ten from ARGOCD_PORT_BASE + 10k,
# chosen at the first up (as up.sh chooses the stack's) and recorded in
# $STATE/argocd-ports.
ARGOCD_PORT_BASE=${ARGOCD_PORT_BASE:-$((PORT_BASE + 1000))}
ARGOCD_PORTS=("GIT_PORT=$ARGOCD_PORT_BASE" "ARGOCD_REPO_PORT=$((ARGOCD_PORT_BASE + 1))"
	"ARGOCD_REPO_METRICS_PORT=$((ARGOCD_PORT_BASE + 2))" "ARGOCD_CONTROLLER_METRICS_PORT=$((ARGOCD_PORT_BASE + 3))"
	"ARGOCD_APPSET_METRICS_PORT=$((ARGOCD_PORT_BASE + 4))" "ARGOCD_APPSET_PROBE_PORT=$((ARGOCD_PORT_BASE + 5))"
	"ARGOCD_APPSET_WEBHOOK_PORT=$((ARGOCD_PORT_BASE + 6))")
read_ports "$STATE/argocd-ports" "${ARGOCD_PORTS[@]}"

# git runs Debian's git with no user or system configuration, as the
# stack's committer.
git() {
	GIT_CONFIG_GLOBAL=/dev/null GIT_CONFIG_NOSYSTEM=1 GIT_AUTHOR_NAME=local-stack GIT_AUTHOR_EMAIL=local-stack@localhost \
		GIT_COMMITTER_NAME=local-stack GIT_COMMITTER_EMAIL=local-stack@localhost command git "$@"
}

# make_repo CLAIM writes the stack's repository from examples/gitops/ (see
# above): the repository's URL, the registry path of the packages, the
# cloud's name, and CLAIM as tenants/tenant-a/branch-office.yaml (dev.sh
# makes it from that file with the local Neutron's IDs and the stack's
# claim settings).
make_repo() {
	local url=git://127.0.0.1:$GIT_PORT/$REPO
	rm -rf "$WORK" "$DIR/git/$REPO"
	mkdir -p "$DIR/git"
	git init -q --bare -b main "$DIR/git/$REPO"
	cp -r "$ROOT/examples/gitops/." "$WORK"
	rm -f "$WORK/tenants/tenant-a/branch-office-psk.yaml"
	grep -rl 'https://git.ipsecgw.invalid/platform/ipsecgw-gitops.git' "$WORK" |
		xargs sed -i "s|https://git.ipsecgw.invalid/platform/ipsecgw-gitops.git|$url|"
	# The stack's registry path: its root (packages.sh pushes there).
	sed -i "s|registry.ipsecgw.invalid/ipsecgw/|$(registry)/|" "$WORK/platform/packages.yaml"
	# (Comments may name them.)
	! grep -rqE --include '*.yaml' '^[^#]*ipsecgw\.invalid' "$WORK" ||
		die "placeholders left in $WORK: $(grep -rlE --include '*.yaml' '^[^#]*ipsecgw\.invalid' "$WORK")"
	# The ProviderConfig's file without its ExternalSecret, with the cloud
	# of the local clouds.yaml.
	python3 - "$WORK/platform/providerconfig.yaml" <<'PY'
import sys, yaml
p = sys.argv[1]
def edit(o):
    if o["kind"] == "ExternalSecret":
        return None
    o["spec"]["credentials"]["cloud"] = "local"
    return o
docs = [edit(o) for o in yaml.safe_load_all(open(p)) if o]
open(p, "w").write(yaml.safe_dump_all([o for o in docs if o], sort_keys=False))
PY
	cp "$1" "$WORK/tenants/tenant-a/branch-office.yaml"
	git -C "$WORK" init -q -b main
	git -C "$WORK" add -A
	git -C "$WORK" commit -q -m "provider-ipsec: the local stack's platform and tenant-a"
	git -C "$WORK" push -q "$DIR/git/$REPO" main
	git -C "$WORK" remote add origin "$DIR/git/$REPO"
}

# status NAME prints the sync status, health status and health message of
# Application NAME.
status() {
	kubectl -n "$NS" get application "$1" -o jsonpath='{.status.sync.status} {.status.health.status} {.status.health.message}' 2>/dev/null
}

# up CLAIM: see above.
up() {
	local bin env
	need_tools kubectl
	running apiserver || die "the local stack is not running: run cluster/local/up.sh first"
	[ -f "${1:-}" ] || die "usage: $0 up CLAIM (the tenant's claim for the repository, made by cluster/local/dev.sh)"
	command -v redis-server >/dev/null || die "no redis-server: run 'make packages'"
	bin=$("$ROOT/hack/tools.sh" dir argocd)
	if ! [ -f "$STATE/argocd-ports" ]; then
		choose_ports "$STATE/argocd-ports" $((16#$STATE_ID % 100)) 100 10 "${ARGOCD_PORTS[@]}"
	fi
	mkdir -p "$DIR/tmp" "$DIR/tls" "$DIR/ssh" "$DIR/gpg"
	chmod 700 "$DIR"
	# A failed bring-up stops Argo CD alone (down, here), keeping its logs.
	on_failure down "Argo CD's bring-up" "$STATE.argocd-failed" 'argocd-*.log'

	if ! running argocd-redis; then
		log "starting Redis (Argo CD's cache) on $DIR/redis.sock"
		start argocd-redis redis-server --port 0 --unixsocket "$DIR/redis.sock" --unixsocketperm 700 \
			--save '' --appendonly no --dir "$DIR"
		wait_ready argocd-redis Redis 30 redis-cli -s "$DIR/redis.sock" ping
	fi
	if ! running argocd-git; then
		log "the Git repository $REPO from examples/gitops, served by git daemon on 127.0.0.1:$GIT_PORT"
		make_repo "$1"
		need_free GIT_PORT
		start argocd-git env GIT_CONFIG_GLOBAL=/dev/null GIT_CONFIG_NOSYSTEM=1 git daemon --base-path="$DIR/git" \
			--export-all --reuseaddr --listen=127.0.0.1 --port="$GIT_PORT"
		wait_ready argocd-git "git daemon" 30 git ls-remote "git://127.0.0.1:$GIT_PORT/$REPO"
	fi

	log "installing Argo CD's CRDs and configuration"
	kubectl apply --server-side -f "$bin/argocd-crds/application-crd.yaml" -f "$bin/argocd-crds/applicationset-crd.yaml" \
		-f "$bin/argocd-crds/appproject-crd.yaml" >/dev/null
	# (A wait right after the create fails while the CRDs have no status.)
	wait_for "Argo CD's CRDs" 60 kubectl wait --for condition=Established --timeout 5s crd/applications.argoproj.io \
		crd/applicationsets.argoproj.io crd/appprojects.argoproj.io
	kubectl create namespace "$NS" --dry-run=client -o yaml | kubectl apply -f - >/dev/null
	# What Argo CD's install manifests create: its ConfigMaps and Secret
	# (its settings read them by this label) and the project "default",
	# which its API server would create (the stack runs none).
	kubectl apply -f - >/dev/null <<YAML
apiVersion: v1
kind: ConfigMap
metadata: {name: argocd-cm, namespace: $NS, labels: {app.kubernetes.io/part-of: argocd}}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: argocd-cmd-params-cm, namespace: $NS, labels: {app.kubernetes.io/part-of: argocd}}
YAML
	# The key Argo CD signs with, which its API server would generate (the
	# application-controller refuses to record clusters' info without it).
	[ -n "$(kubectl -n "$NS" get secret argocd-secret -o jsonpath='{.data.server\.secretkey}' 2>/dev/null)" ] ||
		openssl rand -base64 32 | tr -d '\n' |
		kubectl -n "$NS" create secret generic argocd-secret --from-file=server.secretkey=/dev/stdin \
			--dry-run=client -o yaml | kubectl apply -f - >/dev/null
	kubectl -n "$NS" label secret argocd-secret app.kubernetes.io/part-of=argocd --overwrite >/dev/null
	kubectl apply -f - >/dev/null <<YAML
apiVersion: argoproj.io/v1alpha1
kind: AppProject
metadata: {name: default, namespace: $NS}
spec:
  sourceRepos: ['*']
  destinations: [{server: '*', namespace: '*'}]
  clusterResourceWhitelist: [{group: '*', kind: '*'}]
YAML
	# examples/gitops/README.md's step 3, as a user runs it.
	kubectl -n "$NS" patch configmap argocd-cm --type merge -p '{"data":{
  "application.resourceTrackingMethod": "annotation",
  "resource.exclusions": "- apiGroups: [ipsecgw.io]\n  kinds: [ProviderConfigUsage]\n  clusters: [\"*\"]\n"}}' >/dev/null
	kubectl -n "$NS" patch configmap argocd-cm --patch-file "$WORK/argocd/zz_generated_argocd-cm.yaml" >/dev/null

	env=(env ARGOCD_FAKE_IN_CLUSTER=true KUBECONFIG="$KUBECONFIG" TMPDIR="$DIR/tmp" HOME="$DIR"
		ARGOCD_TLS_DATA_PATH="$DIR/tls" ARGOCD_SSH_DATA_PATH="$DIR/ssh" ARGOCD_GNUPGHOME="$DIR/gpg"
		ARGOCD_GPG_ENABLED=false GIT_CONFIG_NOSYSTEM=1)
	if ! running argocd-repo-server; then
		log "starting Argo CD's repo-server, application-controller and applicationset-controller"
		need_free ARGOCD_REPO_PORT ARGOCD_REPO_METRICS_PORT ARGOCD_CONTROLLER_METRICS_PORT \
			ARGOCD_APPSET_METRICS_PORT ARGOCD_APPSET_PROBE_PORT ARGOCD_APPSET_WEBHOOK_PORT
		start argocd-repo-server "${env[@]}" "$bin/argocd-repo-server" --redis "$DIR/redis.sock" \
			--address 127.0.0.1 --port "$ARGOCD_REPO_PORT" \
			--metrics-address 127.0.0.1 --metrics-port "$ARGOCD_REPO_METRICS_PORT"
		wait_ready argocd-repo-server "Argo CD's repo-server" 60 answers "http://127.0.0.1:$ARGOCD_REPO_METRICS_PORT/healthz"
		start argocd-controller "${env[@]}" "$bin/argocd-application-controller" --namespace "$NS" \
			--redis "$DIR/redis.sock" --repo-server "127.0.0.1:$ARGOCD_REPO_PORT" \
			--metrics-port "$ARGOCD_CONTROLLER_METRICS_PORT" --persist-resource-health --app-resync 20 --app-resync-jitter 0
		start argocd-appset "${env[@]}" ARGOCD_BINARY_NAME=argocd-applicationset-controller "$bin/argocd" \
			--namespace "$NS" --argocd-repo-server "127.0.0.1:$ARGOCD_REPO_PORT" \
			--metrics-addr "127.0.0.1:$ARGOCD_APPSET_METRICS_PORT" --probe-addr "127.0.0.1:$ARGOCD_APPSET_PROBE_PORT" \
			--webhook-addr "127.0.0.1:$ARGOCD_APPSET_WEBHOOK_PORT"
		wait_ready argocd-controller "Argo CD's application-controller" 60 answers "http://127.0.0.1:$ARGOCD_CONTROLLER_METRICS_PORT/metrics"
		# It registers no health checks on its probe address.
		wait_ready argocd-appset "Argo CD's applicationset-controller" 60 answers "http://127.0.0.1:$ARGOCD_APPSET_METRICS_PORT/metrics"
	fi

	log "applying the root Application (argocd/root.yaml): it syncs the platform and the tenants"
	kubectl -n "$NS" apply -f "$WORK/argocd/root.yaml" >/dev/null
	succeeded
}

down() {
	stop "${PROCS[@]}"
	rm -rf "$DIR" "$STATE/argocd-ports"
}

# commit MESSAGE commits and pushes what changed in $WORK and prints the
# commit.
commit() {
	[ -d "$WORK" ] || die "no $WORK: run '$0 up' first"
	git -C "$WORK" add -A
	git -C "$WORK" commit -q -m "${1:?a commit message}"
	git -C "$WORK" push -q origin main
	git -C "$WORK" rev-parse HEAD
}

# remove PATH MESSAGE takes PATH out of the repository in a commit.
remove() {
	[ -d "$WORK/${1:?a path in the repository}" ] || [ -f "$WORK/$1" ] || die "no $1 in $WORK"
	git -C "$WORK" rm -q -r "$1"
	commit "${2:-}"
}

case ${1:-} in
up) up "${2:-}" ;;
down) down ;;
commit) commit "${2:-}" ;;
rm) remove "${2:-}" "${3:-}" ;;
head) git -C "$WORK" rev-parse HEAD ;;
status) status "${2:?an Application}" ;;
*) die "usage: $0 up CLAIM|down|commit MESSAGE|rm PATH MESSAGE|head|status APPLICATION" ;;
esac
