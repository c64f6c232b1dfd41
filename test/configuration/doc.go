// Package configuration tests the IPsecGateway Configuration package
// (package/configuration) offline: `crossplane render` of the Composition
// with its composition function (cmd/function), compared with golden files,
// and `crossplane beta validate` of every rendered resource and every
// example against the provider's CRDs and the XRD.
//
// Its tests build only with the build tag integration (make test-integration sets what
// they need); this file, without the tag, is what a plain go vet or go
// list sees of the package.
package configuration
