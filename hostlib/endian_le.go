// The list of little-endian architectures is encoding/binary's, as in
// elem/kernel_le.go; endian_be.go covers every other one.

//go:build 386 || amd64 || amd64p32 || alpha || arm || arm64 || loong64 || mipsle || mips64le || mips64p32le || nios2 || ppc64le || riscv || riscv64 || sh || wasm

package hostlib

// nativeLittleEndian reports that a []T's memory already is its wire
// encoding, so AllReduce reduces the caller's slice in place.
const nativeLittleEndian = true
