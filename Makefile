# Convenience wrapper around CMake. The two commands of the README:
#   make demo    install packages, build, run vkllm on a small default
#   make test    install packages, build (plain and -fsanitize=address,undefined), run every test
JOBS ?= $(shell nproc)

.PHONY: all deps build build-asan test test-fast demo clean

all: build

deps:
	scripts/install-deps.sh

build: deps
	cmake -S . -B build -DVKLLM_WERROR=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo
	cmake --build build -j$(JOBS)

build-asan: deps
	cmake -S . -B build-asan -DVKLLM_WERROR=ON -DVKLLM_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug
	cmake --build build-asan -j$(JOBS)

# Whole suite: the optimized build, then the sanitizer build, then the other drivers' lanes
# (lavapipe at subgroup size 4, Mesa 25's lavapipe: scripts/test-drivers.sh).
test: build build-asan
	scripts/run-tests.sh build build-asan
	scripts/test-drivers.sh build

# Only the optimized build (quicker while developing).
test-fast: build
	scripts/run-tests.sh build

demo: build
	scripts/demo.sh build

clean:
	rm -rf build build-asan
