# Invariants 1, 2 and 7 checked on the built library itself: libmote.a must not call the heap,
# throw, use RTTI or call the OS, whatever its source says.
#   cmake -DNM=<nm> -DLIBRARY=<libmote.a> -P check_symbols.cmake
cmake_policy(SET CMP0007 NEW)
execute_process(COMMAND "${NM}" -u --format=just-symbols "${LIBRARY}"
                RESULT_VARIABLE rc OUTPUT_VARIABLE symbols ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${NM} failed on ${LIBRARY}: ${err}")
endif()
string(REPLACE "\n" ";" symbols "${symbols}")
list(REMOVE_DUPLICATES symbols)
# Heap (C and C++), exceptions, RTTI, and files/threads/mapping of an OS.
set(forbidden
  "^(malloc|calloc|realloc|free|aligned_alloc|posix_memalign|memalign)$"
  "^_Zn[wa]" "^_Zd[la]"
  "^__cxa_(throw|allocate_exception|begin_catch|end_catch|rethrow)$" "^__gxx_personality" "^_Unwind_"
  "^_ZTI" "^__dynamic_cast$"
  "^(fopen|fclose|fread|fwrite|open|close|read|write|mmap|munmap|printf|puts|exit|abort)$"
  "^pthread_")
set(found "")
foreach(symbol IN LISTS symbols)
  foreach(pattern IN LISTS forbidden)
    if(symbol MATCHES "${pattern}")
      list(APPEND found "${symbol}")
    endif()
  endforeach()
endforeach()
if(found)
  message(FATAL_ERROR "${LIBRARY} references forbidden symbols: ${found}")
endif()
list(LENGTH symbols count)
message(STATUS "${LIBRARY}: ${count} external symbols, none forbidden")
