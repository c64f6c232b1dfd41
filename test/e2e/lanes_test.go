//go:build e2e

package e2e

import (
	"cmp"
	"flag"
	"os"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"
)

// longestFirst orders the tests that bring up a stack by how long each
// takes (docs/testing.md's table): a lane takes the longest waiting test
// first, so that the last test to start is a short one: go test resumes
// its parallel tests in no set order, and the longest (TestLiveRunbook)
// was seen to start last.
var longestFirst = []string{
	"TestLiveRunbook", "TestActiveStandby", "TestRecoverProviderDeletion", "TestUninstall",
	"TestGitOps", "TestScale", "TestRunbook", "TestSiteCutover",
}

// arrivals is how long lanes waits after the first test asks for one
// before it gives out the first: go test lets its parallel tests go at
// once, and they all ask within milliseconds.
const arrivals = 200 * time.Millisecond

// stackLanes is the e2e's lanes: E2E_PARALLEL stacks at a time (1 when
// unset; make test-e2e gives 2), each about 3 GiB and a core's minute to
// bring up. go test's -parallel must let every test ask at once (make
// test-e2e gives 16): with fewer, go test chooses which tests ask first.
var stackLanes = newLanes(os.Getenv("E2E_PARALLEL"), longestFirst)

// lanes lets a fixed number of tests run at a time, the waiting test
// earliest in an order first (tests it does not name after those it does,
// by name).
type lanes struct {
	mu      sync.Mutex
	cond    *sync.Cond
	free    int
	order   []string
	waiting []string
	// open is set once the first test's arrivals window has passed.
	open bool
	// started is set when the first test asked.
	started bool
}

// newLanes returns lanes with n free (a number; 1 when empty or not a
// positive number) given out in order.
func newLanes(n string, order []string) *lanes {
	free, err := strconv.Atoi(n)
	if err != nil || free < 1 {
		free = 1
	}
	l := &lanes{free: free, order: order}
	l.cond = sync.NewCond(&l.mu)
	return l
}

// rank is where name stands in the order.
func (l *lanes) rank(name string) (int, string) {
	if i := slices.Index(l.order, name); i >= 0 {
		return i, ""
	}
	return len(l.order), name
}

// first is the waiting test that takes the next free lane.
func (l *lanes) first() string {
	return slices.MinFunc(l.waiting, func(a, b string) int {
		ra, na := l.rank(a)
		rb, nb := l.rank(b)
		if ra != rb {
			return ra - rb
		}
		return cmp.Compare(na, nb)
	})
}

// take makes t a parallel test, waits for a lane and gives it back when t
// has ended (after t's other cleanups: its stack's teardown).
func (l *lanes) take(t *testing.T) {
	t.Helper()
	t.Parallel()
	name := t.Name()
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.started {
		l.started = true
		time.AfterFunc(arrivals, func() {
			l.mu.Lock()
			l.open = true
			l.mu.Unlock()
			l.cond.Broadcast()
		})
	}
	l.waiting = append(l.waiting, name)
	asked := time.Now()
	for !l.open || l.free == 0 || l.first() != name {
		l.cond.Wait()
	}
	// go test's seconds for t count from here back to t.Parallel.
	t.Logf("waited %s for a lane", time.Since(asked).Round(time.Second))
	l.waiting = slices.DeleteFunc(l.waiting, func(w string) bool { return w == name })
	l.free--
	// Registered first, so run last.
	t.Cleanup(func() {
		l.mu.Lock()
		l.free++
		l.mu.Unlock()
		l.cond.Broadcast()
	})
	// The next in line may be waiting for this one to leave the queue.
	l.cond.Broadcast()
}

// TestLanesLongestFirst: one lane goes to the waiting tests in the
// order's turn, those it does not name last.
func TestLanesLongestFirst(t *testing.T) {
	// go test lets -parallel tests past t.Parallel (GOMAXPROCS when
	// unset): with fewer than the three, it chooses who asks for a lane.
	if p, _ := strconv.Atoi(flag.Lookup("test.parallel").Value.String()); p < 3 {
		t.Skipf("-parallel %d: the lanes' order needs go test to let the three subtests go at once (-parallel 3 or more; make test-e2e gives 16)", p)
	}
	group := t.Name() + "/group/"
	l := newLanes("1", []string{group + "b", group + "a"})
	var (
		mu  sync.Mutex
		got []string
	)
	t.Run("group", func(t *testing.T) {
		for _, n := range []string{"a", "b", "c"} {
			t.Run(n, func(t *testing.T) {
				l.take(t)
				mu.Lock()
				got = append(got, n)
				mu.Unlock()
				time.Sleep(10 * time.Millisecond)
			})
		}
	})
	if want := []string{"b", "a", "c"}; !slices.Equal(got, want) {
		t.Errorf("the lane went to %v, want %v", got, want)
	}
}
