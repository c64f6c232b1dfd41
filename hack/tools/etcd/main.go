// Command etcd is etcd's server, built from go.etcd.io/etcd/server/v3 so that
// the local control plane and envtest need no release download.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() { etcdmain.Main(os.Args) }
