# Makefile - the two commands of the README, and their parts.
#
#   make demo   install packages, build, start a 4-node local cluster under
#               .local-cluster/ and run a 2-node job on it
#   make test   install packages, build, run every test
#   make fuzz   build the fuzz harnesses (clang, ASan+UBSan) and run each
#               for FUZZ_SECONDS (docs/fuzzing.md)
#
# Both install what they need with apt-get (as root, or through sudo).

BUILD ?= build
CLUSTER ?= .local-cluster

# libpmix-dev: the agent's PMIx server; libraft-dev: the replicated
# scheduler's Raft (docs/architecture.md "Replication"); openmpi-bin, libopenmpi-dev and
# python3-mpi4py: the MPI programs t2006 starts without mpirun;
# prometheus: promtool and a real Prometheus that t1010 checks and
# scrapes /metrics with; libssl-dev: the scheduler's TLS; openssl: the
# command deploy/tls-certs.sh makes certificates with (the local cluster,
# the tests).
PACKAGES := build-essential meson ninja-build pkg-config python3 \
	libuv1-dev libsqlite3-dev libcurl4-openssl-dev libcjson-dev \
	libhttp-parser-dev libssl-dev libpmix-dev libraft-dev \
	sqlite3 curl openssl procps python3-torch python3-numpy python3-pytest \
	openmpi-bin libopenmpi-dev python3-mpi4py prometheus

# The fuzz harnesses (docs/fuzzing.md) need clang and its libFuzzer runtime,
# which Debian's clang only recommends.
FUZZ_PACKAGES := clang libclang-rt-14-dev
FUZZ_SECONDS ?= 60
FUZZ_HOURS ?= 4

.PHONY: all deps build demo demo-down test test-unit test-sanitize bench clean \
	fuzz-build fuzz fuzz-campaign

all: build

# Install only when something is missing, so repeated runs stay fast;
# wait for the package manager's lock when another install runs.
deps:
	@tools/apt-install.sh $(PACKAGES)

$(BUILD)/build.ninja:
	meson setup $(BUILD)

build: deps $(BUILD)/build.ninja
	ninja -C $(BUILD)

demo: build
	deploy/local-cluster.sh up --dir $(CLUSTER) --nodes 4 --gpus-per-node 8
	deploy/demo.sh $(CLUSTER)

demo-down:
	deploy/local-cluster.sh down --dir $(CLUSTER)

test: build
	tests/run.sh $(BUILD)

test-unit: build
	tests/run.sh $(BUILD) --suite unit

# The same suites under AddressSanitizer and UndefinedBehaviorSanitizer.
test-sanitize: deps
	[ -f $(BUILD)-asan/build.ninja ] || \
		meson setup $(BUILD)-asan -Db_sanitize=address,undefined \
			-Db_lundef=false -Dbuildtype=debug
	ninja -C $(BUILD)-asan
	ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
	LSAN_OPTIONS=suppressions=$(CURDIR)/tests/lsan.supp:print_suppressions=0 \
	UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
		tests/run.sh $(BUILD)-asan

bench: build
	bench/run.sh $(BUILD)

# Every fuzz harness, with every library it links built for libFuzzer.
fuzz-build: deps
	@tools/apt-install.sh $(FUZZ_PACKAGES)
	[ -f $(BUILD)-fuzz/build.ninja ] || \
		CC=clang meson setup $(BUILD)-fuzz -Dfuzz=true -Dtests=false \
			-Db_sanitize=address,undefined -Db_lundef=false
	ninja -C $(BUILD)-fuzz fuzzers

# Each harness for FUZZ_SECONDS; ends with "N passed, N failed".
fuzz: fuzz-build
	fuzz/run.sh -t $(FUZZ_SECONDS) $(BUILD)-fuzz

# Hours of it, in rounds (tools/fuzz-campaign.sh prints the figures).
fuzz-campaign: fuzz-build
	tools/fuzz-campaign.sh -d $$(($(FUZZ_HOURS) * 3600)) $(BUILD)-fuzz

clean:
	rm -rf $(BUILD) $(BUILD)-asan $(BUILD)-fuzz
