# canon: two commands do everything on a fresh Debian/Ubuntu machine.
#   make demo   local Postgres+pgvector, migrations, the example handbook, a server, real questions
#   make test   the same database, go vet, golangci-lint, codegen drift check, go test -race
SHELL := /bin/bash
.DEFAULT_GOAL := help

GO        ?= go
BIN       := bin
CANON     := $(BIN)/canon
export GOFLAGS := -buildvcs=false
# The private cluster started by `make db`; override to use any Postgres with pgvector.
DATABASE_URL ?= $(shell scripts/db.sh url)
export DATABASE_URL
SERVE_ADDR ?= 127.0.0.1:8787
DATASETS  ?= ../shared/datasets

.PHONY: help
help: ## list targets
	@grep -hE '^[a-z0-9-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-14s %s\n", $$1, $$2}'

.PHONY: go
go:
	@scripts/go.sh

.PHONY: db
db: ## provision and start the private Postgres+pgvector cluster (idempotent)
	@scripts/db.sh start

.PHONY: db-stop
db-stop: ## stop the private cluster
	@scripts/db.sh stop

# PDF ingestion runs poppler's pdftotext and pdfinfo (Debian's poppler-utils).
.PHONY: ingest-tools
ingest-tools: ## install poppler-utils for PDF ingestion (idempotent)
	@scripts/ingest-tools.sh

# The connection-pooling test (cmd/canon/TestThroughPgBouncer) starts Debian's pgbouncer.
.PHONY: pgbouncer-tools
pgbouncer-tools: ## install pgbouncer for the connection-pooling test (idempotent; its service is not started)
	@scripts/pgbouncer-tools.sh

.PHONY: build
build: go ## build bin/canon
	$(GO) build -ldflags "-X main.revision=$$(git rev-parse HEAD 2>/dev/null)" -o $(CANON) ./cmd/canon

$(BIN)/sqlc: tools/go.mod tools/go.sum
	cd tools && CGO_ENABLED=0 $(GO) build -o ../$(BIN)/sqlc github.com/sqlc-dev/sqlc/cmd/sqlc

$(BIN)/buf: tools/go.mod tools/go.sum
	cd tools && $(GO) build -o ../$(BIN)/buf github.com/bufbuild/buf/cmd/buf

$(BIN)/golangci-lint: tools/go.mod tools/go.sum
	cd tools && $(GO) build -o ../$(BIN)/golangci-lint github.com/golangci/golangci-lint/v2/cmd/golangci-lint

.PHONY: lint
lint: go $(BIN)/golangci-lint ## golangci-lint with .golangci.yml (errcheck, staticcheck, revive, …)
	$(BIN)/golangci-lint run ./...

# The TypeScript client's npm packages (protoc-gen-es for `make generate`, the
# Connect and MCP clients for `make clients-test`): `npm ci` once per package-lock.json.
.PHONY: clients-deps
clients-deps:
	@scripts/npm-ci.sh clients/ts

GENERATED := gen clients/ts/src/gen README.md

.PHONY: generate
generate: $(BIN)/sqlc $(BIN)/buf clients-deps ## regenerate gen/, clients/ts/src/gen (sqlc, buf, protoc-gen-es) and the README's knob table
	@scripts/schema.sh > gen/schema.sql
	rm -rf gen/db gen/canon clients/ts/src/gen
	$(BIN)/sqlc generate
	$(BIN)/buf generate
	$(BIN)/buf generate --template clients/ts/buf.gen.yaml
	$(GO) run ./internal/knobdoc README.md

.PHONY: check-generated
check-generated: generate ## fail when regenerating changes a committed file
	@if [ -n "$$(git status --porcelain -- $(GENERATED))" ]; then \
		echo "generated code is out of date; run 'make generate' and commit:"; \
		git status --porcelain -- $(GENERATED); git --no-pager diff --stat -- $(GENERATED); exit 1; fi

.PHONY: vet
vet:
	$(GO) vet ./...
	@files=$$(find . -name '*.go' -not -path './.data/*' -not -path './bin/*'); \
		test -z "$$(gofmt -l $$files)" || { echo "gofmt needed:"; gofmt -l $$files; exit 1; }

.PHONY: test
test: go db ingest-tools pgbouncer-tools vet lint check-generated ## everything CI runs: database, vet, lint, codegen drift, go test -race, browser tests, Node clients
	GO=$(GO) scripts/go-test.sh -race -count=1 ./...
	$(MAKE) --no-print-directory test-partitioned
	@scripts/fuzz.sh $(FUZZTIME_TEST)
	$(MAKE) --no-print-directory scenarios
	$(MAKE) --no-print-directory web-check web-test
	$(MAKE) --no-print-directory clients-test

