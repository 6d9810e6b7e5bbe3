# Cortex-M7: double-precision FPU (QEMU: mps2-an500).
set(MOTE_CORTEX_M_FLAGS "-mcpu=cortex-m7 -mthumb -mfloat-abi=hard -mfpu=fpv5-d16")
include(${CMAKE_CURRENT_LIST_DIR}/arm-none-eabi.cmake)
