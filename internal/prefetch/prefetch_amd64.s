//go:build amd64 && !purego

#include "textflag.h"

// LINES(OP) runs OP on every line from b's first to the line of its last
// byte (DI the line's address). len(b) > 0.
#define LINES(OP) \
	MOVQ b_base+0(FP), DI \
	MOVQ b_len+8(FP), CX \
	ADDQ DI, CX \
	ANDQ $~63, DI \
loop: \
	OP \
	ADDQ $64, DI \
	CMPQ DI, CX \
	JB   loop \
	RET

// Go's assembler has no mnemonic for PREFETCHW: 0F 0D /1 with (DI) is
// 0F 0D 0F.
#define PREFETCHW_DI BYTE $0x0F; BYTE $0x0D; BYTE $0x0F
#define PREFETCHT0_DI PREFETCHT0 0(DI)

// func writeW(b []byte)
TEXT ·writeW(SB), NOSPLIT, $0-24
	LINES(PREFETCHW_DI)

// func writeT0(b []byte): where the CPU has no PREFETCHW.
TEXT ·writeT0(SB), NOSPLIT, $0-24
	LINES(PREFETCHT0_DI)

// func cpuid(eax, ecx uint32) (a, b, c, d uint32)
TEXT ·cpuid(SB), NOSPLIT, $0-24
	MOVL eax+0(FP), AX
	MOVL ecx+4(FP), CX
	CPUID
	MOVL AX, a+8(FP)
	MOVL BX, b+12(FP)
	MOVL CX, c+16(FP)
	MOVL DX, d+20(FP)
	RET
