package handlers

import "github.com/flare-net/flare/wire"

// sparseDown is one packet of the switch's stream as a host receives it.
type sparseDown struct {
	hdr     wire.Header
	payload []byte
}
