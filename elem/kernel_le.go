// The list of little-endian architectures is encoding/binary's
// (native_endian_little.go); kernel_be.go covers every other one.

//go:build 386 || amd64 || amd64p32 || alpha || arm || arm64 || loong64 || mipsle || mips64le || mips64p32le || nios2 || ppc64le || riscv || riscv64 || sh || wasm

package elem

// nativeKernel is the kernel KernelFor hands out. On a little-endian machine
// the payload's bytes already are the elements in memory order, so the
// payload is viewed in place as a []T and run through the typed loop: no
// decoding, and a loop the compiler compiles like hand-written code.
//
// The view needs the payload aligned to T. The switch's payloads always are
// (they start 32 bytes into 8-byte aligned buffers), but a caller's slice may
// not be, and several of these architectures trap or crawl on misaligned
// loads, so such a payload takes the portable path instead.
func nativeKernel[T element](scalar func(a, b T) T, loop func(d, s []T)) Kernel {
	size := sizeOf[T]()
	slow := portableKernel(scalar)
	return func(dst, src []byte) {
		checkLengths(dst, src, size)
		if !aligned[T](dst) || !aligned[T](src) {
			slow(dst, src)
			return
		}
		loop(reinterpret[T](dst), reinterpret[T](src))
	}
}
