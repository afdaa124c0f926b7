// Every architecture endian_le.go does not list: the big-endian ones, and
// any future one whose byte order this package has not been told, which is
// safe because the copying path is correct on either order.

//go:build !(386 || amd64 || amd64p32 || alpha || arm || arm64 || loong64 || mipsle || mips64le || mips64p32le || nios2 || ppc64le || riscv || riscv64 || sh || wasm)

package hostlib

// nativeLittleEndian reports that a []T's memory is not its wire encoding:
// AllReduce encodes the vector into a scratch buffer and decodes the result.
const nativeLittleEndian = false
