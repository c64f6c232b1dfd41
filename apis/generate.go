//go:build generate

// Generation of API code and CRDs. Run with `make generate` (go generate
// -tags generate ./apis/...).

// Remove generated files first so that types that are gone leave nothing.
//go:generate rm -rf ../package/crds
//go:generate sh -c "find . -name 'zz_generated*.go' -delete"

// Deep copy methods and CRDs (controller-gen, a tool of go.mod).
//go:generate go tool controller-gen object:headerFile=../hack/boilerplate.go.txt paths=./...
//go:generate go tool controller-gen crd:crdVersions=v1,allowDangerousTypes=false paths=./... output:artifacts:config=../package/crds

// The IPsecGateway XRD takes its tunnels, exposures and reverse exposures
// schemas from the Gateway CRD; the namespaced IPsecGateway's XRD (v2) is
// derived from it.
//go:generate go run ../hack/xrdgen ../hack/xrdgen/definition.yaml ../package/crds/gateway.ipsecgw.io_gateways.yaml ../package/configuration/zz_generated_definition.yaml ../package/configuration/zz_generated_definition_namespaced.yaml

// Crossplane method sets: managed resource, ProviderConfig(Usage), references
// (angryjet, a tool of hack/codegen.mod; see there why it is separate).
//go:generate go tool -modfile=../hack/codegen.mod angryjet generate-methodsets --header-file=../hack/boilerplate.go.txt ./...

// The argocd-cm patch with the Argo CD health checks of the IPsecGateway
// claim and of every managed resource kind (from the API types above).
//go:generate go run ../hack/argocdhealth ../examples/gitops/argocd/health ../package/configuration/zz_generated_definition.yaml ../examples/gitops/argocd/zz_generated_argocd-cm.yaml

package apis
