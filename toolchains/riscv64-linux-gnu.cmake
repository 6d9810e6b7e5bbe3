# Cross-compiles for 64-bit RISC-V Linux (rv64gc) with Debian's g++-riscv64-linux-gnu; binaries
# (and ctest) run under qemu-riscv64 from Debian's qemu-user, with the cross sysroot for the
# dynamic loader. xsimd 8.1 has no RISC-V arch: the scalar kernels run (MOTE_SIMD finds none).
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR riscv64)
set(CMAKE_C_COMPILER riscv64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER riscv64-linux-gnu-g++)
set(CMAKE_FIND_ROOT_PATH /usr/riscv64-linux-gnu)
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-riscv64;-L;/usr/riscv64-linux-gnu)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE BOTH)  # header-only xsimd and doctest from the host
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
