//go:build amd64 && !purego

#include "textflag.h"

// Each function is d[i] += s[i] over the elements of d and s's bytes, 128
// bytes (four 32-byte registers) an iteration, for the whole iterations of
// len(d), leaving the rest; len(s) >= len(d). Y = d + s keeps d the first
// operand, as the scalar instruction the compiler emits for d[i] += s[i]
// does, so a float NaN result carries the same payload. SUM128 is the loop: MOVU
// the unaligned move, ADD the lane-wise addition.
#define SUM128(MOVU, ADD) \
	MOVQ d_base+0(FP), DI \
	MOVQ d_len+8(FP), CX \
	MOVQ s_base+24(FP), SI \
	SHRQ $7, CX \
	JZ   done \
loop: \
	MOVU 0(DI), Y0 \
	MOVU 32(DI), Y1 \
	MOVU 64(DI), Y2 \
	MOVU 96(DI), Y3 \
	ADD  0(SI), Y0, Y0 \
	ADD  32(SI), Y1, Y1 \
	ADD  64(SI), Y2, Y2 \
	ADD  96(SI), Y3, Y3 \
	MOVU Y0, 0(DI) \
	MOVU Y1, 32(DI) \
	MOVU Y2, 64(DI) \
	MOVU Y3, 96(DI) \
	ADDQ $128, DI \
	ADDQ $128, SI \
	DECQ CX \
	JNZ  loop \
	VZEROUPPER \
done: \
	RET

// func addFloat32sAVX(d, s []byte): 32 elements an iteration.
TEXT ·addFloat32sAVX(SB), NOSPLIT, $0-48
	SUM128(VMOVUPS, VADDPS)

// func addFloat64sAVX(d, s []byte): 16 elements an iteration.
TEXT ·addFloat64sAVX(SB), NOSPLIT, $0-48
	SUM128(VMOVUPD, VADDPD)

// func addInt32sAVX2(d, s []byte): wrapping, 32 elements an iteration.
TEXT ·addInt32sAVX2(SB), NOSPLIT, $0-48
	SUM128(VMOVDQU, VPADDD)

// func addInt64sAVX2(d, s []byte): wrapping, 16 elements an iteration.
TEXT ·addInt64sAVX2(SB), NOSPLIT, $0-48
	SUM128(VMOVDQU, VPADDQ)
