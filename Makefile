# provider-ipsec. `make help` lists the targets.

SHELL := /usr/bin/env bash
.SHELLFLAGS := -euo pipefail -c
.DEFAULT_GOAL := help

GO ?= go
OUTPUT := _output
# Where hack/tools.sh keeps this checkout's toolchain (outside the repo).
TOOLS_BIN = $(shell hack/tools.sh bindir)
# As root the local stack has a node that runs pods: `make images` builds
# the gateway image it imports.
NODE_IMAGES = $(if $(filter 0,$(shell id -u)),images)

##@ Main

# dev and test install their Debian packages first, before the long
# toolchain build.
.PHONY: dev
dev: packages tools build xpkg $(NODE_IMAGES) ## The main job on the local stack: control plane, Crossplane, Neutron, provider, the runbook with the namespaced IPsecGateway (CLAIM=1: the legacy claim).
	cluster/local/dev.sh cutover

.PHONY: dev-down
dev-down: ## Stop everything `make dev` started.
	cluster/local/down.sh
	cluster/openstack/down.sh

# What git status says as make starts: make test fails when its steps
# changed it, such as a test that wrote into the tree instead of a
# temporary directory, .work or _output.
TREE_STATE = git status --porcelain --untracked-files=all 2>/dev/null | sha256sum
TREE_AT_START := $(shell $(TREE_STATE))

.PHONY: test
test: packages check-packages tools check-generate lint test-unit test-kernel test-integration test-e2e ## Run all tests (installs the packages and builds the toolchain first).
	@[ "$$($(TREE_STATE))" = "$(TREE_AT_START)" ] || \
		{ echo "error: make test changed the tree (a test wrote into it instead of a temporary directory, .work or _output):" >&2; git status --short >&2; exit 1; }

##@ Development

.PHONY: packages
packages: ## Install the Debian packages of hack/packages/host.txt that are missing (root; no service started).
	hack/apt-install.sh --host

.PHONY: tools
# Argo CD is built into the same cache, but only where it runs (test-e2e;
# cluster/local/argocd.sh for ARGOCD=1 make dev), so that a first make dev
# does not wait 10-40 min for a tool it does not start.
tools: ## Build the offline toolchain into the cache (about 23 min cold on two cores, seconds warm).
	hack/tools.sh build

.PHONY: generate
generate: ## Regenerate deep copies, Crossplane methods and CRDs.
	$(GO) generate -tags generate ./apis/...

.PHONY: check-packages
check-packages: ## Fail if a program or file the scripts, the Makefile or the tests need comes from a package hack/packages/host.txt does not cover.
	hack/packages/check.sh

.PHONY: check-generate
check-generate: ## Fail if `make generate` changes the tree.
	hack/check-generate.sh

.PHONY: build
build: ## Build the provider binary into _output/bin.
	CGO_ENABLED=0 $(GO) build -trimpath -o $(OUTPUT)/bin/provider ./cmd/provider

# Each test stage keeps its `go test -json` stream in
# _output/test-<stage>.json, from which `go run ./hack/testjson slowest
# _output/test-*.json` prints the slowest tests (docs/testing.md), prints
# the stream as go test would have (print -v: as go test -v), and its wall
# time when it ends, failing or not. pipefail (.SHELLFLAGS) keeps go test's
# failure make's.
# $(call timed,STAGE) starts a stage's recipe line (one shell).
timed = mkdir -p $(OUTPUT); start=$$(date +%s); trap 'echo "$(1): wall time $$(($$(date +%s) - start)) s"' EXIT;
# $(call go_test,STAGE,GO TEST ARGUMENTS) [-v] runs go test.
go_test = $(GO) test -json $(2) | tee $(OUTPUT)/test-$(1).json | $(GO) run ./hack/testjson print

.PHONY: test-unit
test-unit: ## Unit tests: no processes, no network, under a minute.
	$(call timed,test-unit) $(call go_test,unit,./...)

# As root, the integration tests check the images `make images` builds (its
# root filesystem cached; the tests themselves download nothing).
.PHONY: test-integration
test-integration: $(NODE_IMAGES) ## Integration tests: envtest, Neutron, charon, nft, tunnels; crossplane render/validate of the Configuration; packages and images.
	$(call timed,test-integration) KUBEBUILDER_ASSETS=$(TOOLS_BIN) GO=$(GO) OUTPUT=$(OUTPUT) hack/test-integration.sh

# The kernel tier: hack/kernel.sh downloads the guest's kernel into the
# cache (once; the tests download nothing); as root, make images builds the
# gateway image the guest is made of (QEMU itself needs no root; without
# the image the test skips, saying so).
.PHONY: test-kernel
test-kernel: $(NODE_IMAGES) ## Kernel tier: Debian's kernel in a QEMU guest made of the gateway image; tunnels on the kernel's ESP, XFRM policies and interfaces (test/kernel).
	hack/apt-install.sh --host kernel
	hack/kernel.sh >/dev/null
	$(call timed,test-kernel) $(call go_test,kernel,-tags kernel -count=1 -timeout 30m ./test/kernel/)

