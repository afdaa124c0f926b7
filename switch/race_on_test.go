//go:build race

package swtch_test

const raceEnabled = true
