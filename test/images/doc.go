// Package images tests the images `make images` builds (hack/images.sh):
// two builds give the same digests, a third is served from the cache, every
// layer is normalised, and the gateway image holds what the gateway pod's
// Deployment (internal/workload) runs.
//
// Its tests build only with the build tag integration (make test-integration sets what
// they need); this file, without the tag, is what a plain go vet or go
// list sees of the package.
package images
