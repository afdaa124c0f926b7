package hpu

// How handlers on different cores meet in virtual time: the VirtualUnit
// hooks behind Task.Charge, Task.Lock, Task.TryLock and Task.Unlock.

// sync runs after the handler charged cycles: what it did so far happened at
// the current cycle; if another event is due before the handler's new
// cycle, the core yields and is resumed when the clock gets there.
func (c *vcore) sync() {
	u := c.u
	u.observeMem()
	now := c.task.now
	if u.events.len() > 0 && u.events.min().at < now {
		u.push(event{at: now, core: c})
		c.suspend()
		return
	}
	u.setClock(now)
}

// lock takes l, or spins until it is released (see VirtualUnit).
func (c *vcore) lock(l *Lock) {
	if l.freeAt != lockHeld {
		l.freeAt = lockHeld
		return
	}
	u, t := c.u, c.task
	u.observeMem()
	c.lockWant, c.lockFrom = l, t.now
	for l.freeAt == lockHeld {
		u.parked = append(u.parked, c)
		c.suspend() // unlock schedules this core at its next poll; t.now is that cycle
	}
	l.freeAt = lockHeld
	c.lockWant = nil
	wait := t.now - c.lockFrom
	t.cycles += wait
	t.waitCyc += wait
	t.contends++
}

func (c *vcore) tryLock(l *Lock) bool {
	if l.freeAt == lockHeld {
		return false
	}
	l.freeAt = lockHeld
	return true
}

// unlock releases l now and schedules every core spinning on it at its
// first poll from now on; the earliest takes it, the others spin on.
func (c *vcore) unlock(l *Lock) {
	u := c.u
	now := c.task.now
	l.freeAt = now
	b := u.cfg.Cost.LockBackoff
	kept := u.parked[:0]
	for _, w := range u.parked {
		if w.lockWant != l {
			kept = append(kept, w)
			continue
		}
		at := now
		if b > 0 {
			polls := max(1, (now-w.lockFrom+b-1)/b)
			at = w.lockFrom + polls*b
		}
		w.task.now = at
		u.push(event{at: at, core: w})
	}
	clear(u.parked[len(kept):])
	u.parked = kept
}
