# schemadns: CoreDNS with Kubernetes DNS plugins. `make help` lists targets.
GO      ?= go
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -X main.version=$(VERSION)
BIN     := bin/coredns
# make run's binary: the plugins of Corefile.example and Corefile.mesos
# only (coredns/plugins/zplugins_run.go), so that a first run compiles and
# downloads none of the cloud plugins' SDKs.
RUN_BIN := bin/coredns-run
# Integration tests start a real kube-apiserver; give slow machines room.
TEST_TIMEOUT ?= 30m

.PHONY: all build run-build image generate tools deps test lint run run-mesos help fuzz e2e e2e-clean

all: build

help: ## list targets
	@grep -E '^[a-z0-9-]+:.*## ' $(MAKEFILE_LIST) | sed 's/:.*## /\t/'

build: ## build bin/coredns from plugin.cfg
	$(GO) build -ldflags "$(LDFLAGS)" -o $(BIN) ./coredns

run-build: ## build bin/coredns-run: make run's binary, with only the plugins the example Corefiles use
	$(GO) build -tags schemadns_run -ldflags "$(LDFLAGS)" -o $(RUN_BIN) ./coredns

# The image is the static binary alone on an empty base (hack/image: no
# Docker engine needed; the Dockerfile builds the same for those with one).
IMAGE_TAR := bin/schemadns-coredns.tar
image: ## build the container image tarball bin/schemadns-coredns.tar (docker load / podman load)
	CGO_ENABLED=0 GOOS=linux $(GO) build -trimpath -ldflags "$(LDFLAGS)" -o bin/coredns-static ./coredns
	$(GO) run ./hack/image -binary bin/coredns-static -version "$(VERSION)" -revision "$$(git rev-parse HEAD 2>/dev/null)" -out $(IMAGE_TAR)
	@echo "load it with: docker load -i $(IMAGE_TAR)   (or: podman load -i $(IMAGE_TAR))"

generate: ## regenerate coredns/plugins/zdirectives.go and zplugins.go (and make run's zplugins_run.go) from plugin.cfg
	$(GO) generate ./coredns

tools: ## build etcd, kube-apiserver, kubectl and promtool into the cache (once per version)
	hack/tools.sh >/dev/null

deps: ## install the Debian packages the tests use (dig)
	hack/deps.sh

# Every package runs under the race detector, the whole-server tests too: a
# race in the snapshot path is a wrong answer waiting to happen.
test: tools deps ## all tests under -race: unit, fuzz seed corpora, integration against a real API server
	$(GO) test -race -count=1 -timeout $(TEST_TIMEOUT) ./...

# staticcheck is built once per version into the tools cache (hack/tools.sh;
# the version is pinned in hack/tools/staticcheck/go.mod).
# FUZZTIME: how long each fuzz target runs (go test -fuzztime).
FUZZTIME ?= 60s
fuzz: ## run every fuzz target for FUZZTIME each (default 60s); failing inputs go to testdata/fuzz as regression seeds
	FUZZTIME=$(FUZZTIME) hack/fuzz.sh

# One module: bench/ and soak/ are packages of the main module (their
# requirements were a subset of its own), so ./... lints them too.
lint: ## gofmt, go vet and staticcheck on the whole module (bench/ and soak/ included)
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi
	staticcheck=$$(realpath $$(hack/tools.sh staticcheck | tail -n 1)) && \
	$(GO) vet ./... && "$$staticcheck" ./...

# run builds bin/coredns itself, beside the local API server's binaries.
APISERVER ?=
run: ## build and serve Corefile.example on 127.0.0.1:1053: examples/ from a stand-in API server (APISERVER=kube: a real etcd and kube-apiserver; KUBECONFIG set: that cluster)
	MAKE="$(MAKE)" APISERVER="$(APISERVER)" hack/run.sh

run-mesos: run-build ## serve Corefile.mesos on 127.0.0.1:1053: the Mesos-DNS names of examples/mesos, from a stand-in Mesos master on 127.0.0.1:5050 (CONFIG=examples/mesos/config.json: from a Mesos-DNS config.json instead)
	CONFIG="$(CONFIG)" hack/run-mesos.sh

# SCALE: default (the four cluster shapes and the two Mesos ones at full
# size; about 32 minutes on two cores) or small (a tenth of each, shorter
# runs; a few minutes). SHAPES: a subset, e.g. SHAPES=S2, SHAPES=S1,S4 or
# SHAPES=M1 (default: all). BENCHFLAGS:
# more flags of the tool (cd bench && go run . -h).
SCALE      ?= default
SHAPES     ?=
BENCHFLAGS ?=
.PHONY: bench
bench: build tools ## measure against the stock kubernetes plugin on each cluster shape; writes docs/benchmarks.md (SCALE=small: quick)
	bench/deps.sh
	cd bench && $(GO) run . -scale $(SCALE) $(if $(SHAPES),-shapes $(SHAPES)) $(BENCHFLAGS)

