package p

import (
	"testing"
	"time"
)

func TestSlow(t *testing.T) {
	t.Log("waiting")
	time.Sleep(300 * time.Millisecond)
}

func TestFast(t *testing.T) {}

func TestSkipped(t *testing.T) { t.Skip("not here") }

func TestFails(t *testing.T) {
	t.Run("Good", func(t *testing.T) { time.Sleep(100 * time.Millisecond) })
	t.Run("Bad", func(t *testing.T) {
		time.Sleep(100 * time.Millisecond)
		t.Error("went wrong")
	})
}
