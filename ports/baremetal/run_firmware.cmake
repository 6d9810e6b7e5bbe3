# Runs a firmware image under qemu-system-arm (a ctest, see CMakeLists.txt) and checks it:
#   MODE=logits  the image's own verdict (exit status 0: logits within tolerance of PyTorch's);
#   MODE=kernels likewise (the MVE kernels equal their scalar twins);
#   MODE=text    exit status 0, and the text it printed between its marker lines is byte-identical
#                to `mote run -m MODEL -p PROMPT -n MAX_TOKENS --temp 0 --kv f32` on the host (the
#                firmware's session keeps an f32 KV cache).
# EXPECT (optional): a line the image must also have printed (e.g. its power-cycle report).
# A QEMU without the board skips, saying so. The whole output is kept in LOG (and echoed).
execute_process(COMMAND ${QEMU} -M help OUTPUT_VARIABLE machines RESULT_VARIABLE status)
if(NOT status EQUAL 0 OR NOT machines MATCHES "(^|\n)${MACHINE} ")
  message("SKIPPED: ${QEMU} cannot emulate the ${MACHINE} board")
  return()
endif()

string(TIMESTAMP start "%s")
execute_process(
  COMMAND ${QEMU} -M ${MACHINE} -nographic -monitor none -serial none
          -semihosting-config enable=on,target=native -kernel ${ELF}
  OUTPUT_FILE ${LOG} ERROR_VARIABLE qemu_error RESULT_VARIABLE status TIMEOUT 280)
string(TIMESTAMP end "%s")
file(READ ${LOG} output)
math(EXPR seconds "${end} - ${start}")
message("${output}")
message("run_firmware: ${MACHINE} ran ${ELF} in ${seconds} s of host time")
if(NOT status EQUAL 0)
  message(FATAL_ERROR "the firmware exited with status '${status}' ${qemu_error}")
endif()
if(DEFINED EXPECT AND NOT output MATCHES "${EXPECT}")
  message(FATAL_ERROR "the firmware did not print '${EXPECT}'")
endif()
if(NOT MODE STREQUAL "text")
  return()
endif()

set(begin_marker "<<<mote-text\n")
set(end_marker "\nmote-text>>>\n")
string(FIND "${output}" "${begin_marker}" begin)
string(FIND "${output}" "${end_marker}" end REVERSE)
if(begin LESS 0 OR end LESS begin)
  message(FATAL_ERROR "the firmware printed no text between its markers")
endif()
string(LENGTH "${begin_marker}" marker_length)
math(EXPR begin "${begin} + ${marker_length}")
math(EXPR length "${end} - ${begin}")
string(SUBSTRING "${output}" ${begin} ${length} device_text)

file(READ ${PROMPT_FILE} prompt)
get_filename_component(log_dir ${LOG} DIRECTORY)
get_filename_component(log_name ${LOG} NAME_WE)
set(host_file ${log_dir}/${log_name}.host.txt)
execute_process(COMMAND ${MOTE} run -m ${MODEL} -p "${prompt}" -n ${MAX_TOKENS} --temp 0 --kv f32
  OUTPUT_FILE ${host_file} ERROR_VARIABLE host_error RESULT_VARIABLE status)
if(NOT status EQUAL 0)
  message(FATAL_ERROR "the host's mote run failed (${status}): ${host_error}")
endif()
file(READ ${host_file} host_text)
string(LENGTH "${host_text}" host_bytes)
file(WRITE ${log_dir}/${log_name}.device.txt "${device_text}")
if(NOT device_text STREQUAL host_text)
  message(FATAL_ERROR "the device's text differs from the host's:\n--- device (${log_name}.device.txt)\n"
                      "${device_text}\n--- host (${host_file})\n${host_text}")
endif()
message("run_firmware: PASS: the device's prompt and text are byte-identical to the host's "
        "mote run --temp 0 (${host_bytes} bytes)")
