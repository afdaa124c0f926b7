package proto

// MaxChildren is the largest fan-in a block accepts. The contributor
// bitmap is sized per job, so this is a sanity bound, not a storage limit
// (SwitchML's 32-bit bitmap stops at 32).
const MaxChildren = 1 << 16

// MaxBuffers bounds B for the multi-buffer design.
const MaxBuffers = 64
