//go:build amd64 && !purego

#include "textflag.h"

// func writeW(b []byte): PREFETCHW from b's first line to the line of its
// last byte. len(b) > 0. Go's assembler has no mnemonic for PREFETCHW:
// 0F 0D /1 with (DI) is 0F 0D 0F.
TEXT ·writeW(SB), NOSPLIT, $0-24
	MOVQ b_base+0(FP), DI
	MOVQ b_len+8(FP), CX
	ADDQ DI, CX
	ANDQ $~63, DI
wloop:
	BYTE $0x0F; BYTE $0x0D; BYTE $0x0F // PREFETCHW (DI)
	ADDQ $64, DI
	CMPQ DI, CX
	JB   wloop
	RET

// func writeT0(b []byte): PREFETCHT0 likewise, where the CPU has no
// PREFETCHW.
TEXT ·writeT0(SB), NOSPLIT, $0-24
	MOVQ b_base+0(FP), DI
	MOVQ b_len+8(FP), CX
	ADDQ DI, CX
	ANDQ $~63, DI
tloop:
	PREFETCHT0 0(DI)
	ADDQ $64, DI
	CMPQ DI, CX
	JB   tloop
	RET

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
