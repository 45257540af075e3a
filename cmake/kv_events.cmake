# `vkllm serve --kv-events` (cli/kv_events.c): the KV pool's events published over ZeroMQ as
# msgpack, as vLLM does, for the llm-d router's precise prefix routing. Optional: found with
# pkg-config (Debian: libzmq3-dev, libmsgpack-dev; msgpack-c's .pc is msgpack-c from 6.0, msgpack
# before), else the option says the build lacks them. Not searched on Windows (the cross build
# has neither; pkg-config there reads its sysroot alone).
option(VKLLM_KV_EVENTS "serve --kv-events where libzmq and msgpack-c are found" ON)
set(VKLLM_HAVE_KV_EVENTS OFF)
if(VKLLM_KV_EVENTS AND NOT WIN32)
  find_package(PkgConfig QUIET)
  if(PKG_CONFIG_FOUND)
    pkg_check_modules(VKLLM_ZMQ QUIET IMPORTED_TARGET libzmq)
    pkg_search_module(VKLLM_MSGPACK QUIET IMPORTED_TARGET msgpack-c msgpack)
    if(VKLLM_ZMQ_FOUND AND VKLLM_MSGPACK_FOUND)
      set(VKLLM_HAVE_KV_EVENTS ON)
      target_compile_definitions(vkllm PRIVATE VKLLM_HAVE_KV_EVENTS)
      target_link_libraries(vkllm PRIVATE PkgConfig::VKLLM_ZMQ PkgConfig::VKLLM_MSGPACK)
    endif()
  endif()
endif()
if(VKLLM_HAVE_KV_EVENTS)
  message(STATUS "serve --kv-events: libzmq ${VKLLM_ZMQ_VERSION}, msgpack-c ${VKLLM_MSGPACK_VERSION}")
else()
  message(STATUS "serve --kv-events: off (libzmq and msgpack-c not found: libzmq3-dev, libmsgpack-dev)")
endif()
