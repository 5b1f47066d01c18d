#include "textflag.h"

// func rawVfork(flags, ptid uintptr) (pid uintptr, errno syscall.Errno)
//
// clone(flags, 0, ptid, 0, 0). The return address stays in the link register, which the child has its own
// copy of, so the child's calls on the shared stack cannot overwrite it (see the amd64 version).
TEXT ·rawVfork(SB),NOSPLIT|NOFRAME,$0-32
	MOVD	flags+0(FP), R0
	MOVD	$0, R1
	MOVD	ptid+8(FP), R2
	MOVD	$0, R3
	MOVD	$0, R4
	MOVD	$0, R5
	MOVD	$220, R8 // SYS_clone
	SVC
	CMN	$4095, R0
	BCC	done
	NEG	R0, R0
	MOVD	ZR, pid+16(FP)
	MOVD	R0, errno+24(FP)
	RET
done:
	MOVD	R0, pid+16(FP)
	MOVD	ZR, errno+24(FP)
	RET
