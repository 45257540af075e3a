# Convenience wrapper around CMake. The two commands of the README:
#   make demo          install what the demo needs, build, run vkllm on a small default
#   make test          install packages, build (plain and -fsanitize=address,undefined), run every test
# and what CI runs after `make test`:
#   make test-full     the shape sweeps: the op tests' full lists, every device profile's selftest,
#                      vkllm against llama.cpp (../shared/peer, set up here when it is there); and
#                      under the sanitizers what `make test` leaves out there (ctest -L full)
#   make test-drivers  the other drivers and tools: lavapipe at subgroup size 4, Mesa 25, AMD's
#                      compiler and driver on simulated chips, SwiftShader, spirv-val 2025.1, and
#                      the Windows build under Wine
#   make windows       the Windows cross build (scripts/build-windows.sh build-win)
JOBS ?= $(shell nproc)
# each phase's time, printed at the end of `make test` (scripts/timed.sh)
PHASES = build/phases.txt
T = scripts/timed.sh $(PHASES)

.PHONY: all deps deps-test deps-windows windows build build-asan test test-fast test-full test-drivers demo clean phases-reset

all: build

deps:
	@$(T) deps scripts/install-deps.sh

deps-test:
	@$(T) deps-test scripts/install-deps.sh --tests

# the Windows lane's MinGW-w64, Wine and Xvfb (test-drivers)
deps-windows:
	scripts/install-deps.sh --windows

build: deps
	@$(T) build sh -c 'cmake -S . -B build -DVKLLM_WERROR=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo && \
	  cmake --build build -j$(JOBS)'

# The sanitizer build takes the optimized build's SPIR-V, as the C arrays made from it (the same
# sources; shaders do not see the C flags), instead of making its 350-odd modules again.
build-asan: deps build
	@$(T) build-asan sh -c 'cmake -S . -B build-asan -DVKLLM_WERROR=ON -DVKLLM_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug \
	  -DVKLLM_SPV_FROM=$(CURDIR)/build/shaders && \
	  cmake --build build-asan -j$(JOBS)'

phases-reset:
	@rm -f $(PHASES)

# Whole suite: the optimized build, then the sanitizer build; each phase's time at the end.
test: phases-reset deps-test build build-asan
	@$(T) ctest-build scripts/run-tests.sh build; \
	 $(T) ctest-build-asan scripts/run-tests.sh build-asan; \
	 awk '{t += $$2; printf "make test: %-17s %5d s  %s\n", $$1, $$2, $$3} END {printf "make test: %-17s %5d s\n", "total", t}' $(PHASES); \
	 ! grep -q FAILED $(PHASES)

# Only the optimized build (quicker while developing).
test-fast: deps-test build
	scripts/run-tests.sh build

# The full tier (ctest -L full) of both builds, with llama.cpp beside it where ../shared/peer is
# there: the shape sweeps (optimized build), and under the sanitizers what `make test` trims there.
test-full: deps-test build build-asan
	@if [ -x ../shared/peer/setup.sh ]; then ../shared/peer/setup.sh || echo "test-full: the llama.cpp peer could not be set up: test_peer is SKIPPED"; fi
	scripts/run-tests.sh --full build build-asan

# The driver lanes (scripts/test-drivers.sh; LANES="sg4 mesa25" runs some of them).
test-drivers: deps-test deps-windows build
	scripts/test-drivers.sh build $(LANES)

windows: deps-windows
	scripts/build-windows.sh build-win

demo: build
	scripts/demo.sh build

clean:
	rm -rf build build-asan
