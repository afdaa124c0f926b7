// Package conn is the socket layer of the switch daemon and the host
// library, as wireguard-go's conn is WireGuard's: a UDP socket seen as a
// batch Conn that receives N datagrams into caller-owned buffers and sends
// N in one call. On Linux, ListenUDP uses recvmmsg/sendmmsg with UDP GSO
// and GRO where the kernel has them; elsewhere one datagram per call.
// ListenUDPGroup opens several such sockets on one address with
// SO_REUSEPORT, the kernel steering each datagram to one of them by a key
// in its payload (a cBPF program) or by its sender, so that a daemon can
// read and write on as many CPUs. MemNetwork is the same interface
// without sockets, with faults (drop, duplicate, reorder, delay) and
// groups, for tests and benchmarks.
//
//	c, err := conn.ListenUDP("127.0.0.1:0", conn.Config{})
//	msgs := make([]conn.Datagram, c.BatchSize()) // each with a Buf of conn.DefaultMaxDatagram bytes
//	n, err := c.ReadBatch(msgs)                    // msgs[:n] hold datagrams and their senders
//	_, err = c.WriteBatch(msgs[:n])                // and send them back
package conn
