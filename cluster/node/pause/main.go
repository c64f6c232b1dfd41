// Command pause is the local node's sandbox ("pause") container: it holds a
// pod's namespaces, reaps the children it inherits, and exits on SIGINT or
// SIGTERM. It is built statically and packed as an image by
// cluster/node/up.sh (hack/imagebuild), which pins it as containerd's
// sandbox image, so no registry is needed.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGCHLD)
	for s := range sigs {
		if s != syscall.SIGCHLD {
			return
		}
		for {
			var ws syscall.WaitStatus
			if pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil); pid <= 0 || err != nil {
				break
			}
		}
	}
}
