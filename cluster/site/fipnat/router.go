package main

import (
	"context"
	"fmt"
	"log/slog"
	"os/exec"
	"strings"
	"time"
)

// A router applies the floating IPs' mappings in its network namespace.
type router struct {
	// netns is the path of the router's network namespace.
	netns string
	// tenant and external are the interfaces of the tenant and the
	// external network.
	tenant, external string
	log              *slog.Logger
	// applied is the mapping in place, keyed by floating IP; nil before
	// the first apply.
	applied map[string]mapping
}

// loop reads the mappings with list every interval and applies their
// changes until ctx ends. A failed read is logged once until a read
// succeeds again, and leaves the rules as they are, as the L3 agent does
// while the server is away; a failed apply ends the loop.
func (r *router) loop(ctx context.Context, list func(context.Context) (map[string]mapping, error), interval time.Duration) error {
	failing := false
	for {
		m, err := list(ctx)
		switch {
		case ctx.Err() != nil:
			return nil //nolint:nilerr // ctx ended: the loop is done, not failed
		case err != nil && !failing:
			r.log.Warn("cannot read the floating IPs; keeping the rules", "error", err)
			failing = true
		case err == nil:
			if failing {
				r.log.Info("reading the floating IPs again")
				failing = false
			}
			if err := r.apply(m); err != nil {
				return err
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(interval):
		}
	}
}

// apply replaces the table when m differs from what is applied, then
// deletes the conntrack entries of every changed mapping and logs each.
func (r *router) apply(m map[string]mapping) error {
	changes := diff(r.applied, m)
	if r.applied != nil && len(changes) == 0 {
		return nil
	}
	cmd := r.command("nft", "-f", "-")
	cmd.Stdin = strings.NewReader(ruleset(m, r.tenant, r.external))
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("nft -f: %w: %s", err, out)
	}
	if r.applied == nil {
		r.log.Info("rules in place", "mappings", len(m))
	}
	r.applied = m
	for _, c := range changes {
		for _, a := range []string{c.FloatingIP, c.Old.FixedIP, c.New.FixedIP} {
			if err := r.forget(a); err != nil {
				return err
			}
		}
		if c.New.FixedIP == "" {
			r.log.Info("unmapped", "floating_ip", c.FloatingIP, "previous", c.Old.FixedIP)
			continue
		}
		r.log.Info("mapped", "floating_ip", c.FloatingIP, "fixed_ip", c.New.FixedIP, "port_id", c.New.PortID, "previous", c.Old.FixedIP)
	}
	return nil
}

// forget deletes the conntrack entries with address a as original source
// or destination or as reply destination (the SNATed side); nothing when a
// is empty.
func (r *router) forget(a string) error {
	if a == "" {
		return nil
	}
	for _, dir := range []string{"--orig-src", "--orig-dst", "--reply-dst"} {
		out, err := r.command("conntrack", "-D", dir, a).CombinedOutput()
		// conntrack exits 1 when there was nothing to delete.
		if err != nil && !strings.Contains(string(out), "flow entries have been deleted") {
			return fmt.Errorf("conntrack -D %s %s: %w: %s", dir, a, err, out)
		}
	}
	return nil
}

// command returns a command running args in the router's namespace.
func (r *router) command(args ...string) *exec.Cmd {
	return exec.Command("nsenter", append([]string{"--net=" + r.netns, "--"}, args...)...)
}
