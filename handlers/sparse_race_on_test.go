//go:build race

package handlers

// sparseTestScale shrinks the sparse property tests' vectors under the race
// detector, which makes every memory access several times slower.
const sparseTestScale = 4
