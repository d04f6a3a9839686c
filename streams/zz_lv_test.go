package streams
import ("testing";"fmt")
func TestPrintLevels(t *testing.T) {
	for _, c := range []int64{1000, 50000, 200000, 1000000, 10000000} {
		lv := bloomLevels(c, 0.01)
		fmt.Println(c)
		for i, l := range lv[:4] { fmt.Printf("  %d %+v alloc=%d B/url=%.3f\n", i, l, jemallocSize(l.Bytes+sdsOverhead(l.Bytes))*int64(l.Parts), float64(jemallocSize(l.Bytes+sdsOverhead(l.Bytes))*int64(l.Parts))/float64(l.Cap)) }
		r, d := bloomExpected(lv, c); fmt.Printf("  at cap: rate %.4f%% dropped %.0f (%.3f%%)\n", r*100, d, d/float64(c)*100)
		r, d = bloomExpected(lv, 3*c); fmt.Printf("  at 3cap: rate %.4f%% dropped %.0f (%.3f%%)\n", r*100, d, d/float64(3*c)*100)
	}
	fmt.Println(exactBucketBits(1000000, 512), exactBucketBits(10000000, 512), exactBucketBits(1000000, 128), exactFill(512), exactFill(128))
}