# The absorption benchmark of docs/absorption.md: EndpointSlice updates/s
# each server takes in on one core, fed by a fake API server in the tool's
# process (the real one cannot write fast enough), on bench's S2 and S4
# (about 4 minutes on two cores, and some 3 GB of memory for the encoded
# updates; SCALE=small: a tenth, under a minute).
# SHAPES: S2 or S4 alone. ABSORBFLAGS: more flags (cd bench && go run
# ./absorb -h), for instance -rounds 5 or -updates 100000.
ABSORBFLAGS ?=
.PHONY: absorb
absorb: build ## measure the EndpointSlice updates/s each server absorbs on one core, from an in-process fake API server; writes docs/absorption.md (SCALE=small: quick)
	cd bench && $(GO) run ./absorb -scale $(SCALE) $(if $(SHAPES),-shapes $(SHAPES)) $(ABSORBFLAGS)

# The overload measurement of docs/overload.md (its summary goes into
# docs/benchmarks.md): ours (deploy/base's Corefile, with and without
# clusterfirst) and stock CoreDNS (kubeadm's Corefile, alone and with
# shed) on bench's S1 in a real API server, at 0.5, 1, 2 and 4 times ours's
# saturation rate, cluster names and external names to a stub upstream
# that answers after 200 ms or never; then GOMAXPROCS 1 and 2 with and
# without multisocket (about 20 minutes on two cores; SCALE=small: 1x and
# 2x, the slow upstream, a tenth of S1, a few minutes).
# OVERLOADFLAGS: more flags (cd bench && go run ./overload -h).
OVERLOADFLAGS ?=
.PHONY: overload
overload: build tools ## measure ours and stock past saturation (S1, cluster names + external names to a slow or silent upstream); writes docs/overload.md and its summary in docs/benchmarks.md (SCALE=small: quick)
	cd bench && $(GO) run ./overload -scale $(SCALE) $(OVERLOADFLAGS)

# The soak: the scenarios of docs/reliability.md, at SCALE
# default (2,000 headless services × 10 endpoints, 1,000 ClusterIP; under
# 20 minutes on two cores; then the Mesos scenarios on 3,000 tasks, about
# 3 minutes more) or small (a tenth, shorter phases; a few minutes).
# SOAKFLAGS: more flags of the tool (cd soak && go run . -h), for instance
# -headless 10000 for the bench's S2 scale, -scenarios churn, or
# -scenarios mesos (mesosschema's alone: no API server; the page keeps the
# Kubernetes results it has). deps: ZooKeeper for the Mesos ones.
SOAKFLAGS ?=
.PHONY: soak
soak: build tools deps ## run the reliability scenarios (Kubernetes: churn, forced relist, API server faults, hostile input, slow clients, against the stock plugin; Mesos: master outage, bad states, slow master, failovers); writes docs/reliability.md (SCALE=small: quick)
	cd soak && $(GO) run . -scale $(SCALE) $(SOAKFLAGS)

# The one-node cluster of docs/e2e.md: kubelet, containerd, kube-proxy and
# the controllers on this machine, in a network namespace of their own, our
# image in pods, deploy/ applied as shipped, the upgrade from stock CoreDNS.
# Needs root. A run removes everything it made, even when it fails or is
# killed (the next run clears what a killed one left). E2EFLAGS: more flags
# (go run ./test/e2e -h); -keep leaves the cluster running for a look
# around and prints how to reach it (add -out /tmp/e2e.md to leave
# docs/e2e.md as it is); no run starts over a kept cluster until
# `make e2e-clean` stops and removes it. SCALE=thresholds runs the relist
# at S5, the Kubernetes scalability thresholds, instead (about 40 minutes;
# docs/e2e-thresholds.md, and its table in docs/e2e.md); add
# E2EFLAGS=-thresholds-scale=0.1 for a tenth of it. SCALE=disruptions runs
# the disruptions (killed pods, node-local updates, a drain) with and
# without node-local, ours and stock (about 12 minutes;
# docs/e2e-disruptions.md, and its table in docs/e2e.md).
# (SCALE is the one bench, absorb and soak take; default here too.)
E2EFLAGS ?=
e2e: image ## run deploy/ in a real one-node cluster (as root); writes docs/e2e.md (SCALE=thresholds: the relist at S5; SCALE=disruptions: killed pods, rollouts, a drain)
	hack/deps.sh e2e
	hack/tools.sh e2e >/dev/null
	$(GO) build -o bin/e2e ./test/e2e
	bin/e2e -image $(IMAGE_TAR) -scale $(SCALE) $(E2EFLAGS)

e2e-clean: ## stop and remove what make e2e left: a cluster kept by E2EFLAGS=-keep, or what a killed run left (as root)
	$(GO) build -o bin/e2e ./test/e2e
	bin/e2e -clean
