package testbed

import (
	"strings"
	"testing"
)

// The token bucket never caps the rate: the burst holds a millisecond of
// it and several frames, the queue more than a socket's send buffer.
func TestTBFParams(t *testing.T) {
	for _, rate := range []float64{1e6, 100e6, 1e9, 10e9, 100e9} {
		burst, limit := tbfParams(rate, 9000)
		if burst < 4*9014 || float64(burst) < rate/8/1000 || limit < 4<<20 || limit < burst {
			t.Errorf("rate %s: burst %d, limit %d", FormatRate(rate), burst, limit)
		}
	}
}

// A loss rule's counter is found by its comment, the device; a chain
// without that device's counted rule is an error naming it.
func TestRuleCounter(t *testing.T) {
	const chain = `{"nftables": [{"metainfo": {"version": "1.0.6", "json_schema_version": 1}},
{"chain": {"family": "inet", "table": "flaretb", "name": "post", "handle": 1, "type": "filter", "hook": "postrouting", "prio": 0, "policy": "accept"}},
{"rule": {"family": "inet", "table": "flaretb", "chain": "post", "handle": 2, "comment": "h0", "expr": [{"match": {"op": "==", "left": {"meta": {"key": "oifname"}}, "right": "h0"}}, {"counter": {"packets": 17, "bytes": 17408}}, {"drop": null}]}},
{"rule": {"family": "inet", "table": "flaretb", "chain": "post", "handle": 3, "comment": "h1", "expr": [{"match": {"op": "==", "left": {"meta": {"key": "oifname"}}, "right": "h1"}}, {"counter": {"packets": 4, "bytes": 4096}}, {"drop": null}]}},
{"rule": {"family": "inet", "table": "flaretb", "chain": "post", "handle": 4, "comment": "h2", "expr": [{"drop": null}]}}]}`
	for dev, want := range map[string]int64{"h0": 17, "h1": 4} {
		if got, err := ruleCounter([]byte(chain), dev); got != want || err != nil {
			t.Errorf("%s: %d, %v, want %d", dev, got, err, want)
		}
	}
	for _, dev := range []string{"h2", "h3"} {
		if _, err := ruleCounter([]byte(chain), dev); err == nil || !strings.Contains(err.Error(), "no counted loss rule for "+dev) {
			t.Errorf("%s: %v, want no counted rule", dev, err)
		}
	}
	if _, err := ruleCounter([]byte("Error: No such file or directory"), "h0"); err == nil {
		t.Error("nft's error text read as a chain")
	}
}
