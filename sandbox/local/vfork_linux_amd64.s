#include "textflag.h"

// func rawVfork(flags, ptid uintptr) (pid uintptr, errno syscall.Errno)
//
// clone(flags, 0, ptid, 0, 0). With CLONE_VM|CLONE_VFORK the child runs on the caller's stack while the
// caller waits, and the child's next call writes its own return address where this function's lies: the
// return address therefore waits in a register (the child has its own copy) across the system call.
TEXT ·rawVfork(SB),NOSPLIT|NOFRAME,$0-32
	MOVQ	flags+0(FP), DI
	MOVQ	$0, SI
	MOVQ	ptid+8(FP), DX
	MOVQ	$0, R10
	MOVQ	$0, R8
	MOVQ	$0, R9
	MOVQ	$56, AX // SYS_clone
	POPQ	R12
	SYSCALL
	PUSHQ	R12
	CMPQ	AX, $0xfffffffffffff001
	JLS	done
	NEGQ	AX
	MOVQ	$0, pid+16(FP)
	MOVQ	AX, errno+24(FP)
	RET
done:
	MOVQ	AX, pid+16(FP)
	MOVQ	$0, errno+24(FP)
	RET
