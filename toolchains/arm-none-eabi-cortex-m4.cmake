# Cortex-M4F: single-precision FPU (QEMU: mps2-an386).
set(MOTE_CORTEX_M_FLAGS "-mcpu=cortex-m4 -mthumb -mfloat-abi=hard -mfpu=fpv4-sp-d16")
include(${CMAKE_CURRENT_LIST_DIR}/arm-none-eabi.cmake)
