// Package nat applies the gateway's rendered nftables script (the ConfigMap
// key nat.nft) in the agent's network namespace, which is the gateway pod's.
//
// The script is loaded with `nft -f -`: nft runs a whole file as one netlink
// transaction, so the rules change atomically or not at all. The rendered
// script creates, deletes and redefines table ip ipsecgw and nothing else;
// Apply refuses a script whose top-level statements touch any other table,
// so tables of others in the namespace are never changed.
package nat

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"sync"

	"github.com/ipsecgw/provider-ipsec/internal/contract"
	"github.com/ipsecgw/provider-ipsec/internal/swanctl"
)

// A Runner runs the command name with args, stdin as its standard input,
// and returns its combined output.
type Runner func(ctx context.Context, stdin []byte, name string, args ...string) ([]byte, error)

// Exec is the Runner that starts the command with os/exec.
func Exec(ctx context.Context, stdin []byte, name string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, name, args...) //nolint:gosec // G204: the Runner runs the commands of this package (nft)
	cmd.Stdin = bytes.NewReader(stdin)
	return cmd.CombinedOutput()
}

// An Applier loads nftables scripts and skips a script identical to the
// last one it loaded successfully. It is safe for concurrent use.
type Applier struct {
	argv []string
	run  Runner

	mu      sync.Mutex
	last    [sha256.Size]byte
	applied bool
}

// An Option configures an Applier.
type Option func(*Applier)

// WithCommand sets the command that runs nft, before its -f - arguments;
// "nft" by default. Tests use it to run nft in another network namespace
// (nsenter --net=... nft).
func WithCommand(argv ...string) Option {
	return func(a *Applier) { a.argv = argv }
}

// WithRunner sets how the command is run; Exec by default.
func WithRunner(r Runner) Option {
	return func(a *Applier) { a.run = r }
}

// New returns an Applier.
func New(opts ...Option) *Applier {
	a := &Applier{argv: []string{"nft"}, run: Exec}
	for _, o := range opts {
		o(a)
	}
	return a
}

// Command returns the command and arguments that load a script given on
// standard input: the configured nft command followed by -f -.
func (a *Applier) Command() (name string, args []string) {
	args = append(append([]string{}, a.argv[1:]...), "-f", "-")
	return a.argv[0], args
}

// Apply loads script with one nft transaction unless it is the script last
// loaded successfully; applied says whether nft ran. A script that touches
// another table than ip ipsecgw is refused without running nft. nft's
// output is part of the error when it fails.
func (a *Applier) Apply(ctx context.Context, script []byte) (applied bool, err error) {
	if err := Check(script); err != nil {
		return false, err
	}
	sum := sha256.Sum256(script)
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.applied && sum == a.last {
		return false, nil
	}
	name, args := a.Command()
	if out, err := a.run(ctx, script, name, args...); err != nil {
		return false, fmt.Errorf("nft -f: %w: %s", err, strings.TrimSpace(string(out)))
	}
	a.last, a.applied = sum, true
	return true, nil
}

// Forget makes the next Apply load its script even when unchanged, for
// when the table may have been changed behind the Applier's back.
func (a *Applier) Forget() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.applied = false
}

// Check refuses a script whose top-level statements are anything but
// "table ip ipsecgw {", "delete table ip ipsecgw" and closing braces:
// no other table, no flush ruleset, no include. Comments and blank lines
// are allowed anywhere.
func Check(script []byte) error { //nolint:gocyclo // one case per kind of line the script may hold
	depth := 0
	for n, line := range strings.Split(string(script), "\n") {
		code, err := swanctl.StripComment(line)
		if err != nil {
			return fmt.Errorf("nat.nft line %d: %w", n+1, err)
		}
		code = strings.TrimSpace(code)
		if code == "" {
			continue
		}
		if depth == 0 {
			f := strings.Fields(code)
			switch {
			case len(f) == 4 && f[0] == "table" && f[1] == "ip" && f[2] == contract.NATTable && f[3] == "{":
			case len(f) == 3 && f[0] == "table" && f[1] == "ip" && f[2] == contract.NATTable+"{":
			case len(f) == 4 && f[0] == "delete" && f[1] == "table" && f[2] == "ip" && f[3] == contract.NATTable:
			default:
				return fmt.Errorf("nat.nft line %d: only table ip %s may be defined or deleted at the top level", n+1, contract.NATTable)
			}
		}
		depth += braces(code)
		if depth < 0 {
			return fmt.Errorf("nat.nft line %d: '}' closes nothing", n+1)
		}
	}
	if depth != 0 {
		return errors.New("nat.nft: a block is not closed")
	}
	return nil
}

// braces returns the number of '{' minus '}' outside double quotes.
func braces(code string) int {
	n, quoted := 0, false
	for i := 0; i < len(code); i++ {
		switch c := code[i]; {
		case c == '\\' && quoted:
			i++
		case c == '"':
			quoted = !quoted
		case c == '{' && !quoted:
			n++
		case c == '}' && !quoted:
			n--
		}
	}
	return n
}
