package bemalloc

import "syscall"

// advise asks for transparent huge pages over m's usable range when huge
// (Config.HugePages). The advice is a hint: a kernel without THP, or with
// THP off, refuses or ignores it and the mapping works the same with 4 KiB
// pages, so a failure is not the pool's error.
func advise(m mapping, huge bool) mapping {
	if huge {
		off := m.addr - sliceAddr(m.raw)
		_ = syscall.Madvise(m.raw[off:off+m.size], syscall.MADV_HUGEPAGE)
	}
	return m
}
