// Package crds reads the provider's generated CustomResourceDefinitions
// (package/crds) for the tests that check them against the API types, the
// Configuration and the API server.
package crds

import (
	"fmt"
	"os"
	"path/filepath"

	extv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"
)

// Read returns the CRDs of the YAML files in dir, by file path. It returns
// an error naming the file that does not read or decode, or saying that
// dir holds none (make generate writes them).
func Read(dir string) (map[string]*extv1.CustomResourceDefinition, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("no CRDs in %s: run make generate", dir)
	}
	out := map[string]*extv1.CustomResourceDefinition{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		crd := &extv1.CustomResourceDefinition{}
		if err := yaml.Unmarshal(b, crd); err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		out[f] = crd
	}
	return out, nil
}
