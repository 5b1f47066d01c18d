//go:build linux

package local

import (
	"encoding/binary"
	"runtime"
	"testing"

	"github.com/elastic/go-seccomp-bpf/arch"
	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// runFilter interprets a seccomp program on one system call, loading words in little-endian order as the
// kernel does on x86-64 and arm64.
func runFilter(t *testing.T, insts []bpf.Instruction, auditArch uint32, nr uint32, args ...uint64) uint32 {
	t.Helper()
	data := make([]byte, 64)
	binary.LittleEndian.PutUint32(data[0:], nr)
	binary.LittleEndian.PutUint32(data[4:], auditArch)
	for i, a := range args {
		binary.LittleEndian.PutUint64(data[16+8*i:], a)
	}
	var acc uint32
	for pc := 0; pc < len(insts); pc++ {
		switch in := insts[pc].(type) {
		case bpf.LoadAbsolute:
			acc = binary.LittleEndian.Uint32(data[in.Off:])
		case bpf.ALUOpConstant:
			if in.Op != bpf.ALUOpAnd {
				t.Fatalf("unexpected ALU op %v", in)
			}
			acc &= in.Val
		case bpf.JumpIf:
			var ok bool
			switch in.Cond {
			case bpf.JumpEqual:
				ok = acc == in.Val
			case bpf.JumpGreaterOrEqual:
				ok = acc >= in.Val
			default:
				t.Fatalf("unexpected jump %v", in)
			}
			if ok {
				pc += int(in.SkipTrue)
			} else {
				pc += int(in.SkipFalse)
			}
		case bpf.RetConstant:
			return in.Val
		default:
			t.Fatalf("unexpected instruction %T", in)
		}
	}
	t.Fatal("program ran off its end")
	return 0
}

// TestSeccompProgramArches assembles the filter for both architectures the backend builds for, checks the
// kernel's own assembler accepts it, and runs calls through it: the native ABI's allowed and denied calls,
// the argument checks, and a foreign ABI.
func TestSeccompProgramArches(t *testing.T) {
	for _, a := range []*arch.Info{arch.X86_64, arch.AARCH64} {
		t.Run(a.Name, func(t *testing.T) {
			insts, err := seccompProgram(a)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := bpf.Assemble(insts); err != nil {
				t.Fatal(err)
			}
			if len(insts) > 200 {
				t.Errorf("program has %d instructions", len(insts))
			}
			nr := func(name string) uint32 {
				n, ok := a.SyscallNames[name]
				if !ok {
					t.Fatalf("%s has no %s", a.Name, name)
				}
				return uint32(n)
			}
			native := uint32(a.ID)
			cases := []struct {
				name string
				nr   uint32
				args []uint64
				want uint32
			}{
				{"read", nr("read"), nil, retAllow},
				{"openat", nr("openat"), nil, retAllow},
				{"mmap", nr("mmap"), nil, retAllow},
				{"exit_group", nr("exit_group"), nil, retAllow},
				{"ptrace", nr("ptrace"), nil, retEPERM},
				{"mount", nr("mount"), nil, retEPERM},
				{"bpf", nr("bpf"), nil, retEPERM},
				{"io_uring_setup", nr("io_uring_setup"), nil, retEPERM},
				{"mknodat", nr("mknodat"), nil, retEPERM},
				{"unshare", nr("unshare"), nil, retEPERM},
				{"clone3", nr("clone3"), nil, retENOSYS},
				{"clone thread", nr("clone"), []uint64{unix.CLONE_VM | unix.CLONE_THREAD | unix.CLONE_FILES}, retAllow},
				{"clone newuser", nr("clone"), []uint64{unix.CLONE_NEWUSER}, retEPERM},
				{"clone newnet", nr("clone"), []uint64{unix.CLONE_NEWNET | uint64(unix.SIGCHLD)}, retEPERM},
				{"ioctl TCGETS", nr("ioctl"), []uint64{0, unix.TCGETS}, retAllow},
				{"ioctl TIOCSTI", nr("ioctl"), []uint64{0, unix.TIOCSTI}, retEPERM},
				{"ioctl TIOCLINUX", nr("ioctl"), []uint64{0, unix.TIOCLINUX}, retEPERM},
				{"unknown high number", 999, nil, retAllow},
			}
			// Every denied name the table knows is denied.
			for _, name := range deniedSyscalls {
				if n, ok := a.SyscallNames[name]; ok {
					cases = append(cases, struct {
						name string
						nr   uint32
						args []uint64
						want uint32
					}{name, uint32(n), nil, retEPERM})
				}
			}
			for _, c := range cases {
				if got := runFilter(t, insts, native, c.nr, c.args...); got != c.want {
					t.Errorf("%s (nr %d) = %#x, want %#x", c.name, c.nr, got, c.want)
				}
			}
			// Every other call number is allowed.
			denied := map[uint32]bool{nr("clone3"): true}
			for _, name := range deniedSyscalls {
				if n, ok := a.SyscallNames[name]; ok {
					denied[uint32(n)] = true
				}
			}
			for n := range uint32(500) {
				if !denied[n] && n != nr("clone") && n != nr("ioctl") {
					if got := runFilter(t, insts, native, n); got != retAllow {
						t.Errorf("nr %d (%s) = %#x, want allow", n, a.SyscallNumbers[int(n)], got)
					}
				}
			}
			foreign := uint32(arch.I386.ID)
			if a.ID == arch.AARCH64.ID {
				foreign = uint32(arch.ARM.ID)
			}
			if got := runFilter(t, insts, foreign, 1); got != retKill {
				t.Errorf("foreign ABI call = %#x, want kill", got)
			}
			if a.ID == arch.X86_64.ID {
				if got := runFilter(t, insts, native, x32SyscallBit|nr("read")); got != retKill {
					t.Errorf("x32 call = %#x, want kill", got)
				}
			}
		})
	}
}

func TestSeccompArchIsTheBuilds(t *testing.T) {
	want, ok := map[string]*arch.Info{"amd64": arch.X86_64, "arm64": arch.AARCH64}[runtime.GOARCH]
	if !ok {
		t.Skipf("no expectation for %s", runtime.GOARCH)
	}
	a, err := seccompArch()
	if err != nil {
		t.Fatal(err)
	}
	if a.ID != want.ID {
		t.Errorf("seccomp arch = %v, want %v", a.ID, want.ID)
	}
}