# The packages whose tests depend on how chunks, postings and lexeme_stats are
# laid out, again on databases migrated with KB_TABLE_LAYOUT=partitioned (a
# template of their own): the golden rankings must not move, the bulk path
# must rebuild only its projects' partitions. The whole suite runs with the
# default layout above.
# Of cmd/canon, the commands that read or rebuild indexes by name.
PARTITIONED_PACKAGES ?= ./search/ ./hierarchy/ ./ingest/ ./doctor/ ./db/citus/ ./postgres/
PARTITIONED_COMMANDS ?= TestTableLayout|TestVectorTypeMigrateConvertAndMismatch|TestBulkIngestKilledMidLoad|TestThroughPgBouncer
.PHONY: test-partitioned
test-partitioned: go db ingest-tools pgbouncer-tools ## the ranking, hierarchy, ingest, doctor, Citus-rule, migration and index-rebuilding command tests with KB_TABLE_LAYOUT=partitioned
	KB_TABLE_LAYOUT=partitioned GO=$(GO) scripts/go-test.sh -race -count=1 $(PARTITIONED_PACKAGES)
	KB_TABLE_LAYOUT=partitioned GO=$(GO) scripts/go-test.sh -race -count=1 -run '$(PARTITIONED_COMMANDS)' ./cmd/canon/

# The web chat (web/) is built by Vite and its bundle web/dist is committed, like
# gen/, so `go build` embeds it without Node; web-check rebuilds it and fails on drift.
.PHONY: web-tools
web-tools: ## install chromium (apt) and web/'s npm packages (npm ci) for the browser tests (idempotent)
	@scripts/web-tools.sh

.PHONY: web-build
web-build: web-tools ## rebuild the committed web bundle web/dist (after changing web/src)
	cd web && npm run --silent build

.PHONY: web-check
web-check: web-build ## fail when web/dist differs from what web/src builds
	@if [ -n "$$(git status --porcelain -- web/dist)" ]; then \
		echo "web/dist is out of date; run 'make web-build' and commit:"; \
		git status --porcelain -- web/dist; exit 1; fi

.PHONY: web-test
web-test: web-tools build db ## the web chat in headless Chromium against canon serve, plus the /api/chat protocol test
	cd web && node --test --test-concurrency=1 test/*.test.mjs

# The TypeScript Connect example (Search, ChatStream over gRPC-web) and the MCP
# client test (@modelcontextprotocol/sdk) against a live `canon serve`.
.PHONY: clients-test
clients-test: build clients-deps ## Node clients (Connect over gRPC-web, MCP over HTTP) against canon serve
	@scripts/clients-test.sh

# Fuzzing counts inputs, not seconds, so a run is the same work on any machine.
FUZZTIME_TEST ?= 300x
FUZZTIME      ?= 50000x

.PHONY: fuzz
fuzz: go db ## every fuzz target for FUZZTIME inputs (crashers land in testdata/fuzz: check them in)
	@scripts/fuzz.sh $(FUZZTIME)

.PHONY: scenarios
scenarios: build ## the handbook, answer, entity, second-handbook (kestrel) and supersession scenarios with their gates (make test runs them)
	@if [ -f bench/scenarios/handbook.yaml ] && $(CANON) bench scenarios --help >/dev/null 2>&1; then \
		$(CANON) migrate up >/dev/null && $(CANON) bench scenarios bench/scenarios/handbook.yaml --gate && \
		$(CANON) bench scenarios bench/scenarios/answers.yaml --gate && \
		$(CANON) bench scenarios bench/scenarios/entities.yaml --gate && \
		$(CANON) bench scenarios bench/scenarios/kestrel.yaml --gate && \
		$(CANON) bench scenarios bench/scenarios/supersession.yaml --gate; fi

.PHONY: migrate
migrate: build db ## apply the schema migrations to DATABASE_URL (canon migrate up)
	$(CANON) migrate up

.PHONY: demo
demo: go db ingest-tools build ## database, migrations, example handbook, server, real questions
	@scripts/demo.sh

.PHONY: bench
bench: go db build ## quality on both BEIR sets and latency at 100k chunks; writes bench/results/
	@scripts/bench.sh

# Not in make bench nor make test: loading a million chunks takes about an hour on 2 cores.
.PHONY: bench-1m
bench-1m: go db build ## latency at 1,000,000 chunks for vector and halfvec storage (BENCH_1M_CHUNKS); writes bench/results/latency-1m*.md
	@scripts/bench-1m.sh

.PHONY: clean
clean:
	rm -rf $(BIN)
