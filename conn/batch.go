package conn

// Batch is one receive's datagrams with the memory they are read into: a
// buffer per datagram or, where the conn lends (Lender), a region the
// datagrams are lent from, which spares the copy out of the conn's
// memory under GRO.
type Batch struct {
	Msgs   []Datagram
	c      Conn
	rr     RegionReader // c, where it lends
	region []byte
}

// NewBatch returns a batch for receiving from c: where c lends, a region
// for k coalesced messages and room for all their datagrams; otherwise
// c.BatchSize() buffers of maxDatagram bytes.
func NewBatch(c Conn, k, maxDatagram int) *Batch {
	b := &Batch{c: c, rr: Lender(c)}
	if b.rr != nil {
		b.region, b.Msgs = NewRegion(k)
		return b
	}
	n := c.BatchSize()
	b.Msgs = make([]Datagram, n)
	backing := make([]byte, n*maxDatagram)
	for i := range b.Msgs {
		b.Msgs[i].Buf = backing[i*maxDatagram : (i+1)*maxDatagram : (i+1)*maxDatagram]
	}
	return b
}

// Read receives into the batch and returns how many of Msgs hold a
// datagram. Lent datagrams stay valid until the next Read.
func (b *Batch) Read() (int, error) {
	if b.rr != nil {
		return b.rr.ReadInto(b.region, b.Msgs)
	}
	return b.c.ReadBatch(b.Msgs)
}
