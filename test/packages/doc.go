// Package packages tests the packages `make xpkg` builds (hack/xpkg.sh):
// two builds give the same digests, and each package's metadata and
// contents are what Crossplane's package manager needs.
//
// Its tests build only with the build tag integration (make test-integration sets what
// they need); this file, without the tag, is what a plain go vet or go
// list sees of the package.
package packages
