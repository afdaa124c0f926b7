//go:build amd64 && !purego

#include "textflag.h"

// func addFloat32sAVX(d, s []float32)
// d[i] += s[i] for i < len(d), 32 elements per iteration; len(d) is a
// multiple of 32 and len(s) >= len(d). Y = d + s keeps d the first
// operand, as the scalar ADDSS the compiler emits for d[i] += s[i] does,
// so a NaN result carries the same payload.
TEXT ·addFloat32sAVX(SB), NOSPLIT, $0-48
	MOVQ d_base+0(FP), DI
	MOVQ d_len+8(FP), CX
	MOVQ s_base+24(FP), SI
	SHRQ $5, CX
	JZ   done32

loop32:
	VMOVUPS 0(DI), Y0
	VMOVUPS 32(DI), Y1
	VMOVUPS 64(DI), Y2
	VMOVUPS 96(DI), Y3
	VADDPS  0(SI), Y0, Y0
	VADDPS  32(SI), Y1, Y1
	VADDPS  64(SI), Y2, Y2
	VADDPS  96(SI), Y3, Y3
	VMOVUPS Y0, 0(DI)
	VMOVUPS Y1, 32(DI)
	VMOVUPS Y2, 64(DI)
	VMOVUPS Y3, 96(DI)
	ADDQ    $128, DI
	ADDQ    $128, SI
	DECQ    CX
	JNZ     loop32
	VZEROUPPER

done32:
	RET

// func addFloat64sAVX(d, s []float64)
// The same for float64, 16 elements per iteration; len(d) is a multiple
// of 16.
TEXT ·addFloat64sAVX(SB), NOSPLIT, $0-48
	MOVQ d_base+0(FP), DI
	MOVQ d_len+8(FP), CX
	MOVQ s_base+24(FP), SI
	SHRQ $4, CX
	JZ   done64

loop64:
	VMOVUPD 0(DI), Y0
	VMOVUPD 32(DI), Y1
	VMOVUPD 64(DI), Y2
	VMOVUPD 96(DI), Y3
	VADDPD  0(SI), Y0, Y0
	VADDPD  32(SI), Y1, Y1
	VADDPD  64(SI), Y2, Y2
	VADDPD  96(SI), Y3, Y3
	VMOVUPD Y0, 0(DI)
	VMOVUPD Y1, 32(DI)
	VMOVUPD Y2, 64(DI)
	VMOVUPD Y3, 96(DI)
	ADDQ    $128, DI
	ADDQ    $128, SI
	DECQ    CX
	JNZ     loop64
	VZEROUPPER

done64:
	RET

// func addInt32sAVX2(d, s []int32)
// d[i] += s[i], wrapping, 32 elements per iteration; len(d) is a multiple
// of 32.
TEXT ·addInt32sAVX2(SB), NOSPLIT, $0-48
	MOVQ d_base+0(FP), DI
	MOVQ d_len+8(FP), CX
	MOVQ s_base+24(FP), SI
	SHRQ $5, CX
	JZ   done32i

loop32i:
	VMOVDQU 0(DI), Y0
	VMOVDQU 32(DI), Y1
	VMOVDQU 64(DI), Y2
	VMOVDQU 96(DI), Y3
	VPADDD  0(SI), Y0, Y0
	VPADDD  32(SI), Y1, Y1
	VPADDD  64(SI), Y2, Y2
	VPADDD  96(SI), Y3, Y3
	VMOVDQU Y0, 0(DI)
	VMOVDQU Y1, 32(DI)
	VMOVDQU Y2, 64(DI)
	VMOVDQU Y3, 96(DI)
	ADDQ    $128, DI
	ADDQ    $128, SI
	DECQ    CX
	JNZ     loop32i
	VZEROUPPER

done32i:
	RET

// func addInt64sAVX2(d, s []int64)
// The same for int64, 16 elements per iteration; len(d) is a multiple
// of 16.
TEXT ·addInt64sAVX2(SB), NOSPLIT, $0-48
	MOVQ d_base+0(FP), DI
	MOVQ d_len+8(FP), CX
	MOVQ s_base+24(FP), SI
	SHRQ $4, CX
	JZ   done64i

loop64i:
	VMOVDQU 0(DI), Y0
	VMOVDQU 32(DI), Y1
	VMOVDQU 64(DI), Y2
	VMOVDQU 96(DI), Y3
	VPADDQ  0(SI), Y0, Y0
	VPADDQ  32(SI), Y1, Y1
	VPADDQ  64(SI), Y2, Y2
	VPADDQ  96(SI), Y3, Y3
	VMOVDQU Y0, 0(DI)
	VMOVDQU Y1, 32(DI)
	VMOVDQU Y2, 64(DI)
	VMOVDQU Y3, 96(DI)
	ADDQ    $128, DI
	ADDQ    $128, SI
	DECQ    CX
	JNZ     loop64i
	VZEROUPPER

done64i:
	RET
