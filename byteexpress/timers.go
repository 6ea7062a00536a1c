package byteexpress

import "container/heap"

// ---- timer heap over engines ----

type timerHeap []*engine

func (h timerHeap) Len() int           { return len(h) }
func (h timerHeap) Less(i, j int) bool { return h[i].timerAt < h[j].timerAt }
func (h timerHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].heapIdx = i
	h[j].heapIdx = j
}
func (h *timerHeap) Push(x any) {
	e := x.(*engine)
	e.heapIdx = len(*h)
	*h = append(*h, e)
}
func (h *timerHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	e.heapIdx = -1
	return e
}

// update places e according to e.timerAt (Never: off the heap).
func (h *timerHeap) update(e *engine) {
	switch {
	case e.timerAt == Never && e.heapIdx >= 0:
		heap.Remove(h, e.heapIdx)
	case e.timerAt == Never:
	case e.heapIdx >= 0:
		heap.Fix(h, e.heapIdx)
	default:
		heap.Push(h, e)
	}
}

func (h *timerHeap) remove(e *engine) {
	if e.heapIdx >= 0 {
		heap.Remove(h, e.heapIdx)
	}
}
