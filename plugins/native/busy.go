package native

import (
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// busySample is how long busyCores watches the machine: a few scheduler
// ticks (USER_HZ is 100 on Linux), long enough to tell a core another
// program keeps busy from an idle one.
const busySample = 40 * time.Millisecond

// busyCache keeps the last sample a while: the partitioner's cost model
// and every partition's compile ask in quick succession.
var busyCache struct {
	mu   sync.Mutex
	at   time.Time
	busy float64
	ok   bool
}

// busyCores is how many cores other programs keep busy right now (from
// /proc/stat over busySample, this goroutine asleep meanwhile), and
// whether it could be read (Linux only). Unlike the load average (a
// minute's mean, which counts this process's own last runs and whatever
// ran a minute ago), it sees the machine as the executable will meet it.
func busyCores() (float64, bool) {
	busyCache.mu.Lock()
	defer busyCache.mu.Unlock()
	if !busyCache.at.IsZero() && time.Since(busyCache.at) < time.Second {
		return busyCache.busy, busyCache.ok
	}
	b0, t0, ok0 := cpuTicks()
	time.Sleep(busySample)
	b1, t1, ok1 := cpuTicks()
	busyCache.at, busyCache.ok = time.Now(), ok0 && ok1 && t1 > t0
	busyCache.busy = 0
	if busyCache.ok {
		busyCache.busy = float64(b1-b0) / float64(t1-t0) * float64(cpuCount())
	}
	return busyCache.busy, busyCache.ok
}

// cpuCount is the number of CPUs /proc/stat sums over (its per-CPU
// lines), read once.
var cpuCount = sync.OnceValue(func() int {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 1
	}
	c := 0
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "cpu") && len(l) > 3 && l[3] >= '0' && l[3] <= '9' {
			c++
		}
	}
	return max(c, 1)
})

// cpuTicks reads the busy and total ticks of all CPUs from /proc/stat
// (busy: all but idle and iowait).
func cpuTicks() (busy, total uint64, ok bool) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0, false
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 5 || f[0] != "cpu" {
		return 0, 0, false
	}
	for i, s := range f[1:] {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			return 0, 0, false
		}
		if i >= 8 { // guest time is already counted in user
			break
		}
		total += v
		if i != 3 && i != 4 {
			busy += v
		}
	}
	return busy, total, true
}
