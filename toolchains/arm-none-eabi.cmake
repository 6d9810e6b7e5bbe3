# Bare-metal Cortex-M with Debian's gcc-arm-none-eabi and newlib, shared by the per-core files
# (arm-none-eabi-cortex-m4/m7/m55.cmake), which set MOTE_CORTEX_M_FLAGS and include this one.
# Builds the runtime library (no OS, no threads, scalar kernels), which is how firmware links it.
set(CMAKE_SYSTEM_NAME Generic)
set(CMAKE_SYSTEM_PROCESSOR arm)
set(CMAKE_C_COMPILER arm-none-eabi-gcc)
set(CMAKE_CXX_COMPILER arm-none-eabi-g++)
set(CMAKE_TRY_COMPILE_TARGET_TYPE STATIC_LIBRARY)  # no startup code to link a test program
set(CMAKE_C_FLAGS_INIT "${MOTE_CORTEX_M_FLAGS} -ffunction-sections -fdata-sections")
set(CMAKE_CXX_FLAGS_INIT "${MOTE_CORTEX_M_FLAGS} -ffunction-sections -fdata-sections -fno-threadsafe-statics")
set(CMAKE_ASM_FLAGS_INIT "${MOTE_CORTEX_M_FLAGS}")
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
