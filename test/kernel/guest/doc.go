// Package guest holds the tests that run inside the kernel tier's QEMU
// guest (package kernel boots it): its test binary is the guest's init
// (pid 1), which mounts what a root filesystem needs, runs the tests with
// their output on the guest's second serial port and powers the guest off.
// Started any other way, the binary runs nothing.
//
// Its tests build only with the build tag kernel; this file, without the
// tag, is what a plain go vet or go list sees of the package.
package guest

// ExitPrefix starts the last line the guest's init writes to its second
// serial port: the test binary's exit code follows, which package kernel
// reads.
const ExitPrefix = "GUEST-EXIT "

// RepoDir is where the guest has the repository's RepoPaths, every file as
// in the tree (package kernel writes them into the initramfs): the
// examples the guest's tests decode as users apply them, and the CRDs
// whose defaults the API server gives them.
const RepoDir = "/repo"

// RepoPaths are the repository's directories the guest has below RepoDir.
var RepoPaths = []string{"examples", "package/crds"}
