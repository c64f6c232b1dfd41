// Package kernel is the kernel tier (make test-kernel): it boots Debian's
// stock kernel (hack/kernel.sh) in a QEMU guest with no network device,
// whose root filesystem is the gateway image's (make images) plus the
// kernel's modules and, as its init, the test binary of package guest, and
// reports what the guest's tests report. There the kernel's own ESP, XFRM
// policies and XFRM interfaces carry the tunnels, which the kernel of this
// machine cannot.
//
// Its tests build only with the build tag kernel; this file, without the
// tag, is what a plain go vet or go list sees of the package.
package kernel
