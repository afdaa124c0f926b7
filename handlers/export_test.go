package handlers

import "github.com/flare-net/flare/wire"

// The tests of package handlers_test run the handlers through
// internal/harness, which imports handlers and so cannot serve the
// package's own tests; these names lend them the inputs, designs and
// references of the internal tests.
var (
	RandomInputs       = randomInputs
	RandomSparseInputs = randomSparseInputs
	TreeReference      = treeReference
	TreeCases          = treeCases
	SeededRand         = seededRand
	Designs            = designs
	SparseDesigns      = sparseDesigns
)

// TreeCase is an input of the tree reproducibility tests (dense_test.go).
type TreeCase = treeCase

// Index patterns and the race detector's scale (sparse_test.go).
const (
	PatRandom       = patRandom
	PatIdentical    = patIdentical
	PatDisjoint     = patDisjoint
	SparseTestScale = sparseTestScale
)

// Algo and B are a dense design's fields for a harness.Config.
func (d design) Algo() wire.Algo { return d.algo }
func (d design) B() int          { return d.b }

// Storage and B are a sparse design's fields for a harness.SparseConfig.
func (d sparseDesign) Storage() wire.Storage { return d.storage }
func (d sparseDesign) B() int                { return d.b }
