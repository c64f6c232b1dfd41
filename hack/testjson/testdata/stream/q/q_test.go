package q

import "testing"

func TestBroken(t *testing.T) { undefined() }
