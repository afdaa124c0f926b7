//go:build !race

package handlers

// sparseTestScale shrinks the sparse property tests' vectors under the race
// detector; without it they run at full size.
const sparseTestScale = 1
