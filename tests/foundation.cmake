# Foundation: the device layer and the first shaders.
vkllm_add_test(NAME test_vk SOURCES test_vk.c LABELS gpu)
vkllm_add_test(NAME test_ops_basic SOURCES test_ops_basic.c LABELS ${VKLLM_ASAN_FULL_LABELS} TIMEOUT 600)
vkllm_add_script_test(NAME test_cli_devices
  COMMAND python3 ${CMAKE_CURRENT_SOURCE_DIR}/test_cli_devices.py $<TARGET_FILE:vkllm> --quick LABELS gpu)
if(NOT VKLLM_SANITIZE)
  # The full tier: test_cli_devices with the selftest's defaults of every op (what `vkllm selftest
  # --defaults` runs on this device; the op tests run every kernel and variant in `make test`).
  vkllm_add_script_test(NAME test_cli_devices_full LABELS gpu full
    COMMAND python3 ${CMAKE_CURRENT_SOURCE_DIR}/test_cli_devices.py $<TARGET_FILE:vkllm>)
endif()
# VKLLM_VALIDATE=1 with the validation layer listed or not, named in VK_INSTANCE_LAYERS or not
# (runtime/vk/device.c; under Wine the loader lists no layer and the host's loader inserts it).
vkllm_add_script_test(NAME test_validate_env LABELS gpu
  COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/test_validate_env.sh $<TARGET_FILE:vkllm>)
if(NOT VKLLM_SANITIZE)
  # An installed vkllm is usable through find_package(vkllm) and pkg-config.
  vkllm_add_script_test(NAME test_install LABELS gpu
    COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/test_install.sh ${CMAKE_BINARY_DIR} ${CMAKE_SOURCE_DIR})
endif()
# Every device profile (VKLLM_DEVICE_PROFILE): clamps, stories260K, and the selftest under the
# specification's floor; the full tier: the selftest under every profile, every variant.
# Under the sanitizers, without the selftest (--no-selftest: the optimized build runs it).
if(VKLLM_SANITIZE)
  set(VKLLM_PROFILES_ARGS --no-selftest)
else()
  set(VKLLM_PROFILES_ARGS)
endif()
vkllm_add_script_test(NAME test_profiles TIMEOUT 900
  COMMAND python3 ${CMAKE_CURRENT_SOURCE_DIR}/test_profiles.py $<TARGET_FILE:vkllm> ${VKLLM_PROFILES_ARGS} LABELS gpu)
if(NOT VKLLM_SANITIZE)
  vkllm_add_script_test(NAME test_profiles_full TIMEOUT 900 LABELS gpu full
    COMMAND python3 ${CMAKE_CURRENT_SOURCE_DIR}/test_profiles.py $<TARGET_FILE:vkllm> --full)
endif()
if(NOT VKLLM_SANITIZE)
  # scripts/gpu-check.sh runs here as on a lent GPU (small files): every step and its reports
  # (`make test-full`: 33 s of the default suite's budget for a script that runs only on lent GPUs).
  vkllm_add_script_test(NAME test_gpu_check_local TIMEOUT 600 LABELS gpu full
    COMMAND python3 ${CMAKE_CURRENT_SOURCE_DIR}/test_gpu_check.py ${CMAKE_SOURCE_DIR}/scripts/gpu-check.sh
            ${CMAKE_BINARY_DIR})
endif()
