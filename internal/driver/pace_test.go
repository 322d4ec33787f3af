package driver

import (
	"sync"
	"testing"
	"time"

	"github.com/iolab/iolab/internal/metrics"
)

// A thousand workers due within the same 2 ms all wake after their time,
// every one: at most maxPreciseSleepers hold a thread in the kernel's
// sleep, the others wait on Go's timers, and none is left counted. (Not
// parallel: the count is the package's, which other tests' sleeps share.)
func TestSleepUntilManySleepers(t *testing.T) {
	clock := metrics.NewClock()
	var stop Stop
	var wg sync.WaitGroup
	early := make(chan int64, 1000)
	for i := range 1000 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			due := clock.Now() + int64(time.Millisecond) + int64(i%7)*int64(100*time.Microsecond)
			SleepUntil(clock, due, &stop)
			if now := clock.Now(); now < due {
				early <- due - now
			}
		}()
	}
	wg.Wait()
	close(early)
	for d := range early {
		t.Errorf("woke %v before its time", time.Duration(d))
	}
	if n := preciseSleepers.Load(); n != 0 {
		t.Errorf("%d sleepers still counted", n)
	}
}
