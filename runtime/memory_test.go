package runtime

import (
	"strings"
	"testing"
)

func TestMemAvailableParse(t *testing.T) {
	in := "MemTotal:       24683548 kB\nMemFree:        23763756 kB\nMemAvailable:   24214588 kB\n"
	if v, ok := memAvailable(strings.NewReader(in)); !ok || v != 24214588*1024 {
		t.Fatalf("got %d, %v", v, ok)
	}
	for _, bad := range []string{"", "MemTotal: 5 kB\n", "MemAvailable: lots kB\n", "MemAvailable: -4 kB\n", "MemAvailable: 99999999999999999999 kB\n"} {
		if v, ok := memAvailable(strings.NewReader(bad)); ok {
			t.Errorf("%q: %d accepted", bad, v)
		}
	}
	if v, ok := parseCgroupBytes([]byte("max\n")); ok {
		t.Errorf("max parsed as %d", v)
	}
	if v, ok := parseCgroupBytes([]byte("2147483648\n")); !ok || v != 2<<30 {
		t.Errorf("2 GiB: %d %v", v, ok)
	}
}
