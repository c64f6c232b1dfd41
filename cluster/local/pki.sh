#!/usr/bin/env bash
# Makes the local control plane's keys and certificates in DIR, once: a CA,
# the API server's serving certificate (loopback and in-cluster names), the
# registry's (127.0.0.1, where the host reaches it, and NODE_IP, where the
# nodes do: cluster/node/up.sh), an admin client certificate (group
# system:masters) and the ServiceAccount token signing key pair.
#
#   pki.sh DIR NODE_IP
set -euo pipefail
DIR=${1:?usage: pki.sh DIR NODE_IP} NODE_IP=${2:?usage: pki.sh DIR NODE_IP}
cd "$DIR"
[ -f admin.crt ] && exit 0

key() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1" 2>/dev/null; }
# sign NAME SUBJECT [EXTENSIONS]: a certificate for NAME.key signed by the CA.
sign() {
	key "$1.key"
	openssl req -new -key "$1.key" -subj "$2" -out "$1.csr" 2>/dev/null
	printf '%s\n' "${3:-extendedKeyUsage=clientAuth}" >"$1.ext"
	openssl x509 -req -in "$1.csr" -CA ca.crt -CAkey ca.key -CAcreateserial -days 365 \
		-extfile "$1.ext" -out "$1.crt" 2>/dev/null
	rm -f "$1.csr" "$1.ext"
}

key ca.key
openssl req -x509 -new -key ca.key -subj "/CN=provider-ipsec-local-ca" -days 365 -out ca.crt 2>/dev/null
sign apiserver "/CN=kube-apiserver" "subjectAltName=DNS:localhost,IP:127.0.0.1,IP:10.96.0.1,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc
extendedKeyUsage=serverAuth"
sign registry "/CN=registry" "subjectAltName=IP:127.0.0.1,IP:$NODE_IP
extendedKeyUsage=serverAuth"
sign admin "/O=system:masters/CN=admin"
openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out sa.key 2>/dev/null
openssl pkey -in sa.key -pubout -out sa.pub 2>/dev/null
