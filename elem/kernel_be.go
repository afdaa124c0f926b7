// Every architecture kernel_le.go does not list: the big-endian ones, and any
// future one whose byte order this package has not been told, which is safe
// because the portable path is correct on either order.

//go:build !(386 || amd64 || amd64p32 || alpha || arm || arm64 || loong64 || mipsle || mips64le || mips64p32le || nios2 || ppc64le || riscv || riscv64 || sh || wasm)

package elem

// nativeKernel is the kernel KernelFor hands out. The payload's elements are
// little-endian and this machine's are not, so the typed loop cannot run over
// the payload in place: every element is decoded, combined and encoded back.
func nativeKernel[T element](scalar func(a, b T) T, _ func(d, s []T)) Kernel {
	return portableKernel(scalar)
}
