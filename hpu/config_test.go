package hpu

import (
	"strings"
	"testing"
)

// Each end of every range is allowed, and one past it refused.
func TestConfigLimitsAllowed(t *testing.T) {
	for _, edit := range []func(*Config){
		func(c *Config) { c.Clusters = 1 },
		func(c *Config) { c.Clusters = MaxClusters },
		func(c *Config) { c.CoresPerCluster, c.SubsetS = 1, 1 },
		func(c *Config) { c.CoresPerCluster, c.SubsetS = MaxCoresPerCluster, MaxCoresPerCluster },
		func(c *Config) { c.QueueDepth = 1 },
		func(c *Config) { c.QueueDepth = MaxQueueDepth },
		func(c *Config) { c.Submitters = 0 },
		func(c *Config) { c.Submitters = MaxSubmitters },
		func(c *Config) { c.BufferBytes = MinBufferBytes },
		func(c *Config) { c.BufferBytes = MaxBufferBytes },
		func(c *Config) { c.L1Bytes = MinL1Bytes },
		func(c *Config) { c.L1Bytes = MaxL1Bytes },
		func(c *Config) { c.BufferBytes, c.L1Bytes = 8192, 8192 },
	} {
		c := Config{}.WithDefaults()
		edit(&c)
		if err := c.Validate(); err != nil {
			t.Errorf("%+v: %v", c, err)
		}
	}
	for _, tc := range []struct {
		edit func(*Config)
		want string
	}{
		{func(c *Config) { c.Clusters = MaxClusters + 1 }, "clusters = 1025"},
		{func(c *Config) { c.CoresPerCluster = MaxCoresPerCluster + 1 }, "cores per cluster = 257"},
		{func(c *Config) { c.QueueDepth = 0 }, "queue depth = 0"},
		{func(c *Config) { c.QueueDepth = MaxQueueDepth + 1 }, "queue depth = 65537"},
		{func(c *Config) { c.SubsetS = 0 }, "policy S = 0"},
		{func(c *Config) { c.Submitters = MaxSubmitters + 1 }, "submitters = 1025"},
		{func(c *Config) { c.BufferBytes = MinBufferBytes - 8 }, "buffer size = 0 bytes"},
		{func(c *Config) { c.BufferBytes = MaxBufferBytes + 8 }, "buffer size = 65544 bytes"},
		{func(c *Config) { c.BufferBytes = 1020 }, "buffer size = 1020 bytes: must be a multiple of 8"},
		{func(c *Config) { c.L1Bytes = MinL1Bytes - 1 }, "L1 = 4095 bytes"},
		{func(c *Config) { c.BufferBytes, c.L1Bytes = 8192, 8184 }, "L1 = 8184 bytes: must hold at least one 8192-byte buffer"},
	} {
		c := Config{}.WithDefaults()
		tc.edit(&c)
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Validate() = %v, want %q", err, tc.want)
		}
	}
}
