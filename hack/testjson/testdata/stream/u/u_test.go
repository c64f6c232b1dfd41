package u

import "testing"

func TestPasses(t *testing.T) {
	t.Log("only with -v")
	t.Run("Sub", func(t *testing.T) {})
}
