// FEDLDP_HOT_LOOP marks a function whose loop is worth compiling for wider
// vector units: GCC emits one clone per instruction set and picks the best
// one at load time (function multiversioning), so one portable binary uses
// AVX2 or AVX-512 where the CPU has them. Only for loops whose results do not
// depend on the vector width (integer arithmetic, or IEEE arithmetic without
// contraction: the build sets -ffp-contract=off). Off under sanitizers and on
// other compilers or architectures.
#ifndef FEDLDP_BASE_HOT_LOOP_H_
#define FEDLDP_BASE_HOT_LOOP_H_

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && \
    !defined(FEDLDP_NO_MULTIVERSIONING)
#define FEDLDP_HOT_LOOP __attribute__((target_clones("default", "avx2", "arch=x86-64-v4")))
#else
#define FEDLDP_HOT_LOOP
#endif

#endif  // FEDLDP_BASE_HOT_LOOP_H_
