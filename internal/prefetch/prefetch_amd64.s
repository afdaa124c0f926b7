//go:build amd64 && !purego

#include "textflag.h"

// func write(b []byte): PREFETCHT0 from b's first line to the line of its
// last byte. len(b) > 0.
TEXT ·write(SB), NOSPLIT, $0-24
	MOVQ b_base+0(FP), DI
	MOVQ b_len+8(FP), CX
	ADDQ DI, CX
	ANDQ $~63, DI
loop:
	PREFETCHT0 0(DI)
	ADDQ $64, DI
	CMPQ DI, CX
	JB   loop
	RET
