#!/usr/bin/env bash
# A tenant's application in the local cluster, for the claim's exposure of
# a Service (`target.serviceName`): the site's echo (cluster/site) packed as
# an image (hack/imagebuild), pushed to the stack's registry, run by the
# Deployment tenant-a/tenant-app (non-root, port 8443) behind the ClusterIP
# Service tenant-app (port 443). It answers each connection with the
# address it came from: through the gateway, the gateway pod's own
# (masquerade). Needs the node (cluster/node/up.sh) and the site's
# binary (cluster/site/site.sh up); cluster/local/dev.sh runs it after both.
# Applying again changes nothing that runs.
set -euo pipefail
# shellcheck source=cluster/node/lib.sh
source "$(dirname "$0")/../node/lib.sh"

running node1-kubelet || die "the tenant application needs the node (cluster/node/up.sh)"
site=$STATE/site/bin/site
[ -x "$site" ] || die "no $site: bring the site up first (cluster/site/site.sh up)"
mkdir -p "$STATE/tenant-app"
"$NODES_DIR/bin/imagebuild" -o "$STATE/tenant-app/image.tar" -tag "$(registry)/tenant-app:dev" -entrypoint /site -user 65532:65532 \
	-file "$site:/site:0755" >/dev/null
IMAGE=$(push_image "$STATE/tenant-app/image.tar" tenant-app:dev)

kubectl apply -f - >/dev/null <<YAML
apiVersion: v1
kind: Namespace
metadata: {name: tenant-a}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: tenant-app, namespace: tenant-a}
spec:
  selector: {matchLabels: {app: tenant-app}}
  template:
    metadata: {labels: {app: tenant-app}}
    spec:
      terminationGracePeriodSeconds: 1
      containers:
      - name: echo
        image: $IMAGE
        imagePullPolicy: IfNotPresent
        args: [echo, -listen, ":8443"]
        ports: [{containerPort: 8443}]
        readinessProbe: {tcpSocket: {port: 8443}, periodSeconds: 1}
---
apiVersion: v1
kind: Service
metadata: {name: tenant-app, namespace: tenant-a}
spec:
  selector: {app: tenant-app}
  ports: [{port: 443, targetPort: 8443}]
YAML
kubectl -n tenant-a rollout status deployment/tenant-app --timeout 120s >/dev/null ||
	die "the tenant application did not become ready (kubectl -n tenant-a describe pod -l app=tenant-app)"
log "tenant application tenant-a/tenant-app: Service $(kubectl -n tenant-a get service tenant-app -o jsonpath='{.spec.clusterIP}'):443"
