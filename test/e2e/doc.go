// Package e2e runs the migration runbook end to end at the control-plane
// level: the `make dev` job (cluster/local/dev.sh) on a state directory and
// ports of its own, then cutover, rollback, deletion, an allocated floating
// IP and bad claims, asserted in Kubernetes and in the real Neutron.
//
// Its tests build only with the build tag e2e (make test-e2e sets what
// they need); this file, without the tag, is what a plain go vet or go
// list sees of the package.
package e2e
