# Cortex-M55 (Armv8.1-M): GCC 12's -mcpu=cortex-m55 includes the double-precision FPU and Helium
# (MVE with floating point, __ARM_FEATURE_MVE 3); QEMU: mps3-an547.
set(MOTE_CORTEX_M_FLAGS "-mcpu=cortex-m55 -mthumb -mfloat-abi=hard")
include(${CMAKE_CURRENT_LIST_DIR}/arm-none-eabi.cmake)
