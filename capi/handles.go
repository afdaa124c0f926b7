package main

// #include "flare.h"
import "C"

import (
	"fmt"
	"runtime/cgo"
	"sync"

	"github.com/flare-net/flare/hostlib"
)

// session is what a handle refers to: the hostlib session and the options
// it joined with, which the C calls check their arguments against.
type session struct {
	s    *hostlib.Session
	opts hostlib.Options
}

// live is the set of handles not yet closed. cgo.Handle.Value panics on a
// handle that was deleted, and a C caller may well pass one (a double
// close, a stale copy), so every handle is checked here first: a bad one
// is an error, not a crash.
var live = struct {
	sync.Mutex
	m map[cgo.Handle]bool
}{m: map[cgo.Handle]bool{}}

// register makes a handle for s.
func register(s *session) C.flare_session {
	h := cgo.NewHandle(s)
	live.Lock()
	live.m[h] = true
	live.Unlock()
	return C.flare_session(h)
}

// lookup returns the session of handle h, or sets the error and returns
// the code to return.
func lookup(h C.flare_session) (*session, C.int) {
	live.Lock()
	defer live.Unlock()
	ch := cgo.Handle(h)
	if !live.m[ch] {
		return nil, fail(C.FLARE_EHANDLE, fmt.Errorf("session handle %d: not a live session (closed, or never returned by flare_join)", uint64(h)))
	}
	return ch.Value().(*session), C.FLARE_OK
}

// unregister removes handle h and returns its session, so that exactly one
// flare_close gets it.
func unregister(h C.flare_session) (*session, C.int) {
	live.Lock()
	defer live.Unlock()
	ch := cgo.Handle(h)
	if !live.m[ch] {
		return nil, fail(C.FLARE_EHANDLE, fmt.Errorf("session handle %d: not a live session (closed already, or never returned by flare_join)", uint64(h)))
	}
	delete(live.m, ch)
	s := ch.Value().(*session)
	ch.Delete()
	return s, C.FLARE_OK
}
