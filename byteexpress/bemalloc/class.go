package bemalloc

import "math/bits"

// Size classes (rpmalloc/jemalloc style): 16-byte steps up to 128 bytes
// (classes 0..7), then four classes per power of two, so a request above
// 128 bytes loses under 25% to rounding:
//
//	16 32 48 64 80 96 112 128 | 160 192 224 256 | 320 384 448 512 | ...
//	... | 20K 24K 28K 32K
//
// The largest class is SpanSize/2 (32 KiB for the default 64 KiB span), so
// every class span holds at least two slots. Larger requests are runs of
// whole spans (64 KiB granularity) inside one block; requests above
// BlockSize get a dedicated run of whole blocks.
const (
	linearClasses = 8   // 16..128 in 16-byte steps
	linearMax     = 128 // largest linearly spaced class
)

// classOf returns the size class for 1 <= size <= SpanSize/2.
func classOf(size int) int {
	if size <= linearMax {
		return (size - 1) >> 4
	}
	// With s = size-1 and b its top bit (2^b <= s < 2^(b+1), b >= 7),
	// the class is the first of its power of two, linearClasses +
	// 4(b-7), plus the two bits of s below the top one, (s >> (b-2)) - 4:
	// one bit scan and one shift (the mask spares the compiler's code for
	// shifts of 64 or more).
	s := uint(size - 1)
	b := bits.Len(s) - 1
	return 4*b - 24 + int(s>>(uint(b-2)&63))
}

// classSize is the slot size of class c.
func classSize(c int) int {
	if c < linearClasses {
		return (c + 1) << 4
	}
	j := c - linearClasses
	k := 8 + j/4
	return 1<<(k-1) + (j%4+1)<<(k-3)
}

// numClasses is the number of classes for spans of 2^spanShift bytes (the
// largest class is half a span).
func numClasses(spanShift uint) int {
	return linearClasses + 4*(int(spanShift)-8)
}

// divMagic returns ceil(2^64/d): for any 32-bit n, n/d is the high word of
// n*magic (Lemire, Kaser and Kurz, "Faster remainder by direct computation",
// 2019), which turns the slot-index division on the free path into one
// multiply.
func divMagic(d uint64) uint64 { return ^uint64(0)/d + 1 }
