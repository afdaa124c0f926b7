// Package swtch is the Flare switch daemon (the folder is switch/; switch
// is a Go keyword). It owns the data port's readers and writers, one
// pair per socket (Config.Readers UDP sockets with batched I/O sharing one
// address with SO_REUSEPORT, or Config.Conn, Config.Conns), the job
// table and admission, the match rule that hands a packet to the
// processing unit, the egress that multicasts results, timeouts, metrics
// and graceful shutdown. It never touches an aggregation buffer: handlers
// do, on the processing unit.
//
//	sw, err := swtch.New(swtch.Config{Listen: "127.0.0.1:7470"})
//	err = sw.Run(ctx) // until ctx is cancelled; then drains and returns
package swtch
