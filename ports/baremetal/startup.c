/* Startup for a Cortex-M (M4F, M7, M55) under -nostartfiles: the vector table and the reset
 * handler. Reset: enable the FPU (before any float instruction can run; on the M55 the same bits
 * enable MVE), paint the stack, copy .data from flash to RAM, zero .bss, open newlib's
 * semihosting handles, run static constructors, call main, exit with its return value
 * (semihosting hands the code back to the host, e.g. QEMU's exit status). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

extern uint32_t __data_load__[], __data_start__[], __data_end__[];
extern uint32_t __bss_start__[], __bss_end__[];
extern uint32_t __stack_top[], __stack_limit[];

/* Every stack word below the reset handler's frame holds this until something writes it. */
#define MOTE_STACK_PAINT 0x5AA5F00Du

extern int main(void);
extern void initialise_monitor_handles(void); /* newlib's librdimon (normally called by crt0) */
extern void __libc_init_array(void);

void Reset_Handler(void);
void Default_Handler(void);
void SysTick_Handler(void) __attribute__((weak, alias("Default_Handler")));

/* crti/crtn are not linked with -nostartfiles; __libc_init_array and exit still call these. */
void _init(void) {}
void _fini(void) {}

/* Entries 0..15 of the Cortex-M vector table (no peripheral interrupts are used). */
__attribute__((section(".isr_vector"), used)) const void *const mote_vector_table[16] = {
    __stack_top, /* initial stack pointer */
    (const void *)Reset_Handler,
    (const void *)Default_Handler, /* NMI */
    (const void *)Default_Handler, /* HardFault */
    (const void *)Default_Handler, /* MemManage */
    (const void *)Default_Handler, /* BusFault */
    (const void *)Default_Handler, /* UsageFault */
    0,
    0,
    0,
    0,
    (const void *)Default_Handler, /* SVCall */
    (const void *)Default_Handler, /* DebugMonitor */
    0,
    (const void *)Default_Handler, /* PendSV */
    (const void *)SysTick_Handler,
};

/* C code after this point may use the FPU: the first instructions grant CP10/CP11 access. */
static void __attribute__((noreturn, used)) reset_c(void) {
  uint32_t *sp;
  __asm volatile("mov %0, sp" : "=r"(sp));
  for (uint32_t *p = __stack_limit; p < sp - 16; ++p) *p = MOTE_STACK_PAINT; /* 64 B below this frame */
  const size_t data_bytes = (size_t)((char *)__data_end__ - (char *)__data_start__);
  memcpy(__data_start__, __data_load__, data_bytes);
  memset(__bss_start__, 0, (size_t)((char *)__bss_end__ - (char *)__bss_start__));
  initialise_monitor_handles();
  __libc_init_array();
  exit(main());
}

/* Bytes of the stack ever written: from its top down to the lowest word that lost its paint. */
size_t mote_fw_stack_high_water(void) {
  const uint32_t *p = __stack_limit;
  while (p < __stack_top && *p == MOTE_STACK_PAINT) ++p;
  return (size_t)((const char *)__stack_top - (const char *)p);
}

size_t mote_fw_stack_size(void) { return (size_t)((const char *)__stack_top - (const char *)__stack_limit); }

/* Naked so that no compiler-generated code (which might touch the FPU) runs before CPACR. */
__attribute__((naked, noreturn)) void Reset_Handler(void) {
  __asm volatile(
      "ldr r0, =0xE000ED88\n" /* SCB->CPACR */
      "ldr r1, [r0]\n"
      "orr r1, r1, #(0xF << 20)\n" /* CP10, CP11: full access */
      "str r1, [r0]\n"
      "dsb\n"
      "isb\n"
      "b reset_c\n");
}

/* Any fault or unexpected interrupt: say so over semihosting and exit with status 2. */
void Default_Handler(void) {
  static const char message[] = "mote firmware: FAIL unexpected exception (fault)\n";
  register uint32_t op __asm("r0") = 0x04; /* SYS_WRITE0 */
  register const char *arg __asm("r1") = message;
  __asm volatile("bkpt 0xAB" : "+r"(op) : "r"(arg) : "memory");
  _Exit(2);
}
