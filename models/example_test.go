package models_test

import (
	"fmt"

	"github.com/flare-net/flare/models"
)

// The four designs on the flare switch at 1 MiB per host.
func ExampleEvaluate() {
	p, err := models.Preset("flare")
	if err != nil {
		panic(err)
	}
	for _, d := range models.Designs() {
		r := models.Evaluate(p, d)
		fmt.Printf("%-6s tau %6.1f cycles  %6.1f Gbit/s  M %5.2f  R %7.0f buffers\n", r.Algo, r.Tau, r.Gbps, r.M, r.R)
	}
	// Output:
	// single tau 1024.0 cycles  4096.0 Gbit/s  M  1.00  R    1028 buffers
	// multi2 tau 1040.0 cycles  4033.0 Gbit/s  M  2.00  R    2072 buffers
	// multi4 tau 1072.0 cycles  3912.6 Gbit/s  M  4.00  R    4202 buffers
	// tree   tau 1008.0 cycles  4161.0 Gbit/s  M 10.50  R   11222 buffers
}

func ExampleChoosePaper() {
	for _, kib := range []int64{100, 200, 300, 600} {
		fmt.Println(kib, "KiB:", models.ChoosePaper(kib<<10, false))
	}
	fmt.Println("reproducible:", models.ChoosePaper(1<<20, true))
	// Output:
	// 100 KiB: tree
	// 200 KiB: multi2
	// 300 KiB: multi4
	// 600 KiB: single
	// reproducible: tree
}

// Four rings over 16 hosts whose union has diameter 2.
func ExampleSelectPermutations() {
	perms := models.SelectPermutations(16, 4, true)
	d, mean := models.PermStats(16, perms)
	fmt.Println(perms, d, fmt.Sprintf("%.2f", mean))
	fmt.Println(models.RingOrder(16, perms[1]))
	// Output:
	// [1 3 5 7] 2 1.47
	// [0 3 6 9 12 15 2 5 8 11 14 1 4 7 10 13]
}
