# Script mode (cmake -DSRC=... -DOUT=... -P git_commit.cmake), run at every build: writes
# `#define VKLLM_GIT_COMMIT "<short hash>"` to OUT, touching it only when the commit changed, so
# an incremental build reports the commit it was built from and recompiles one file for it.
execute_process(COMMAND git rev-parse --short=12 HEAD
                WORKING_DIRECTORY ${SRC}
                OUTPUT_VARIABLE commit OUTPUT_STRIP_TRAILING_WHITESPACE
                ERROR_QUIET RESULT_VARIABLE rc)
if(NOT rc EQUAL 0 OR commit STREQUAL "")
  set(commit "unknown")
endif()
file(WRITE ${OUT}.tmp "#define VKLLM_GIT_COMMIT \"${commit}\"\n")
file(COPY_FILE ${OUT}.tmp ${OUT} ONLY_IF_DIFFERENT)
file(REMOVE ${OUT}.tmp)
