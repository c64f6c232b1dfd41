// Package integration holds tests that run against a real kube-apiserver and
// etcd started by envtest from KUBEBUILDER_ASSETS (make test-integration
// points it at the offline toolchain). Every CRD in package/crds is
// installed before the tests run.
//
// Its tests build only with the build tag integration (make test-integration sets what
// they need); this file, without the tag, is what a plain go vet or go
// list sees of the package.
package integration