# Argo CD is built (or found in the cache) before the Go tests, so that a
# cold build (10-50 min) does not run inside their timeout; TestGitOps runs
# it. The stack's own check runs with two nodes (node-2 lost and returned).
# Each Go test brings up a stack of its own (about 3 GiB), E2E_PARALLEL at a
# time, the longest first (test/e2e/lanes_test.go; go test's -parallel lets
# them all ask at once); TestActiveStandby's has two nodes and fails over E2E_FAILOVERS
# times in a row (the issue's 20: about 90 s).
# 2 halves the stage (docs/testing.md); each lane's stack is about 3 GiB.
E2E_PARALLEL ?= 2
E2E_FAILOVERS ?= 20
e2e_go_test = E2E_PARALLEL=$(E2E_PARALLEL) E2E_FAILOVERS=$(E2E_FAILOVERS) KUBEBUILDER_ASSETS=$(TOOLS_BIN) \
	$(call go_test,$(1),-tags e2e -count=1 -parallel 16 -timeout 45m $(2) ./test/e2e/...) -v

.PHONY: test-e2e
test-e2e: build xpkg $(NODE_IMAGES) ## End-to-end on `make dev` stacks (own ports, torn down): the stack itself, then the migration runbook, the upgrade, the uninstall, Argo CD from Git, active/standby on two nodes.
	$(call timed,test-e2e) NODES=2 test/e2e/dev-stack.sh; \
		hack/tools.sh dir argocd >/dev/null; \
		$(call e2e_go_test,e2e)

.PHONY: test-nodes
test-nodes: build xpkg $(NODE_IMAGES) ## TestActiveStandby alone (make test-e2e runs it too): the active/standby gateway on two nodes, E2E_FAILOVERS failovers in a row.
	$(call timed,test-nodes) $(call e2e_go_test,nodes,-run 'TestActiveStandby$$')

.PHONY: xpkg
xpkg: tools ## Build the provider image, the provider and Configuration packages into _output/xpkg (offline, reproducible).
	hack/xpkg.sh

.PHONY: images
images: ## Build the gateway and provider images as image tarballs into _output (offline, reproducible, cached by content; root the first time).
	hack/images.sh

.PHONY: reviewable
reviewable: generate ## Generate, format, vet, lint and unit-test: leaves `git status` clean when all is committed.
	gofmt -w $$(git ls-files '*.go')
	$(GO) mod tidy
	$(MAKE) vet
	$(MAKE) lint
	$(GO) test ./...

# The test packages' tests build only with their tag (integration:
# test/integration, configuration, packages, images; e2e: test/e2e; kernel:
# test/kernel; a plain `go vet` sees only their untagged doc.go), and each
# wrapper module under hack/tools/ is a module of its own ("main module does
# not contain package" for a plain `go vet <dir>`).
.PHONY: vet
vet: ## go vet every package with the tag it builds with, and the wrapper modules' own code.
	$(GO) vet -tags integration ./...
	$(GO) vet -tags e2e ./test/e2e/...
	$(GO) vet -tags kernel ./test/kernel/...
	cd hack/tools/etcd && $(GO) vet .

# The shell scripts: *.sh and the files whose first line runs a shell.
SCRIPTS = $(shell { git ls-files '*.sh'; git ls-files -z | xargs -0 awk 'FNR == 1 && substr($$0, 1, 2) == "\043!" && /sh$$/ {print FILENAME} {nextfile}'; } | sort -u)

# golangci-lint is built from hack/tools/golangci alone (cold about 6 min,
# 1.5 min of it compiling; cached by tools.sh);
# apis/generate.go, the one file with the tag generate, is linted on its own
# (see .golangci.yml); the wrapper modules' own code from their directories.
.PHONY: lint
lint: ## golangci-lint (.golangci.yml) every package with the tags it builds with, and shellcheck every shell script.
	hack/apt-install.sh --host lint
	lint=$$(hack/tools.sh dir golangci)/golangci-lint; \
	$$lint run --allow-serial-runners ./...; \
	$$lint run --allow-serial-runners --build-tags generate apis/generate.go; \
	(cd hack/tools/etcd && $$lint run --allow-serial-runners .)
	shellcheck -x $(SCRIPTS)

.PHONY: cluster-up
cluster-up: tools xpkg ## Start the local control plane with Crossplane and, as root, the node (NODE=0: without; idempotent).
	cluster/local/up.sh

.PHONY: cluster-down
cluster-down: ## Stop the local control plane, Crossplane, the provider and the node; restore what the node changed on the host.
	cluster/local/down.sh

.PHONY: openstack-up
openstack-up: ## Install (once) and start a real Keystone + Neutron API on loopback, with fixtures (root).
	cluster/openstack/up.sh

.PHONY: openstack-down
openstack-down: ## Stop the local Keystone + Neutron.
	cluster/openstack/down.sh

.PHONY: help
help: ## Show this help.
	@awk 'BEGIN {FS = ":.*##"} /^##@/ {printf "\n%s\n", substr($$0, 5)} /^[a-z-]+:.*##/ {printf "  %-18s %s\n", $$1, $$2}' $(MAKEFILE_LIST)
