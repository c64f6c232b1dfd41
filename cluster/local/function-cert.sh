#!/usr/bin/env bash
# Issues a serving certificate for locally run packages (localhost,
# 127.0.0.1) from Crossplane's own CA (Secret crossplane-root-ca, made by
# 'crossplane core init'), which Crossplane verifies when it calls a function
# over mTLS. Writes DIR/{tls.crt,tls.key,ca.crt}.
set -euo pipefail
# shellcheck source=cluster/local/lib.sh
source "$(dirname "$0")/lib.sh"
DIR=${1:?usage: function-cert.sh DIR}
mkdir -p "$DIR"
cd "$DIR"
umask 077
kubectl -n "$XP_NAMESPACE" get secret crossplane-root-ca -o 'jsonpath={.data.tls\.crt}' | base64 -d >ca.crt
kubectl -n "$XP_NAMESPACE" get secret crossplane-root-ca -o 'jsonpath={.data.tls\.key}' | base64 -d >ca.key
openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out tls.key 2>/dev/null
openssl req -new -key tls.key -subj /CN=function -out fn.csr 2>/dev/null
printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth\n' >fn.ext
openssl x509 -req -in fn.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 30 -extfile fn.ext -out tls.crt 2>/dev/null
rm -f fn.csr fn.ext ca.key ca.srl
