//go:build integration

package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	extv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/ipsecgw/provider-ipsec/apis"
)

// crdDir holds the provider's generated CRDs; thirdPartyCRDDir the CRDs of
// other projects the gateway uses (Multus' NetworkAttachmentDefinition).
var (
	crdDir           = filepath.Join("..", "..", "package", "crds")
	thirdPartyCRDDir = filepath.Join("..", "..", "cluster", "crds")
)

var (
	cfg  *rest.Config
	kube client.Client
	// installed are the names of the CRDs envtest installed.
	installed []string
)

func TestMain(m *testing.M) {
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		fmt.Fprintln(os.Stderr, "KUBEBUILDER_ASSETS is not set: run these tests with 'make test-integration'")
		os.Exit(1)
	}
	env := &envtest.Environment{CRDDirectoryPaths: []string{crdDir, thirdPartyCRDDir}, ErrorIfCRDPathMissing: true}
	os.Exit(run(m, env))
}

// run starts env, runs the tests and always stops env, so that no
// kube-apiserver or etcd outlives a failed test.
func run(m *testing.M, env *envtest.Environment) (code int) {
	var err error
	if cfg, err = env.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "cannot start envtest:", err)
		return 1
	}
	defer func() {
		if err := env.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "cannot stop envtest:", err)
		}
	}()
	defer func() {
		stopOpenStack()
		if err := checkHostAfter(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			code = 1
		}
	}()
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if err := extv1.AddToScheme(s); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if err := apis.AddToScheme(s); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if kube, err = client.New(cfg, client.Options{Scheme: s}); err != nil {
		fmt.Fprintln(os.Stderr, "cannot create client:", err)
		return 1
	}
	for _, crd := range env.CRDs {
		installed = append(installed, crd.GetName())
	}
	return m.Run()
}
