package sim

import "testing"

type tick struct {
	k    *Kernel
	left int
}

func (t *tick) OnEvent(now Time, _ uint64) {
	if t.left--; t.left > 0 {
		t.k.At(now+Nanosecond, t, 0)
	}
}

// TestProgressPublished: while observed, a kernel publishes its virtual
// time and event count every progressEvery events; otherwise nothing.
func TestProgressPublished(t *testing.T) {
	run := func() {
		k := NewKernel()
		h := &tick{k: k, left: 3*progressEvery + 10}
		k.At(0, h, 0)
		k.Run()
	}
	Observe(false)
	run()
	if now, ev := Progress(); now != 0 || ev != 0 {
		t.Errorf("not observed: progress %v, %d events", now, ev)
	}
	Observe(true)
	defer Observe(false)
	run()
	now, ev := Progress()
	if ev != 3*progressEvery || now != Time(3*progressEvery-1)*Nanosecond {
		t.Errorf("observed: progress %v, %d events; want %v, %d", now, ev, Time(3*progressEvery-1)*Nanosecond, 3*progressEvery)
	}
}
