# Writes the host's embedding of SENTENCE by MODEL (`mote embed -o f32`: little-endian float32, the
# model's own pooling and normalization) to OUTPUT: the embedder firmware's reference. Run at build
# time by CMakeLists.txt.
# Usage: cmake -DMOTE=path/to/mote -DMODEL=model.mote -DSENTENCE=text -DOUTPUT=file.f32 -P embed_golden.cmake
execute_process(COMMAND ${MOTE} embed -m ${MODEL} -p "${SENTENCE}" -o f32 -t 1
  OUTPUT_FILE ${OUTPUT}.new ERROR_VARIABLE error RESULT_VARIABLE status)
if(NOT status EQUAL 0)
  message(FATAL_ERROR "${MOTE} embed -m ${MODEL} failed (${status}): ${error}")
endif()
file(RENAME ${OUTPUT}.new ${OUTPUT})
