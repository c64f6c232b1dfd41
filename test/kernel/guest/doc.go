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
