# ctest script: install mote into a scratch prefix, build tests/install_consumer against it
# with find_package(mote), and run it on a converted tiny model.
#   cmake -DBUILD_DIR=... -DSOURCE_DIR=... -DWORK_DIR=... -DMOTE_CLI=... -P check_install.cmake
file(REMOVE_RECURSE "${WORK_DIR}")
function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "failed (${rc}): ${ARGN}\n${out}")
  endif()
endfunction()
run(${CMAKE_COMMAND} --install "${BUILD_DIR}" --prefix "${WORK_DIR}/prefix")
run(${CMAKE_COMMAND} -S "${SOURCE_DIR}/tests/install_consumer" -B "${WORK_DIR}/build"
    -DCMAKE_PREFIX_PATH=${WORK_DIR}/prefix -DCMAKE_BUILD_TYPE=Release
    "-DCMAKE_CXX_FLAGS=${CONSUMER_CXX_FLAGS}")  # e.g. a sanitizer build's runtime flags
run(${CMAKE_COMMAND} --build "${WORK_DIR}/build")
run("${MOTE_CLI}" convert "${SOURCE_DIR}/tests/golden/tiny_mha.bin" --tokenizer "${SOURCE_DIR}/tests/golden/tiny_tok64.bin"
    -o "${WORK_DIR}/tiny.mote")
execute_process(COMMAND "${WORK_DIR}/build/consumer" "${WORK_DIR}/tiny.mote" RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0 OR NOT out MATCHES "consumer ok")
  message(FATAL_ERROR "consumer failed (${rc}): ${out} ${err}")
endif()
message(STATUS "${out}")
